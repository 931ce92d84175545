// Simulator speed (not a test): simulated seconds per wall second for a 5-node
// cluster under faults (100 ms ticks), and seeds per minute for a sweep of
// default (swarm) runs. CPU-time figures are printed too: this machine is shared,
// so wall time alone says as much about the neighbours as about the simulator.
// The sweep runs twice: in one thread, then on `jobs` threads (this one and jobs - 1 workers: sim/sweep.ts, `--jobs`).
// Usage: npx tsx bench/sim-speed.ts [sweepSeedCount] [jobs]
import { Engine } from '../engine/engine.js';
import type { EngineFactory } from '../sim/node.js';
import { optionsFor, type SimOptions } from '../sim/options.js';
import { runSim } from '../sim/run.js';
import { SWEEP_JOBS_MAX, sweepSeeds } from '../sim/sweep.js';
import { FIVE_NODE_FAULT_FLAGS } from './sim/five-node-faults.js';

/** FIVE_NODE_SEEDS: a few fixed seeds, each pinned to the same 5-node fault mix (the first warms the JIT up). */
const FIVE_NODE_SEEDS = [100, 101, 102, 103];
const SWEEP_SEED_COUNT_DEFAULT = 20;
const SWEEP_JOBS_DEFAULT = 2;

function fiveNodesUnderFaults(seed: number): SimOptions {
  return optionsFor(seed, FIVE_NODE_FAULT_FLAGS);
}

interface Split {
  engineNs: bigint;
}

/** timedEngine measures the time spent inside the engine's own step and status. */
function timedEngine(split: Split): EngineFactory {
  return (config, restored) => {
    const engine = new Engine(config, restored);
    const timed = <T>(run: () => T): T => {
      const started = process.hrtime.bigint();
      const out = run();
      split.engineNs += process.hrtime.bigint() - started;
      return out;
    };
    return {
      step: (input) => timed(() => engine.step(input)),
      status: () => timed(() => engine.status()),
      entries: () => engine.entries(),
      snapshot: () => engine.snapshot(),
    };
  };
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1_000;
}

async function main(): Promise<void> {
  const sweepCount = Number(process.argv[2] ?? SWEEP_SEED_COUNT_DEFAULT);
  if (!Number.isInteger(sweepCount) || sweepCount < 0 || sweepCount > 10_000)
    throw new Error('sweepSeedCount must be a whole number in [0, 10000]');
  const jobs = Number(process.argv[3] ?? SWEEP_JOBS_DEFAULT);
  if (!Number.isInteger(jobs) || jobs < 1 || jobs > SWEEP_JOBS_MAX)
    throw new Error(`jobs must be a whole number in [1, ${SWEEP_JOBS_MAX}]`);
  let simulatedMs = 0;
  let events = 0;
  let wallMs = 0;
  let cpu = 0;
  const split: Split = { engineNs: 0n };
  FIVE_NODE_SEEDS.forEach((seed, i) => {
    const cpuStart = process.cpuUsage();
    const started = performance.now();
    const result = runSim(fiveNodesUnderFaults(seed), { engineFactory: timedEngine(split) });
    if (i === 0) {
      split.engineNs = 0n;
      return;
    }
    wallMs += performance.now() - started;
    cpu += cpuMs(cpuStart);
    simulatedMs += result.simulatedMs;
    events += result.events;
    if (!result.ok) console.log(`  (seed ${seed} failed: ${result.failure!.invariant})`);
  });
  const engineMs = Number(split.engineNs) / 1e6;
  console.log(
    `5 nodes under faults: ${(simulatedMs / 1_000).toFixed(0)} simulated s, ${events} events in ${(wallMs / 1_000).toFixed(2)} wall s ` +
      `= ${(simulatedMs / wallMs).toFixed(0)}x real time (${(simulatedMs / cpu).toFixed(0)}x per CPU second); ` +
      `${((wallMs * 1_000) / events).toFixed(1)} us/event, of which the engine's step+status ${((engineMs * 1_000) / events).toFixed(1)} us`,
  );
  if (sweepCount === 0) return;
  const cpuStart = process.cpuUsage();
  const sweepStarted = performance.now();
  let sweepSimulatedMs = 0;
  for (let seed = 1; seed <= sweepCount; seed++) sweepSimulatedMs += runSim(optionsFor(seed)).simulatedMs;
  const sweepWallMs = performance.now() - sweepStarted;
  const sweepCpuMs = cpuMs(cpuStart);
  console.log(
    `sweep of ${sweepCount} default seeds: ${(sweepWallMs / 1_000).toFixed(1)} wall s = ${(sweepCount / (sweepWallMs / 60_000)).toFixed(0)} seeds/minute ` +
      `(${(sweepCount / (sweepCpuMs / 60_000)).toFixed(0)} per CPU minute; ${(sweepSimulatedMs / sweepWallMs).toFixed(0)}x real time)`,
  );
  if (jobs === 1) return;
  // The same seeds on worker threads; process.cpuUsage counts every thread of the process.
  const seeds = Array.from({ length: sweepCount }, (_, i) => i + 1);
  const jobsCpuStart = process.cpuUsage();
  const jobsStarted = performance.now();
  let jobsSimulatedMs = 0;
  await sweepSeeds(seeds, {}, jobs, (outcome) => (jobsSimulatedMs += outcome.simulatedMs));
  const jobsWallMs = performance.now() - jobsStarted;
  console.log(
    `sweep of ${sweepCount} default seeds with --jobs ${jobs}: ${(jobsWallMs / 1_000).toFixed(1)} wall s = ` +
      `${(sweepCount / (jobsWallMs / 60_000)).toFixed(0)} seeds/minute (${(sweepCount / (cpuMs(jobsCpuStart) / 60_000)).toFixed(0)} per CPU minute; ` +
      `${(jobsSimulatedMs / jobsWallMs).toFixed(0)}x real time)`,
  );
}

await main();
