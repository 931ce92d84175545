// The trace-stamp files a cluster's nodes write with SVC_WRITE_TRACE_DIR (transports/node/write-trace.ts), read
// back by the timeline benches (bench/write-timeline.ts, bench/read-timeline.ts), and their shared argument.
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { WritePhase, WriteStamp } from '../../transports/node/write-trace.js';

/** numberArg reads `--name N` (a positive integer) from the command line, or gives `fallback`. */
export function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer`);
  return value;
}

export interface NodeTrace {
  name: string;
  grpcAddr: string;
  /** byPhase: the node's stamps of each phase, in time order. */
  byPhase: Map<WritePhase | 'cpu', WriteStamp[]>;
}

/** readTraces reads every node's `<name>.jsonl` in `dir`: a head line naming the node, then one stamp a line. */
export async function readTraces(dir: string): Promise<NodeTrace[]> {
  const traces: NodeTrace[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.jsonl'))) {
    const lines = (await readFile(join(dir, file), 'utf8')).split('\n').filter((l) => l !== '');
    const head = JSON.parse(lines[0]!) as { node: string; grpcAddr: string };
    const byPhase = new Map<WritePhase | 'cpu', WriteStamp[]>();
    for (const line of lines.slice(1)) {
      const s = JSON.parse(line) as WriteStamp;
      let list = byPhase.get(s.phase);
      if (!list) byPhase.set(s.phase, (list = []));
      list.push(s);
    }
    for (const list of byPhase.values()) list.sort((a, b) => a.atUs - b.atUs);
    traces.push({ name: head.node, grpcAddr: head.grpcAddr, byPhase });
  }
  return traces;
}
