// writeView: turn a `--trace` file into the viewer page on disk and return its path.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { buildViewModel } from './model.js';
import { viewPage } from './page.js';

/** VIEW_TRACE_BYTES_MAX bounds the trace file the viewer reads (the page must still open in a browser). */
export const VIEW_TRACE_BYTES_MAX = 512 * 1024 * 1024;

/** defaultViewPath is where a page goes when no --view-out names a place: the temp directory. */
export function defaultViewPath(name: string): string {
  return join(tmpdir(), `svc-sim-${name}.html`);
}

export function writeView(
  traceFile: string,
  outFile: string,
  title = basename(traceFile),
): { path: string; messages: number; events: number } {
  const size = statSync(traceFile).size;
  if (size > VIEW_TRACE_BYTES_MAX)
    throw new Error(`${traceFile} is ${size} bytes; the viewer reads at most ${VIEW_TRACE_BYTES_MAX}`);
  const model = buildViewModel(readFileSync(traceFile, 'utf8'), title);
  if (model.events === 0)
    throw new Error(`${traceFile} holds no trace events (write one with npm run sim -- --seed N --trace FILE)`);
  writeFileSync(outFile, viewPage(model));
  return { path: outFile, messages: model.messages.length, events: model.events };
}
