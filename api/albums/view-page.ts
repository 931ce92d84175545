// The album page: GET /albums/{id}/view serves a small HTML page, and /album-view/* its script and style.
// They are public (mounted before authentication) because they hold no album data: the page asks for the
// API key, keeps it in the tab's sessionStorage and sends it in X-API-Key on every call, so the key never
// travels in a URL (which ends up in logs, history and Referer headers). A strict Content-Security-Policy
// lets the page load its own script and style and talk to this origin only.
import { readFileSync } from 'node:fs';
import { Router } from 'express';
import { appFile } from '../../layout/app-files.js';
import { pageKitScript } from '../view-kit/assets.js';
import { ApiError } from '../errors.js';

const albumIdPattern = /^[a-z]{3}_[0-9a-z]{9}[0-9a-f]{16}$/;
const asset = (name: string) => readFileSync(appFile(`api/albums/view/${name}`), 'utf8');

export const albumPageCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob:",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

function pageHtml(albumId: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Album ${albumId}</title>
<link rel="stylesheet" href="/album-view/album-view.css">
</head>
<body data-album-id="${albumId}">
<h1 id="title">Album ${albumId}</h1>
<p class="subject" id="subject"></p>
<p class="status" id="status" role="status"></p>
<form class="key hidden" id="key-form" autocomplete="off">
  <label for="key-input">API key</label>
  <input id="key-input" type="password" placeholder="svc_…" spellcheck="false">
  <button type="submit">View album</button>
</form>
<main id="album" class="hidden">
  <p class="status"><span id="counts"></span> · last event: <span id="last-event">none yet</span>
    · <button type="button" id="forget-key">Forget key</button></p>
  <div class="layout">
    <section id="anchor-slot"></section>
    <section class="shots" id="shots"></section>
  </div>
</main>
<script src="/album-view/page-kit.js"></script>
<script src="/album-view/album-view.js"></script>
</body>
</html>
`;
}

export function albumPageRoutes(): Router {
  const router = Router();
  const script = asset('album-view.js');
  const style = asset('album-view.css');

  router.get('/albums/:id/view', (req, res) => {
    const albumId = req.params.id as string;
    if (!albumIdPattern.test(albumId)) throw new ApiError('NOT_FOUND', 'no such album page');
    res.setHeader('Content-Security-Policy', albumPageCsp);
    res.type('html').send(pageHtml(albumId));
  });
  router.get('/album-view/page-kit.js', (_req, res) => {
    res.type('text/javascript').send(pageKitScript());
  });
  router.get('/album-view/album-view.js', (_req, res) => {
    res.type('text/javascript').send(script);
  });
  router.get('/album-view/album-view.css', (_req, res) => {
    res.type('text/css').send(style);
  });
  return router;
}
