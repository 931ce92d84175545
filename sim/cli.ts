// npm run sim -- --seed N | --seeds A..B [--trace FILE] [--view] [--<knob> value ...]   (also: npm run sim N, npm run sim --seed N)
// npm run sim -- --view-file FILE: the trace viewer page (sim/view/) for a --trace file.
// npm run sim -- --replay PATH...: replay real nodes' flight recordings (sim/replay/cli.ts).
// One run prints its result as the last line: `seed=N result=pass|fail events=E trace=HEX`.
// A failing run also prints the invariant, the tick and how to reproduce it, then
// shrinks its fault schedule (fast-check) and prints the smaller reproduction.
import { closeSync, openSync } from 'node:fs';
import { basename } from 'node:path';
import { checkerNames } from './checkers/registry.js';
import { isRecordingReplay, parseCli, usage, type CliRequest } from './cli-args.js';
import { CoverageTally } from './coverage.js';
import { SIM_LIMITS } from './limits.js';
import { optionsFor, type SimOptions } from './options.js';
import { describeAnyFault, runSim, type RunResult } from './run.js';
import { shardSeeds, sweepSeeds, type SeedOutcome } from './sweep.js';
import { reproduceCommand, shrinkFailure } from './shrink.js';
import { runScenarioFile } from './scenario.js';
import { defaultViewPath, writeView } from './view/write.js';
import { replayMain } from './replay/cli.js';

async function main(argv: string[]): Promise<number> {
  // A recording's replay has its own arguments (sim/replay/cli.ts).
  if (isRecordingReplay(argv)) return replayMain(argv);
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
  if (request.mode === 'view') return viewFile(request.traceFile, request.viewOut);
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

/** viewFile writes the viewer page for a trace file and prints its path; 2 when the file cannot be read. */
function viewFile(traceFile: string, viewOut: string | undefined): number {
  try {
    const written = writeView(traceFile, viewOut ?? defaultViewPath(basename(traceFile).replace(/\.jsonl?$/, '')));
    process.stdout.write(
      `view=${written.path} (${written.events} events, ${written.messages} messages; open it in a browser)\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
}

function single(request: Extract<CliRequest, { mode: 'single' }>): number {
  let options: SimOptions;
  // --view needs the trace file's view notes: without --trace, one goes beside the page.
  const viewOut = request.view ? (request.viewOut ?? defaultViewPath(`seed-${request.seed}`)) : undefined;
  const traceFile = request.traceFile ?? (viewOut !== undefined ? viewOut.replace(/(\.html?)?$/, '.jsonl') : undefined);
  try {
    options = optionsFor(request.seed, request.overrides, request.onlyFaults);
    if (traceFile !== undefined) closeSync(openSync(traceFile, 'w'));
    if (viewOut !== undefined) closeSync(openSync(viewOut, 'w'));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  const result = runSim(options, { traceFile });
  if (request.verbose) {
    process.stdout.write(`options: ${JSON.stringify({ ...options, onlyFaults: undefined })}\n`);
    result.faults.forEach((f, i) => process.stdout.write(`  fault #${i}: ${describeAnyFault(f)}\n`));
  }
  const foreign =
    result.counts.foreignDelivered + result.counts.otherClusterRefused > 0
      ? `, forged calls: ${result.counts.foreignDelivered} refused by engines, ${result.counts.otherClusterRefused} at the edge (other cluster)`
      : '';
  const asker = options.workload.askerAck === true ? `, ${result.counts.askerReadsServed} naming their asker` : '';
  process.stdout.write(
    `simulated ${(result.simulatedMs / 1_000).toFixed(1)} s: ${result.counts.writesIssued} writes, ` +
      `${result.counts.writesAcked} acknowledged, ${result.counts.readsIssued} reads, ${result.counts.readsServed} served ` +
      `(${result.counts.followerReadsServed} through the leader's index on a follower${asker}), ${result.counts.faultsFired}/${result.faults.length} faults fired${foreign}\n`,
  );
  if (result.linearizability) process.stdout.write(`${describeLinearizability(result)}\n`);
  if (request.verbose) {
    process.stdout.write(`observed: ${JSON.stringify(result.observed)}\n`);
    process.stdout.write(`coverage: ${JSON.stringify(result.coverage)}\n`);
  }
  if (result.failure) {
    printFailure(result, request);
    if (request.shrink) {
      const shrunk = shrinkFailure(request.seed, request.overrides, request.onlyFaults, result, (line) =>
        process.stdout.write(`${line}\n`),
      );
      if (shrunk) {
        process.stdout.write(
          `shrunk to ${shrunk.faults.length} of ${result.faults.length} faults after ${shrunk.runCount} runs ` +
            `(still ${shrunk.result.failure!.invariant} at tick ${tickOf(shrunk.result.failure!.timeMs)}):\n`,
        );
        for (const i of shrunk.faults) process.stdout.write(`  fault #${i}: ${describeAnyFault(result.faults[i]!)}\n`);
        process.stdout.write(
          `shrunk reproduction: ${reproduceCommand(request.seed, shrunk.overrides, shrunk.faults)}\n`,
        );
      }
    }
  }
  if (viewOut !== undefined && traceFile !== undefined) {
    const written = writeView(traceFile, viewOut, `seed ${request.seed}`);
    process.stdout.write(`view=${written.path} (open it in a browser; trace ${traceFile})\n`);
  }
  process.stdout.write(
    `seed=${request.seed} result=${result.ok ? 'pass' : 'fail'} events=${result.events} trace=${result.traceHash}\n`,
  );
  return result.ok ? 0 : 1;
}

function describeLinearizability(result: RunResult): string {
  const l = result.linearizability!;
  const head = `linearizability: ${l.verdict} (${l.operationCount} operations, ${l.steps} search steps)`;
  return l.verdict === 'undecided' ? `${head} — not a failure: ${l.detail}` : head;
}

function printFailure(result: RunResult, request: Extract<CliRequest, { mode: 'single' }>): void {
  const f = result.failure!;
  process.stdout.write(
    `FAILED invariant=${f.invariant} tick=${tickOf(f.timeMs)} time=${f.timeMs.toFixed(3)}ms event=${f.event} node=${f.node}\n`,
  );
  process.stdout.write(`  ${f.message}\n`);
  process.stdout.write(`reproduce: ${reproduceCommand(request.seed, request.overrides, request.onlyFaults)}\n`);
}

function tickOf(timeMs: number): number {
  return Math.floor(timeMs / SIM_LIMITS.tickMs);
}

async function sweep(request: Extract<CliRequest, { mode: 'sweep' }>): Promise<number> {
  try {
    optionsFor(request.firstSeed, request.overrides, null);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  const failures: { seed: number; invariant: string; tick: number; message: string }[] = [];
  const undecided: { seed: number; detail: string }[] = [];
  const seeds = shardSeeds(request.firstSeed, request.lastSeed, request.shard);
  const total = seeds.length;
  const showProgress = process.stderr.isTTY === true;
  const startedMs = performance.now();
  let simulatedMs = 0;
  const coverage = new CoverageTally();
  let foreignDelivered = 0;
  let otherClusterRefused = 0;
  let foreignSeeds = 0;
  // Outcomes arrive in seed order whatever the thread count, so every line below but the timing is
  // the same for --jobs 1 and --jobs N.
  const take = (outcome: SeedOutcome): void => {
    const { seed } = outcome;
    simulatedMs += outcome.simulatedMs;
    coverage.add(outcome.coverage);
    foreignDelivered += outcome.foreignDelivered;
    otherClusterRefused += outcome.otherClusterRefused;
    if (outcome.foreignDelivered + outcome.otherClusterRefused > 0) foreignSeeds++;
    if (outcome.undecided !== null) undecided.push({ seed, detail: outcome.undecided });
    if (outcome.failure) {
      failures.push({
        seed,
        invariant: outcome.failure.invariant,
        tick: tickOf(outcome.failure.timeMs),
        message: outcome.failure.message,
      });
    }
    if (request.eachSeed) {
      process.stdout.write(
        `seed=${seed} result=${outcome.ok ? 'pass' : 'fail'} events=${outcome.events} trace=${outcome.traceHash}` +
          `${outcome.failure ? ` invariant=${outcome.failure.invariant}` : ''}\n`,
      );
    } else if (outcome.failure && !showProgress) {
      process.stdout.write(`seed=${seed} result=fail invariant=${outcome.failure.invariant}\n`);
    }
  };
  await sweepSeeds(seeds, request.overrides, request.jobs, take, (done) => {
    if (showProgress) progress(done, total, failures.length, startedMs);
  });
  if (showProgress) process.stderr.write('\n');
  const wallS = (performance.now() - startedMs) / 1_000;
  const range = `${request.firstSeed}..${request.lastSeed}`;
  const part = request.shard ? ` shard ${request.shard.index}/${request.shard.count} (${total} seeds)` : '';
  process.stdout.write(
    `swept seeds ${range}${part}: ${total - failures.length} passed, ${failures.length} failed ` +
      `(${wallS.toFixed(1)} s wall, ${(simulatedMs / 1_000 / wallS).toFixed(0)}x real time` +
      `${request.jobs > 1 ? ` on ${request.jobs} threads` : ''})\n`,
  );
  if (foreignSeeds > 0) {
    process.stdout.write(
      `foreign traffic in ${foreignSeeds} seeds: ${foreignDelivered} forged calls reached engines (each refused, nothing changed), ` +
        `${otherClusterRefused} refused at the edge for another cluster's id\n`,
    );
  }
  for (const u of undecided)
    process.stdout.write(`  seed=${u.seed} linearizability=undecided (not a failure): ${u.detail.slice(0, 300)}\n`);
  for (const f of failures) {
    process.stdout.write(`  seed=${f.seed} invariant=${f.invariant} tick=${f.tick}: ${f.message.slice(0, 300)}\n`);
    process.stdout.write(`    reproduce: ${reproduceCommand(f.seed, request.overrides, null)}\n`);
  }
  process.stdout.write('coverage (rare situations reached: total count, seeds reaching it; see sim/coverage.ts):\n');
  for (const line of coverage.lines()) process.stdout.write(`${line}\n`);
  process.stdout.write(
    `seeds=${range}${part ? ` shard=${request.shard!.index}/${request.shard!.count}` : ''} passed=${total - failures.length} failed=${failures.length}\n`,
  );
  return failures.length === 0 ? 0 : 1;
}

function progress(done: number, total: number, failed: number, startedMs: number): void {
  const width = 30;
  const filled = Math.round((done / total) * width);
  const elapsedS = (performance.now() - startedMs) / 1_000;
  const etaS = done > 0 ? (elapsedS / done) * (total - done) : 0;
  process.stderr.write(
    `\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total} failed ${failed} eta ${etaS.toFixed(0)}s `,
  );
}

process.exitCode = await main(process.argv.slice(2));
