// Simulator A/B (not a test): this tree and another checkout run alternately in one process, so both see the same
// neighbours on a shared machine; CPU time per round (process.cpuUsage), a warm-up round left out. Each round runs
// the five-node seeds of bench/sim-speed.ts and default seeds 1..10, and prints the first trace hashes of both trees
// (equal unless a change moved a trace).
//   git -C . worktree add /tmp/sim-base main && ln -s "$PWD/node_modules" /tmp/sim-base/node_modules
//   npx tsx bench/sim-ab.ts /tmp/sim-base [rounds]
// In one process the tree the bench lives in wins by 1.2-1.5x whichever it is (both share node_modules and the
// bench's own module; sim/README.md, "favours the tree it lives in"), so compare processes too:
//   npx tsx bench/sim-ab.ts /tmp/sim-base [rounds] --processes [pairs]
// runs one process per tree, alternately (other, this, this, other, ...), each a warm-up round and `rounds` counted
// ones of its own tree alone, and prints every process's figures and the ratio of the totals. The warm-up round's
// CPU is printed too ("cold first round"): most of a fresh process's CPU there is V8 compiling and recompiling on its
// background threads, which is what a short sweep or bench/sim-speed.ts's five-node figure mostly pays.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { optionsFor as OptionsFor } from '../sim/options.js';
import type { runSim as RunSim } from '../sim/run.js';
import { FIVE_NODE_FAULT_FLAGS } from './sim/five-node-faults.js';

const ROUND_COUNT_DEFAULT = 4;
const ROUND_COUNT_MAX = 50;
const FIVE_NODE_SEEDS = [101, 102, 103];
const SWEEP_SEED_COUNT = 10;

interface Tree {
  label: string;
  optionsFor: typeof OptionsFor;
  runSim: typeof RunSim;
  fiveCpuMs: number;
  simulatedMs: number;
  events: number;
  sweepCpuMs: number;
}

async function load(label: string, root: string): Promise<Tree> {
  const url = (file: string) => pathToFileURL(resolve(root, file)).href;
  const options = (await import(url('sim/options.ts'))) as { optionsFor: typeof OptionsFor };
  const run = (await import(url('sim/run.ts'))) as { runSim: typeof RunSim };
  return {
    label,
    optionsFor: options.optionsFor,
    runSim: run.runSim,
    fiveCpuMs: 0,
    simulatedMs: 0,
    events: 0,
    sweepCpuMs: 0,
  };
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1_000;
}

function round(tree: Tree, counted: boolean): string {
  const hashes: string[] = [];
  let started = process.cpuUsage();
  let simulatedMs = 0;
  let events = 0;
  for (const seed of FIVE_NODE_SEEDS) {
    const result = tree.runSim(tree.optionsFor(seed, FIVE_NODE_FAULT_FLAGS));
    simulatedMs += result.simulatedMs;
    events += result.events;
    hashes.push(result.traceHash.slice(0, 8));
  }
  const fiveCpuMs = cpuMs(started);
  started = process.cpuUsage();
  for (let seed = 1; seed <= SWEEP_SEED_COUNT; seed++)
    hashes.push(tree.runSim(tree.optionsFor(seed)).traceHash.slice(0, 8));
  const sweepCpuMs = cpuMs(started);
  if (counted) {
    tree.fiveCpuMs += fiveCpuMs;
    tree.simulatedMs += simulatedMs;
    tree.events += events;
    tree.sweepCpuMs += sweepCpuMs;
  }
  return (
    `${tree.label}: five nodes ${(simulatedMs / fiveCpuMs).toFixed(0)}x per CPU s (${((fiveCpuMs * 1_000) / events).toFixed(1)} us/event), ` +
    `seeds 1..${SWEEP_SEED_COUNT} ${(sweepCpuMs / 1_000).toFixed(2)} s CPU; traces ${hashes.slice(0, 5).join(',')}`
  );
}

const PROCESS_PAIRS_DEFAULT = 3;
const PROCESS_PAIRS_MAX = 20;

interface Totals {
  fiveCpuMs: number;
  simulatedMs: number;
  events: number;
  sweepCpuMs: number;
  /** coldCpuMs: the process's first round (five-node seeds and seeds 1..10 on a cold JIT), as a fresh sweep thread pays it. */
  coldCpuMs: number;
}

/** solo runs one tree alone in this process (the child of --processes) and prints its totals as JSON. */
async function solo(root: string, rounds: number): Promise<void> {
  const tree = await load('solo', root);
  const coldStarted = process.cpuUsage();
  round(tree, false);
  const coldCpuMs = cpuMs(coldStarted);
  for (let r = 1; r <= rounds; r++) round(tree, true);
  const hashes: string[] = [];
  for (const seed of FIVE_NODE_SEEDS) hashes.push(tree.runSim(tree.optionsFor(seed, FIVE_NODE_FAULT_FLAGS)).traceHash);
  const totals: Totals & { hashes: string[] } = { ...tree, coldCpuMs, hashes };
  console.log(JSON.stringify(totals));
}

function perProcess(label: string, t: Totals, rounds: number): string {
  return (
    `${label}: five nodes ${(t.simulatedMs / t.fiveCpuMs).toFixed(0)}x per CPU s (${((t.fiveCpuMs * 1_000) / t.events).toFixed(2)} us/event), ` +
    `seeds 1..${SWEEP_SEED_COUNT} ${(t.sweepCpuMs / 1_000 / rounds).toFixed(2)} s CPU per round; ` +
    `cold first round ${(t.coldCpuMs / 1_000).toFixed(2)} s CPU`
  );
}

/** processes alternates whole processes of the two trees and compares their summed CPU. */
function processes(other: string, rounds: number, pairs: number): void {
  const roots = { other: resolve(other), this: resolve(import.meta.dirname, '..') };
  const sums = {
    other: { five: 0, sweep: 0, events: 0, cold: 0 },
    this: { five: 0, sweep: 0, events: 0, cold: 0 },
  };
  const firstHashes: Partial<Record<'other' | 'this', string>> = {};
  for (let p = 0; p < pairs; p++) {
    for (const label of p % 2 === 0 ? (['other', 'this'] as const) : (['this', 'other'] as const)) {
      const child = spawnSync(
        process.execPath,
        ['--import', 'tsx', resolve(import.meta.dirname, 'sim-ab.ts'), '--solo', roots[label], String(rounds)],
        { encoding: 'utf8', maxBuffer: 1 << 24 },
      );
      if (child.status !== 0) throw new Error(`${label} process failed: ${child.stderr}`);
      const t = JSON.parse(child.stdout.trim().split('\n').pop()!) as Totals & { hashes: string[] };
      const hashes = t.hashes.join(',');
      if (firstHashes[label] === undefined) firstHashes[label] = hashes;
      sums[label].five += t.fiveCpuMs;
      sums[label].sweep += t.sweepCpuMs;
      sums[label].events += t.events;
      sums[label].cold += t.coldCpuMs;
      console.log(
        `pair ${p + 1} ${perProcess(label, t, rounds)}; traces ${t.hashes.map((h) => h.slice(0, 8)).join(',')}`,
      );
    }
  }
  const same = firstHashes.other === firstHashes.this;
  console.log(
    `this/other CPU: five nodes ${(sums.this.five / sums.this.events / (sums.other.five / sums.other.events)).toFixed(3)}x per event, ` +
      `seeds 1..${SWEEP_SEED_COUNT} ${(sums.this.sweep / sums.other.sweep).toFixed(3)}x, cold first round ` +
      `${(sums.this.cold / sums.other.cold).toFixed(3)}x; five-node trace hashes ${same ? 'equal' : 'DIFFER'}`,
  );
}

async function main(): Promise<void> {
  if (process.argv[2] === '--solo') return solo(process.argv[3]!, Number(process.argv[4]));
  const at = process.argv.indexOf('--processes');
  const pairs = at >= 0 ? Number(process.argv[at + 1] ?? PROCESS_PAIRS_DEFAULT) : 0;
  if (at >= 0) {
    if (!Number.isInteger(pairs) || pairs < 1 || pairs > PROCESS_PAIRS_MAX)
      throw new Error(`pairs must be a whole number in [1, ${PROCESS_PAIRS_MAX}]`);
    process.argv.splice(at, 2);
  }
  const other = process.argv[2];
  if (!other) throw new Error('usage: npx tsx bench/sim-ab.ts OTHER_CHECKOUT [rounds]');
  const rounds = Number(process.argv[3] ?? ROUND_COUNT_DEFAULT);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > ROUND_COUNT_MAX)
    throw new Error(`rounds must be a whole number in [1, ${ROUND_COUNT_MAX}]`);
  if (at >= 0) return processes(other, rounds, pairs);
  const trees = [await load('other', other), await load('this', resolve(import.meta.dirname, '..'))];
  for (let r = 0; r <= rounds; r++) {
    // Alternate which goes first, so neither always runs right after the other's garbage.
    for (const tree of r % 2 === 0 ? trees : [...trees].reverse())
      console.log(`round ${r}${r === 0 ? ' (warm-up)' : ''} ${round(tree, r > 0)}`);
  }
  for (const t of trees) {
    console.log(
      `${t.label}: five nodes ${(t.simulatedMs / t.fiveCpuMs).toFixed(0)}x per CPU s (${((t.fiveCpuMs * 1_000) / t.events).toFixed(1)} us/event); ` +
        `${((SWEEP_SEED_COUNT * rounds) / (t.sweepCpuMs / 60_000)).toFixed(0)} default seeds per CPU minute`,
    );
  }
}

void main();
