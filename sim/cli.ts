// npm run sim -- --seed N | --seeds A..B [--trace FILE] [--<knob> value ...]   (also: npm run sim N, npm run sim --seed N)
// One run prints its result as the last line: `seed=N result=pass|fail events=E trace=HEX`.
// A failing run also prints the invariant, the tick and how to reproduce it, then
// shrinks its fault schedule (fast-check) and prints the smaller reproduction.
import { closeSync, openSync } from 'node:fs';
import { checkerNames } from './checkers/registry.js';
import { parseCli, usage, type CliRequest } from './cli-args.js';
import { describeFault } from './faults.js';
import { SIM_LIMITS } from './limits.js';
import { optionsFor, type SimOptions } from './options.js';
import { runSim, type RunResult } from './run.js';
import { reproduceCommand, shrinkFailure } from './shrink.js';
import { runScenarioFile } from './scenario.js';

function main(argv: string[]): number {
  let request: CliRequest;
  try {
    request = parseCli(argv, process.env);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${usage()}\n`);
    return 2;
  }
  if (request.mode === 'help') {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  if (request.mode === 'list-checkers') {
    process.stdout.write(`${checkerNames().join('\n')}\n`);
    return 0;
  }
  if (request.mode === 'sweep') return sweep(request);
  if (request.mode === 'scenario') return scenario(request.file);
  return single(request);
}

function scenario(file: string): number {
  try {
    const result = runScenarioFile(file);
    process.stdout.write(`scenario=${file} result=pass commands=${result.commands} ticks=${result.ticks}\n`);
    return 0;
  } catch (error) {
    const message = (error as Error).message;
    const unreadable = /ENOENT|EISDIR|EACCES/.test(message);
    process.stdout.write(`${message}\nscenario=${file} result=${unreadable ? 'error' : 'fail'}\n`);
    return unreadable ? 2 : 1;
  }
}

function single(request: Extract<CliRequest, { mode: 'single' }>): number {
  let options: SimOptions;
  try {
    options = optionsFor(request.seed, request.overrides, request.onlyFaults);
    if (request.traceFile !== undefined) closeSync(openSync(request.traceFile, 'w'));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  const result = runSim(options, { traceFile: request.traceFile });
  if (request.verbose) {
    process.stdout.write(`options: ${JSON.stringify({ ...options, onlyFaults: undefined })}\n`);
    result.faults.forEach((f, i) => process.stdout.write(`  fault #${i}: ${describeFault(f)}\n`));
  }
  process.stdout.write(`simulated ${(result.simulatedMs / 1_000).toFixed(1)} s: ${result.counts.writesIssued} writes, `
    + `${result.counts.writesAcked} acknowledged, ${result.counts.readsIssued} reads, ${result.counts.readsServed} served `
    + `(${result.counts.followerReadsServed} through the leader's index on a follower), ${result.counts.faultsFired}/${result.faults.length} faults fired\n`);
  if (result.linearizability) process.stdout.write(`${describeLinearizability(result)}\n`);
  if (request.verbose) process.stdout.write(`observed: ${JSON.stringify(result.observed)}\n`);
  if (result.failure) {
    printFailure(result, request);
    if (request.shrink) {
      const shrunk = shrinkFailure(request.seed, request.overrides, request.onlyFaults, result, (line) => process.stdout.write(`${line}\n`));
      if (shrunk) {
        process.stdout.write(`shrunk to ${shrunk.faults.length} of ${result.faults.length} faults after ${shrunk.runCount} runs `
          + `(still ${shrunk.result.failure!.invariant} at tick ${tickOf(shrunk.result.failure!.timeMs)}):\n`);
        for (const i of shrunk.faults) process.stdout.write(`  fault #${i}: ${describeFault(result.faults[i]!)}\n`);
        process.stdout.write(`shrunk reproduction: ${reproduceCommand(request.seed, shrunk.overrides, shrunk.faults)}\n`);
      }
    }
  }
  process.stdout.write(`seed=${request.seed} result=${result.ok ? 'pass' : 'fail'} events=${result.events} trace=${result.traceHash}\n`);
  return result.ok ? 0 : 1;
}

function describeLinearizability(result: RunResult): string {
  const l = result.linearizability!;
  const head = `linearizability: ${l.verdict} (${l.operationCount} operations, ${l.steps} search steps)`;
  return l.verdict === 'undecided' ? `${head} — not a failure: ${l.detail}` : head;
}

function printFailure(result: RunResult, request: Extract<CliRequest, { mode: 'single' }>): void {
  const f = result.failure!;
  process.stdout.write(`FAILED invariant=${f.invariant} tick=${tickOf(f.timeMs)} time=${f.timeMs.toFixed(3)}ms event=${f.event} node=${f.node}\n`);
  process.stdout.write(`  ${f.message}\n`);
  process.stdout.write(`reproduce: ${reproduceCommand(request.seed, request.overrides, request.onlyFaults)}\n`);
}

function tickOf(timeMs: number): number {
  return Math.floor(timeMs / SIM_LIMITS.tickMs);
}

function sweep(request: Extract<CliRequest, { mode: 'sweep' }>): number {
  try {
    optionsFor(request.firstSeed, request.overrides, null);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  const failures: { seed: number; invariant: string; tick: number; message: string }[] = [];
  const undecided: { seed: number; detail: string }[] = [];
  const total = request.lastSeed - request.firstSeed + 1;
  const showProgress = process.stderr.isTTY === true;
  const startedMs = performance.now();
  let simulatedMs = 0;
  for (let seed = request.firstSeed; seed <= request.lastSeed; seed++) {
    const result = runSim(optionsFor(seed, request.overrides, null));
    simulatedMs += result.simulatedMs;
    if (result.linearizability?.verdict === 'undecided') undecided.push({ seed, detail: result.linearizability.detail });
    if (result.failure) {
      failures.push({ seed, invariant: result.failure.invariant, tick: tickOf(result.failure.timeMs), message: result.failure.message });
      if (!showProgress) process.stdout.write(`seed=${seed} result=fail invariant=${result.failure.invariant}\n`);
    }
    if (showProgress) progress(seed - request.firstSeed + 1, total, failures.length, startedMs);
  }
  if (showProgress) process.stderr.write('\n');
  const wallS = (performance.now() - startedMs) / 1_000;
  process.stdout.write(`swept seeds ${request.firstSeed}..${request.lastSeed}: ${total - failures.length} passed, ${failures.length} failed `
    + `(${wallS.toFixed(1)} s wall, ${(simulatedMs / 1_000 / wallS).toFixed(0)}x real time)\n`);
  for (const u of undecided) process.stdout.write(`  seed=${u.seed} linearizability=undecided (not a failure): ${u.detail.slice(0, 300)}\n`);
  for (const f of failures) {
    process.stdout.write(`  seed=${f.seed} invariant=${f.invariant} tick=${f.tick}: ${f.message.slice(0, 300)}\n`);
    process.stdout.write(`    reproduce: ${reproduceCommand(f.seed, request.overrides, null)}\n`);
  }
  process.stdout.write(`seeds=${request.firstSeed}..${request.lastSeed} passed=${total - failures.length} failed=${failures.length}\n`);
  return failures.length === 0 ? 0 : 1;
}

function progress(done: number, total: number, failed: number, startedMs: number): void {
  const width = 30;
  const filled = Math.round((done / total) * width);
  const elapsedS = (performance.now() - startedMs) / 1_000;
  const etaS = done > 0 ? (elapsedS / done) * (total - done) : 0;
  process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} failed ${failed} eta ${etaS.toFixed(0)}s `);
}

process.exitCode = main(process.argv.slice(2));
