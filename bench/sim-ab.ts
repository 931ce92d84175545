// Simulator A/B (not a test): this tree and another checkout run alternately in one process, so both see the same
// neighbours on a shared machine; CPU time per round (process.cpuUsage), a warm-up round left out. Each round runs
// the five-node seeds of bench/sim-speed.ts and default seeds 1..10, and prints the first trace hashes of both trees
// (equal unless a change moved a trace).
//   git -C . worktree add /tmp/sim-base main && ln -s "$PWD/node_modules" /tmp/sim-base/node_modules
//   npx tsx bench/sim-ab.ts /tmp/sim-base [rounds]
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

async function main(): Promise<void> {
  const other = process.argv[2];
  if (!other) throw new Error('usage: npx tsx bench/sim-ab.ts OTHER_CHECKOUT [rounds]');
  const rounds = Number(process.argv[3] ?? ROUND_COUNT_DEFAULT);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > ROUND_COUNT_MAX)
    throw new Error(`rounds must be a whole number in [1, ${ROUND_COUNT_MAX}]`);
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
