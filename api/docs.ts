// GET /docs: Swagger UI from the npm package swagger-ui-dist, served from this process (no CDN), reading
// /openapi.json. The page's script is a file, not inline, so the Content-Security-Policy can forbid inline
// scripts.
import { createRequire } from 'node:module';
import path from 'node:path';
import express, { Router } from 'express';

// Resolving package.json instead of importing the package keeps its 1 MB bundle out of the server's memory
// and startup: the bundle is only ever sent to browsers.
const swaggerUiDirectory = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>svc developer API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// validatorUrl null keeps the page from calling an online validator.
const init = `window.ui = SwaggerUIBundle({
  url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout',
});
`;

const contentSecurityPolicy =
  "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
  "script-src 'self'; connect-src 'self'; frame-ancestors 'none'";

export function docsRoutes(): Router {
  const router = Router();
  router.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', contentSecurityPolicy);
    res.type('html').send(page);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(init);
  });
  router.use('/docs/assets', express.static(swaggerUiDirectory, { index: false, fallthrough: false, maxAge: '1h' }));
  return router;
}
