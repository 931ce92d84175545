import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRecordingReplay, parseCli } from '../../sim/cli-args.js';
import { faultSchedule } from '../../sim/faults.js';
import { OVERRIDES, optionsFor, writeIntervalMsFloor } from '../../sim/options.js';
import { runSim } from '../../sim/run.js';
import { reproduceCommand, shrinkFailure } from '../../sim/shrink.js';
import type { EngineFactory } from '../../sim/node.js';
import { acksOnAppend, forgetsHardState, grantsEveryVote, ignoresStaleTerms, readyAtOnce } from './buggy-engines.js';

/** SHORT: a short safety phase keeps these whole runs quick. */
const SHORT = { 'safety-s': 15 };
/** MUTANT_SEED_COUNT_MAX: each deliberately broken engine must be caught within this many default seeds. */
const MUTANT_SEED_COUNT_MAX = 8;

describe('sim/run', () => {
  it('gives the same events and trace hash for the same seed, and another for another seed', () => {
    const a = runSim(optionsFor(11, SHORT));
    const b = runSim(optionsFor(11, SHORT));
    const c = runSim(optionsFor(12, SHORT));
    assert.equal(a.traceHash, b.traceHash);
    assert.equal(a.events, b.events);
    assert.match(a.traceHash, /^[0-9a-f]{64}$/);
    assert.notEqual(a.traceHash, c.traceHash);
  });

  it('writes one JSON object per event to --trace, whose SHA-256 (view notes left out) is the trace hash', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-trace-'));
    try {
      const file = join(dir, 'trace.jsonl');
      const withFile = runSim(optionsFor(5, SHORT), { traceFile: file });
      const lines = readFileSync(file, 'utf8').trim().split('\n');
      assert.ok(lines.length > 100);
      for (const line of lines.slice(0, 500)) assert.equal(typeof JSON.parse(line), 'object');
      assert.equal(
        withFile.traceHash,
        runSim(optionsFor(5, SHORT)).traceHash,
        'writing the file does not change the run',
      );
      const events = lines.filter((line) => !line.startsWith('{"v":'));
      assert.ok(lines.length > events.length, 'the file holds view notes too');
      assert.equal(
        createHash('sha256')
          .update(events.join('\n') + '\n')
          .digest('hex'),
        withFile.traceHash,
        'trace= is the SHA-256 of the event lines',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('draws a per-seed fault schedule that --only-faults can cut down', () => {
    const options = optionsFor(3);
    const all = faultSchedule(options);
    assert.ok(
      all.every((f, i) => i === 0 || all[i - 1]!.atMs <= f.atMs),
      'sorted by time',
    );
    const none = runSim(optionsFor(3, SHORT, []));
    assert.equal(none.counts.faultsFired, 0);
  });

  for (const [name, factory, invariants] of [
    [
      'acknowledges before commit',
      acksOnAppend,
      ['durability', 'state-machine-safety', 'log-matching', 'linearizability'],
    ],
    [
      'forgets its term and vote',
      forgetsHardState,
      ['barrier', 'election-safety', 'log-matching', 'state-machine-safety', 'quorum', 'durability', 'linearizability'],
    ],
    [
      'ignores stale terms',
      ignoresStaleTerms,
      ['term-fencing', 'log-matching', 'state-machine-safety', 'durability', 'linearizability'],
    ],
    ['claims readiness at once', readyAtOnce, ['readiness-honesty']],
    [
      'grants every vote',
      grantsEveryVote,
      ['barrier', 'election-safety', 'durability', 'log-matching', 'state-machine-safety', 'quorum', 'linearizability'],
    ],
  ] as [string, EngineFactory, string[]][]) {
    it(`catches an engine that ${name} within ${MUTANT_SEED_COUNT_MAX} default seeds`, () => {
      for (let seed = 1; seed <= MUTANT_SEED_COUNT_MAX; seed++) {
        const result = runSim(optionsFor(seed), { engineFactory: factory });
        if (result.failure) {
          assert.ok(invariants.includes(result.failure.invariant), `seed ${seed}: ${result.failure.message}`);
          return;
        }
      }
      assert.fail(`not caught in ${MUTANT_SEED_COUNT_MAX} seeds`);
    });
  }

  it('shrinks a failing run to fewer faults that still break the same invariant', function () {
    this.timeout(120_000);
    let failed = null;
    let seed = 1;
    for (; seed <= 20; seed++) {
      const result = runSim(optionsFor(seed, { 'safety-s': 30 }), { engineFactory: acksOnAppend });
      if (result.failure && result.faults.length >= 2) {
        failed = result;
        break;
      }
    }
    assert.ok(failed, 'a failing seed with a few faults');
    const shrunk = shrinkFailure(seed, { 'safety-s': 30 }, null, failed, () => {}, { engineFactory: acksOnAppend })!;
    assert.equal(shrunk.result.failure?.invariant, failed.failure!.invariant);
    assert.ok(shrunk.faults.length <= failed.faults.length);
    const replay = runSim(optionsFor(seed, shrunk.overrides, shrunk.faults), { engineFactory: acksOnAppend });
    assert.equal(replay.traceHash, shrunk.result.traceHash, 'the printed reproduction replays exactly');
    assert.match(reproduceCommand(seed, shrunk.overrides, shrunk.faults), new RegExp(`^npm run sim -- --seed ${seed}`));
  });
});

describe('sim/cli', () => {
  it("a shrunk run's printed reproduction, whatever knob it sets, runs that seed: never a flight recording's replay", () => {
    for (const knob of OVERRIDES) {
      const command = reproduceCommand(7, { [knob.flag]: knob.min }, [0, 2]);
      const argv = command.replace(/^npm run sim -- /, '').split(' ');
      assert.equal(isRecordingReplay(argv), false, command);
      const request = parseCli(argv);
      assert.ok(request.mode === 'single', command);
      assert.deepEqual(request.overrides, { [knob.flag]: knob.min }, command);
      assert.deepEqual(request.onlyFaults, [0, 2], command);
    }
    assert.equal(isRecordingReplay(['--replay', 'n1/recording', '--view']), true);
    assert.equal(parseCli(['--seed', '7', '--replay-rate', '0.03']).mode, 'single');
  });

  it('parses seeds, sweeps, knobs and fault lists, and rejects bad input clearly', () => {
    assert.deepEqual(parseCli(['--seed', '7']), {
      mode: 'single',
      seed: 7,
      overrides: {},
      onlyFaults: null,
      traceFile: undefined,
      shrink: true,
      verbose: false,
    });
    assert.deepEqual(parseCli(['--seeds', '1..500', '--loss=0.1', '--nodes', '5']), {
      mode: 'sweep',
      firstSeed: 1,
      lastSeed: 500,
      overrides: { loss: 0.1, nodes: 5 },
      jobs: 1,
      shard: null,
      eachSeed: false,
    });
    assert.deepEqual(
      (parseCli(['--seed', '1', '--only-faults', '3,1,3']) as { onlyFaults: number[] }).onlyFaults,
      [1, 3],
    );
    assert.throws(() => parseCli([]), /missing --seed/);
    assert.throws(() => parseCli(['--seed', '-1']), /whole number/);
    assert.throws(() => parseCli(['--seeds', '5..1']), /empty/);
    assert.throws(() => parseCli(['--seed', '1', '--loss', 'lots']), /needs a number/);
    assert.throws(() => parseCli(['--seed', '1', '--bogus', '1']), /unknown argument --bogus/);
    assert.deepEqual(parseCli(['--seed', '7', '--view', '--view-out', 'x.html']), {
      mode: 'single',
      seed: 7,
      overrides: {},
      onlyFaults: null,
      traceFile: undefined,
      shrink: true,
      verbose: false,
      view: true,
      viewOut: 'x.html',
    });
    assert.deepEqual(parseCli(['--view-file', 't.jsonl']), { mode: 'view', traceFile: 't.jsonl', viewOut: undefined });
    assert.deepEqual(parseCli(['--view-file', 't.jsonl', '--view-out', 'p.html']), {
      mode: 'view',
      traceFile: 't.jsonl',
      viewOut: 'p.html',
    });
    assert.throws(() => parseCli(['--view-file', 't.jsonl', '--seed', '1']), /--view-file FILE takes only --view-out/);
    assert.throws(() => parseCli(['--seed', '1', '--view-out', 'p.html']), /--view-out needs --view/);
    assert.throws(() => parseCli(['--seeds', '1..3', '--view']), /apply to one --seed run/);
  });

  it('runs seed 7 however npm is asked: npm run sim -- --seed 7, npm run sim --seed 7, npm run sim 7, npm run sim --seed=7', () => {
    const seven = {
      mode: 'single',
      seed: 7,
      overrides: {},
      onlyFaults: null,
      traceFile: undefined,
      shrink: true,
      verbose: false,
    };
    const underNpm = (config: Record<string, string>) => ({ npm_lifecycle_event: 'sim', ...config });
    assert.deepEqual(parseCli(['--seed', '7'], underNpm({})), seven);
    // `npm run sim --seed 7`: npm keeps --seed (npm_config_seed=true) and passes 7 on.
    assert.deepEqual(parseCli(['7'], underNpm({ npm_config_seed: 'true' })), seven);
    assert.deepEqual(parseCli(['7'], {}), seven);
    // `npm run sim --seed=7`: npm keeps all of it.
    assert.deepEqual(parseCli([], underNpm({ npm_config_seed: '7' })), seven);
    assert.deepEqual(parseCli(['--loss', '0.1'], underNpm({ npm_config_seed: '7' })), {
      ...seven,
      overrides: { loss: 0.1 },
    });
    assert.deepEqual(
      parseCli(['--seed', '8'], underNpm({ npm_config_seed: '7' })),
      { ...seven, seed: 8 },
      'the arguments win',
    );
    assert.throws(
      () => parseCli([], { npm_config_seed: '7' }),
      /missing --seed/,
      'outside npm the environment is not read',
    );
    assert.throws(
      () => parseCli([], { npm_lifecycle_event: 'test', npm_config_seed: '7' }),
      /missing --seed/,
      'only the sim script reads npm_config_seed',
    );
    assert.throws(() => parseCli([], underNpm({ npm_config_seed: 'true' })), /missing --seed/);
    assert.throws(() => parseCli([], underNpm({ npm_config_seed: 'x' })), /whole number/);
    // `npm run sim --seeds 1..3` and `npm run sim 1..3`.
    assert.deepEqual(parseCli(['1..3'], underNpm({ npm_config_seeds: 'true' })), {
      mode: 'sweep',
      firstSeed: 1,
      lastSeed: 3,
      overrides: {},
      jobs: 1,
      shard: null,
      eachSeed: false,
    });
    assert.deepEqual(parseCli([], underNpm({ npm_config_seeds: '1..3' })), {
      mode: 'sweep',
      firstSeed: 1,
      lastSeed: 3,
      overrides: {},
      jobs: 1,
      shard: null,
      eachSeed: false,
    });
    // --foreign-traffic turns foreign traffic on in every seed (a rate the arguments may pin), with or without `--`.
    assert.deepEqual(parseCli(['--seeds', '1..3', '--foreign-traffic']), {
      mode: 'sweep',
      firstSeed: 1,
      lastSeed: 3,
      overrides: { 'foreign-rate': 4 },
      jobs: 1,
      shard: null,
      eachSeed: false,
    });
    assert.deepEqual(parseCli(['--seeds', '1..3', '--foreign-traffic', '--foreign-rate', '1']), {
      mode: 'sweep',
      firstSeed: 1,
      lastSeed: 3,
      overrides: { 'foreign-rate': 1 },
      jobs: 1,
      shard: null,
      eachSeed: false,
    });
    assert.deepEqual(parseCli(['1..3'], underNpm({ npm_config_seeds: 'true', npm_config_foreign_traffic: 'true' })), {
      mode: 'sweep',
      firstSeed: 1,
      lastSeed: 3,
      overrides: { 'foreign-rate': 4 },
      jobs: 1,
      shard: null,
      eachSeed: false,
    });
    assert.throws(() => parseCli(['7', '8']), /give one seed/);
    assert.throws(() => parseCli(['7', '--seed', '8']), /give one seed/);
    assert.throws(() => parseCli(['7', '1..3']), /either --seed or --seeds/);
    assert.throws(() => optionsFor(1, { loss: 2 }), /must be a number in \[0, 1\]/);
    assert.throws(() => optionsFor(1, { nodes: 3, learners: 2 }), /majority/);
    const slowPipe = optionsFor(14, { 'segment-entries': 1 });
    assert.ok(
      slowPipe.workload.writeIntervalMsMean >= writeIntervalMsFloor(slowPipe),
      'the write-rate floor follows overridden limits',
    );
    assert.equal(
      optionsFor(14, { 'segment-entries': 1, 'write-interval-ms': 5 }).workload.writeIntervalMsMean,
      5,
      'unless the rate is pinned',
    );
    for (let seed = 1; seed <= 30; seed++) {
      const o = optionsFor(seed, { learners: 3, 'old-peers': 7 });
      assert.ok(
        o.founderLearnerCount <= Math.floor((o.founderCount - 1) / 2) && o.oldPeerCount <= o.founderCount,
        `seed ${seed} clamped`,
      );
    }
  });

  it('prints `seed=N result=pass events=E trace=HEX` as its last line, the same twice', () => {
    const run = () =>
      spawnSync(process.execPath, ['--import', 'tsx', 'sim/cli.ts', '--seed', '7', '--safety-s', '10'], {
        encoding: 'utf8',
        timeout: 60_000,
      });
    const first = run();
    const second = run();
    assert.equal(first.status, 0, first.stderr);
    const last = first.stdout.trim().split('\n').at(-1)!;
    assert.match(last, /^seed=7 result=pass events=\d+ trace=[0-9a-f]{64}$/);
    assert.equal(second.stdout.trim().split('\n').at(-1), last);
  });

  it("--list-checkers prints every checker's name, one a line, linearizability included", () => {
    assert.deepEqual(parseCli(['--list-checkers']), { mode: 'list-checkers' });
    assert.throws(() => parseCli(['--list-checkers', '--seed', '1']), /no other arguments/);
    const out = spawnSync(process.execPath, ['--import', 'tsx', 'sim/cli.ts', '--list-checkers'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(out.status, 0, out.stderr);
    const names = out.stdout.trim().split('\n');
    for (const name of ['election-safety', 'durability', 'state-machine-safety', 'liveness', 'linearizability'])
      assert.ok(names.includes(name), name);
    assert.ok(
      names.every((n) => /^[a-z-]+$/.test(n)),
      'one bare name a line',
    );
    assert.equal(new Set(names).size, names.length);
  });

  it("checks the clients' history at the end of a run and prints the verdict", () => {
    const result = runSim(optionsFor(7, SHORT));
    assert.equal(result.linearizability?.verdict, 'ok');
    assert.ok(result.linearizability!.operationCount > 50);
    assert.ok(result.counts.readsServed > 0);
    const out = spawnSync(process.execPath, ['--import', 'tsx', 'sim/cli.ts', '--seed', '7', '--safety-s', '10'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.match(out.stdout, /^linearizability: ok \(\d+ operations, \d+ search steps\)$/m);
  });

  it('exits 2 with a clear message when the trace file cannot be written', () => {
    const out = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'sim/cli.ts', '--seed', '1', '--trace', '/nonexistent-dir/t.jsonl'],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(out.status, 2);
    assert.match(out.stderr, /ENOENT/);
  });

  it('exits 2 with the usage on a bad argument', () => {
    const out = spawnSync(process.execPath, ['--import', 'tsx', 'sim/cli.ts', '--seeds', 'x'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(out.status, 2);
    assert.match(out.stderr, /--seeds needs A\.\.B/);
    assert.match(out.stderr, /usage: npm run sim/);
  });
});
