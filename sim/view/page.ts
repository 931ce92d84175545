// viewPage: the trace viewer as one static HTML file: the ViewModel embedded as
// JSON, the page script (client.js) and the styles inline, so it opens from disk
// with no server and loads nothing from anywhere else.
import { readFileSync } from 'node:fs';
import type { ViewModel } from './model.js';

const clientScript = readFileSync(new URL('./client.js', import.meta.url), 'utf8');

/** embedJson makes JSON safe inside a <script> element: no `</script>` or `<!--` can appear. */
function embedJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

export function viewPage(model: ViewModel): string {
  const failure = model.failure;
  const verdict = failure
    ? `<span class="bad">FAILED</span> <b id="violation-name" data-invariant="${escapeHtml(failure.invariant)}">${escapeHtml(failure.invariant)}</b>` +
      ` on ${failure.node >= 0 ? escapeHtml(model.nodes[failure.node] ?? `n${failure.node + 1}`) : 'the cluster'}` +
      ` at tick ${Math.floor(failure.atUs / model.tickUs)} (${(failure.atUs / 1_000).toFixed(1)} ms, event ${failure.event})`
    : `<span class="good">${escapeHtml(model.result)}</span>`;
  const seed = model.seed === null ? '' : ` seed ${model.seed}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>svc sim${escapeHtml(seed)}: ${escapeHtml(failure ? `fail ${failure.invariant}` : model.result)}</title>
<style>
  body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
  header { padding: 8px 12px; background: #fff; border-bottom: 1px solid #ddd; display: flex; flex-wrap: wrap; gap: 12px; align-items: center; }
  header h1 { font-size: 15px; margin: 0; }
  .bad { color: #c92a2a; font-weight: bold; }
  .good { color: #2b8a3e; font-weight: bold; }
  button { font: inherit; padding: 2px 8px; }
  #range { color: #555; font-variant-numeric: tabular-nums; }
  #filters { padding: 6px 12px; background: #fff; border-bottom: 1px solid #ddd; display: flex; flex-wrap: wrap; gap: 16px; }
  #filters fieldset { border: 1px solid #ddd; padding: 2px 8px; margin: 0; }
  #filters label { margin-right: 8px; white-space: nowrap; }
  .swatch { display: inline-block; width: 10px; height: 10px; margin: 0 3px; vertical-align: middle; border: 1px solid #0002; }
  #legend span { margin-right: 8px; white-space: nowrap; }
  main { display: flex; align-items: flex-start; }
  #lane-labels { position: relative; width: 44px; flex: none; }
  .lane { position: absolute; left: 6px; font-weight: bold; }
  #diagram-wrap { position: relative; flex: 1; min-width: 0; overflow: hidden; cursor: crosshair; }
  #diagram { display: block; }
  #violation-marker { position: absolute; display: none; background: #e03131; color: #fff; border-radius: 3px; padding: 0 4px;
    font-size: 11px; font-weight: bold; cursor: pointer; white-space: nowrap; box-shadow: 0 0 0 2px #fff; }
  #violation-marker.offscreen { opacity: 0.6; }
  #detail { padding: 8px 12px; border-top: 1px solid #ddd; background: #fff; min-height: 90px; }
  #detail h3 { margin: 0 0 4px; font-size: 14px; }
  #detail p { margin: 2px 0; }
  #detail ul { margin: 4px 0; padding-left: 18px; max-height: 220px; overflow: auto; }
  .hint { color: #777; }
  code { font-size: 12px; }
</style>
</head>
<body>
<header>
  <h1>svc sim${escapeHtml(seed)}</h1>
  <span id="verdict">${verdict}</span>
  <span>${model.nodes.length} nodes · ${model.events} events · ${model.messages.length} messages${model.linked ? '' : ' (file has no view notes: no arrows)'}</span>
  <span>
    <button id="zoom-in" title="zoom in">+</button>
    <button id="zoom-out" title="zoom out">−</button>
    <button id="zoom-fit">whole run</button>
    <button id="zoom-violation">violation</button>
  </span>
  <span id="range"></span>
</header>
<div id="filters">
  <fieldset id="filter-nodes"><legend>nodes</legend></fieldset>
  <fieldset id="filter-kinds"><legend>messages</legend></fieldset>
  <fieldset id="filter-faults"><legend>faults</legend></fieldset>
  <fieldset id="legend"><legend>roles</legend></fieldset>
</div>
<main>
  <div id="lane-labels"></div>
  <div id="diagram-wrap">
    <canvas id="diagram"></canvas>
    ${failure ? `<div id="violation-marker" class="violation" data-invariant="${escapeHtml(failure.invariant)}" title="${escapeHtml(failure.message)}">✖ ${escapeHtml(failure.invariant)}</div>` : '<div id="violation-marker"></div>'}
  </div>
</main>
<section id="detail">${failure ? `<h3 class="bad">${escapeHtml(failure.invariant)}</h3><p><code>${escapeHtml(failure.message)}</code></p>` : '<p class="hint">Hover or click an arrow, a lane or a fault band. Wheel zooms, drag pans.</p>'}</section>
<script id="view-data" type="application/json">${embedJson(model)}</script>
<script>
${clientScript}
</script>
</body>
</html>
`;
}
