// The flight recorder's checkpoint pause on a large log (not a test; issue 22): once per segment the recorder
// takes the engine's whole state (Engine.exportState, synchronously, right after a step) and encodes it as a
// `ckpt` line (recording/codec.ts encodeLine, values by their length), both on the node's event loop. Both
// grow with the log the engine holds in memory (every entry after its compaction point). This builds one
// single-node engine, grows its log by batches of 100 proposals of --value-bytes each up to each --entries
// size, and prints the median of --runs exports and encodings at each size, and the line's size.
//
//   npx tsx bench/recording-checkpoint-pause.ts [--entries 10000,50000,100000] [--runs 5] [--value-bytes 88]
import { Engine } from '../engine/engine.js';
import { CURRENT_COMPAT, DEFAULT_LIMITS } from '../engine/limits.js';
import { emptyRestoredState } from '../engine/restored.js';
import { bootstrapRoster } from '../engine/roster.js';
import { encodeLine, LENGTHS_ONLY } from '../recording/codec.js';
import type { EngineConfig, Input } from '../engine/types.js';

const PROPOSALS_PER_BATCH = 100;

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? fallback : process.argv[at + 1]!;
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

const roster = bootstrapRoster([{ name: 'solo', grpcAddr: '127.0.0.1:1', httpAddr: 'http://127.0.0.1:2' }]);
const config: EngineConfig = {
  name: 'solo',
  grpcAddr: '127.0.0.1:1',
  httpAddr: 'http://127.0.0.1:2',
  bootstrapRoster: roster,
  seeds: [],
  randomSeed: 7,
  compat: CURRENT_COMPAT,
  limits: { ...DEFAULT_LIMITS, electionTimeoutTicks: 2 },
};

const engine = new Engine(config, emptyRestoredState());
/** feed steps the engine, telling it each append is durable at once (as the driver does once the WAL syncs). */
function feed(input: Input): void {
  for (const e of engine.step(input)) {
    if (e.type !== 'append' || e.entries.length === 0) continue;
    const last = e.entries[e.entries.length - 1]!;
    feed({ type: 'entriesPersisted', lastSeq: last.seq, lastTerm: last.term, generation: e.generation });
  }
}

feed({ type: 'start' });
for (let i = 0; i < 4 * config.limits.electionTimeoutTicks; i++) feed({ type: 'tick' });
const value = new Uint8Array(Number(arg('value-bytes', '88'))).fill(1);
const runs = Number(arg('runs', '5'));
let proposalId = 1;
console.log('| log entries (about) | export ms | encode ms | ckpt line MB |');
console.log('|---|---|---|---|');
for (const entries of arg('entries', '10000,50000,100000').split(',').map(Number)) {
  while (proposalId <= entries) {
    const proposals = Array.from({ length: PROPOSALS_PER_BATCH }, () => ({ proposalId: proposalId++, data: value }));
    feed({ type: 'proposeBatch', proposals });
  }
  const exports: number[] = [];
  const encodings: number[] = [];
  let bytes = 0;
  for (let r = 0; r < runs; r++) {
    let began = performance.now();
    const state = engine.exportState();
    exports.push(performance.now() - began);
    began = performance.now();
    const line = encodeLine({ t: 'ckpt', config, state }, 'hashed', LENGTHS_ONLY);
    encodings.push(performance.now() - began);
    bytes = Buffer.byteLength(line);
  }
  console.log(
    `| ${entries} | ${median(exports).toFixed(1)} | ${median(encodings).toFixed(1)} | ${(bytes / 1e6).toFixed(2)} |`,
  );
}
