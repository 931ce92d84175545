// Simulator speed (not a test): simulated seconds per wall second for a 5-node
// cluster under faults (100 ms ticks), and seeds per minute for a sweep of
// default (swarm) runs. Usage: npx tsx bench/sim-speed.ts [sweepSeedCount]
import { optionsFor, type SimOptions } from '../sim/options.js';
import { runSim } from '../sim/run.js';

/** FIVE_NODE_SEEDS: a few fixed seeds, each pinned to the same 5-node fault mix. */
const FIVE_NODE_SEEDS = [101, 102, 103];
const SWEEP_SEED_COUNT_DEFAULT = 20;

function fiveNodesUnderFaults(seed: number): SimOptions {
  return optionsFor(seed, {
    nodes: 5, 'old-peers': 0, learners: 0, joiners: 1,
    loss: 0.05, dup: 0.02, reorder: 0.05, replay: 0.005,
    'crash-rate': 1, 'pause-rate': 1, 'partition-rate': 1, 'clog-rate': 1, 'transfer-rate': 0.5,
    'write-interval-ms': 100, 'safety-s': 120,
  });
}

function main(): void {
  const sweepCount = Number(process.argv[2] ?? SWEEP_SEED_COUNT_DEFAULT);
  let simulatedMs = 0;
  let events = 0;
  let wallMs = 0;
  for (const seed of FIVE_NODE_SEEDS) {
    const started = performance.now();
    const result = runSim(fiveNodesUnderFaults(seed));
    wallMs += performance.now() - started;
    simulatedMs += result.simulatedMs;
    events += result.events;
    if (!result.ok) console.log(`  (seed ${seed} failed: ${result.failure!.invariant})`);
  }
  console.log(`5 nodes under faults: ${(simulatedMs / 1_000).toFixed(0)} simulated s in ${(wallMs / 1_000).toFixed(2)} wall s = `
    + `${(simulatedMs / wallMs).toFixed(0)}x real time (${(events / (wallMs / 1_000)).toFixed(0)} events/s)`);
  const sweepStarted = performance.now();
  let sweepSimulatedMs = 0;
  for (let seed = 1; seed <= sweepCount; seed++) sweepSimulatedMs += runSim(optionsFor(seed)).simulatedMs;
  const sweepWallMs = performance.now() - sweepStarted;
  console.log(`sweep of ${sweepCount} default seeds: ${(sweepWallMs / 1_000).toFixed(1)} wall s = ${(sweepCount / (sweepWallMs / 60_000)).toFixed(0)} seeds/minute `
    + `(${(sweepSimulatedMs / sweepWallMs).toFixed(0)}x real time)`);
}

main();
