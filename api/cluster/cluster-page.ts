// The /cluster page. A browser's navigation to GET /cluster (its Accept prefers text/html) gets a static page
// that holds no cluster data, like the album page: the page asks for an admin key, keeps it in the tab's
// sessionStorage and sends it in X-API-Key to GET /cluster/events, so the key never travels in a URL. Any other
// GET /cluster (a JSON client, curl) goes on to the keyed route (cluster-routes.ts), which refuses a missing or
// non-admin key. The script and style are /cluster-view/*; a strict Content-Security-Policy lets the page load
// them and talk to this origin only.
import { readFileSync } from 'node:fs';
import { Router } from 'express';
import { appFile } from '../../layout/app-files.js';
import { pageKitScript } from '../view-kit/assets.js';

const asset = (name: string) => readFileSync(appFile(`api/cluster/view/${name}`), 'utf8');

export const clusterPageCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const pageHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Cluster</title>
<link rel="stylesheet" href="/cluster-view/cluster-view.css">
</head>
<body>
<h1>Cluster <span id="answered-by"></span></h1>
<p class="status" id="status" role="status"></p>
<form class="key hidden" id="key-form" autocomplete="off">
  <label for="key-input">Admin API key</label>
  <input id="key-input" type="password" placeholder="svc_…" spellcheck="false">
  <button type="submit">View cluster</button>
</form>
<main id="cluster" class="hidden">
  <p class="summary">Leader: <strong id="leader" data-leader-id="0">none known</strong>
    · term <span id="term">–</span> · membership <span id="membership-version">–</span>
    · view of <span id="view-at">–</span>
    · <button type="button" id="forget-key">Forget key</button></p>
  <table id="members">
    <thead><tr>
      <th>Member</th><th>Role</th><th>Term</th><th>Commit</th><th>Applied</th><th>Apply lag</th><th>Match lag</th>
      <th>Ready</th><th>Version</th><th>Figures</th>
    </tr></thead>
    <tbody id="member-rows"></tbody>
  </table>
  <h2>Recent events <small id="event-count"></small></h2>
  <ol id="events" reversed></ol>
</main>
<script src="/cluster-view/page-kit.js"></script>
<script src="/cluster-view/cluster-view.js"></script>
</body>
</html>
`;

/** wantsPage: a browser navigation (Accept names text/html before JSON), not an API client. */
function wantsPage(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const html = accept.indexOf('text/html');
  const json = accept.indexOf('application/json');
  return html >= 0 && (json < 0 || html < json);
}

export function clusterPageRoutes(): Router {
  const router = Router();
  const script = asset('cluster-view.js');
  const style = asset('cluster-view.css');

  router.get('/cluster', (req, res, next) => {
    res.setHeader('Vary', 'Accept');
    if (!wantsPage(req.headers.accept)) {
      next();
      return;
    }
    res.setHeader('Content-Security-Policy', clusterPageCsp);
    res.type('html').send(pageHtml);
  });
  router.get('/cluster-view/page-kit.js', (_req, res) => {
    res.type('text/javascript').send(pageKitScript());
  });
  router.get('/cluster-view/cluster-view.js', (_req, res) => {
    res.type('text/javascript').send(script);
  });
  router.get('/cluster-view/cluster-view.css', (_req, res) => {
    res.type('text/css').send(style);
  });
  return router;
}
