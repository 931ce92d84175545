import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { parseCli } from '../../sim/cli-args.js';
import { runSeed, shardSeeds, sweepSeeds, type SeedOutcome } from '../../sim/sweep.js';

/** SHORT: a short safety phase keeps these whole runs quick. */
const SHORT = { 'safety-s': 10 };
const SEEDS = [1, 2, 3, 4, 5];

async function sweep(seeds: readonly number[], jobs: number, thisThreadRuns = true): Promise<SeedOutcome[]> {
  const out: SeedOutcome[] = [];
  const byWorkers = await sweepSeeds(seeds, SHORT, jobs, (o) => out.push(o), undefined, { thisThreadRuns });
  if (!thisThreadRuns) assert.equal(byWorkers, seeds.length, 'every seed ran on a worker thread');
  return out;
}

function cli(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['--import', 'tsx', 'sim/cli.ts', ...args], {
    encoding: 'utf8',
    timeout: 180_000,
  });
}

/** withoutTiming drops the wall-clock part of the summary line (the only line --jobs may change). */
function withoutTiming(stdout: string): string {
  return stdout.replace(/ \(\d+\.\d s wall, \d+x real time( on \d+ threads)?\)/, ' (timing)');
}

describe('sim/sweep', () => {
  it('--jobs 2 gives every seed the outcome and trace hash it gets in one thread, reported in seed order', async () => {
    const one = await sweep(SEEDS, 1);
    const two = await sweep(SEEDS, 2);
    assert.deepEqual(
      two.map((o) => o.seed),
      SEEDS,
    );
    assert.deepEqual(two, one);
    for (const o of one) assert.match(o.traceHash, /^[0-9a-f]{64}$/, `seed ${o.seed}`);
    // And the same as a plain run of the seed in this thread.
    assert.deepEqual(runSeed(3, SHORT), one[2]);
    // With every seed on the two workers (this thread runs none), the same again.
    assert.deepEqual(await sweep(SEEDS, 2, false), one);
  });

  it('--shard i/n: shards 0/3, 1/3 and 2/3 partition a range, each taking every third seed from its own', () => {
    const parts = [0, 1, 2].map((index) => shardSeeds(10, 30, { index, count: 3 }));
    assert.deepEqual(parts[0], [10, 13, 16, 19, 22, 25, 28]);
    assert.deepEqual(parts[1], [11, 14, 17, 20, 23, 26, 29]);
    assert.deepEqual(parts[2], [12, 15, 18, 21, 24, 27, 30]);
    const all = parts.flat().sort((a, b) => a - b);
    assert.deepEqual(all, shardSeeds(10, 30, null));
    assert.equal(new Set(all).size, all.length);
    assert.deepEqual(shardSeeds(1, 2, { index: 4, count: 5 }), []);
  });

  it('parses --jobs, --shard and --each-seed for a sweep only, and refuses bad values', () => {
    const request = parseCli(['--seeds', '1..9', '--jobs', '2', '--shard', '1/3', '--each-seed']);
    assert.deepEqual(request, {
      mode: 'sweep',
      firstSeed: 1,
      lastSeed: 9,
      overrides: {},
      jobs: 2,
      shard: { index: 1, count: 3 },
      eachSeed: true,
    });
    assert.equal((parseCli(['--seeds', '1..9']) as { jobs: number }).jobs, 1);
    for (const bad of [
      ['--seeds', '1..9', '--jobs', '0'],
      ['--seeds', '1..9', '--jobs', '65'],
      ['--seeds', '1..9', '--jobs', 'two'],
      ['--seeds', '1..9', '--shard', '3/3'],
      ['--seeds', '1..9', '--shard', '1/0'],
      ['--seeds', '1..9', '--shard', '1'],
      ['--seed', '7', '--jobs', '2'],
      ['--seed', '7', '--shard', '0/2'],
    ])
      assert.throws(() => parseCli(bad), /--jobs|--shard/, bad.join(' '));
  });

  it('the CLI prints the same lines with --jobs 2 as with --jobs 1 (timing aside), and shards split the seed lines', () => {
    const args = ['--seeds', '1..4', '--safety-s', '10', '--each-seed'];
    const one = cli(args);
    const two = cli([...args, '--jobs', '2']);
    assert.equal(one.status, 0, one.stderr);
    assert.equal(two.status, 0, two.stderr);
    assert.equal(withoutTiming(two.stdout), withoutTiming(one.stdout));
    const seedLines = (stdout: string): string[] => stdout.split('\n').filter((l) => /^seed=\d+ result=/.test(l));
    assert.deepEqual(
      seedLines(one.stdout).map((l) => l.split(' ')[0]),
      ['seed=1', 'seed=2', 'seed=3', 'seed=4'],
    );
    const shards = [0, 1].map((i) => cli([...args, '--shard', `${i}/2`]));
    for (const s of shards) assert.equal(s.status, 0, s.stderr);
    assert.match(shards[1]!.stdout, /^seeds=1\.\.4 shard=1\/2 passed=2 failed=0$/m);
    const merged = shards.flatMap((s) => seedLines(s.stdout)).sort();
    assert.deepEqual(merged, seedLines(one.stdout).sort());
  });
});
