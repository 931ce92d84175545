// Mutation check (not a test): each mutation breaks one protocol rule in a private copy of the
// repository (a git worktree), then the scenarios and a short simulator sweep run against it. A
// mutation that nothing catches is a hole in our checks. The engine unit tests run too. Usage:
//   npx tsx bench/mutations.ts [seedCount=30] [name ...]
//   npx tsx bench/mutations.ts --check       only check every mutation still applies (exit 1 if not)
// The list is bench/mutation-list.ts.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MUTATIONS, armingProblems } from './mutation-list.js';

const root = new URL('..', import.meta.url).pathname;
if (process.argv[2] === '--check') {
  const problems = armingProblems(root);
  for (const p of problems) console.log(p);
  console.log(problems.length === 0 ? `all ${MUTATIONS.length} mutations apply` : `${problems.length} problem(s)`);
  process.exit(problems.length === 0 ? 0 : 1);
}
const seedCount = Number(process.argv[2] ?? 30);
const only = process.argv.slice(3);

function runIn(
  dir: string,
  args: string[],
  timeoutMs: number,
  env: Record<string, string> = {},
): { ok: boolean; out: string } {
  const r = spawnSync(args[0]!, args.slice(1), {
    cwd: dir,
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, FORCE_COLOR: '0', ...env },
  });
  return { ok: r.status === 0, out: `${r.stdout}\n${r.stderr}` };
}

interface Catch {
  seed: number;
  invariant: string;
  atS: number;
}

/** sweepTimed runs the sweep and notes, for each failing seed, when (seconds into the sweep) it was reported. */
function sweepTimed(dir: string, count: number): Promise<Catch[]> {
  return new Promise((resolve) => {
    const startedMs = performance.now();
    const child = spawn('npx', ['tsx', 'sim/cli.ts', '--seeds', `1..${count}`], {
      cwd: dir,
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    const caught: Catch[] = [];
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const m = /^seed=(\d+) result=fail invariant=([\w-]+)/.exec(line);
        if (m) caught.push({ seed: Number(m[1]), invariant: m[2]!, atS: (performance.now() - startedMs) / 1_000 });
      }
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 1_200_000);
    child.on('close', () => {
      clearTimeout(timer);
      resolve(caught);
    });
  });
}

const rows: string[] = [];
for (const m of MUTATIONS) {
  if (only.length > 0 && !only.includes(m.name)) continue;
  const dir = mkdtempSync(join(tmpdir(), 'svc-mut-'));
  try {
    execFileSync('git', ['worktree', 'add', '--detach', dir, 'HEAD'], { cwd: root, stdio: 'ignore' });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    const path = join(dir, m.file);
    const text = readFileSync(path, 'utf8');
    if (!text.includes(m.find)) {
      rows.push(`${m.name.padEnd(28)} NOT APPLIED (source changed)`);
      continue;
    }
    writeFileSync(path, text.replace(m.find, m.replace));
    const scen = runIn(dir, ['npx', 'mocha', '--config', '.mocharc.scenarios.json'], 300_000);
    const failedScenarios = [...scen.out.matchAll(/^\s+\d+\) (?:scenarios\s+)?([\w-]+):?$/gm)]
      .map((x) => x[1])
      .filter((x) => x !== 'scenarios');
    const units = runIn(
      dir,
      ['npx', 'mocha', '--no-config', '--node-option', 'import=tsx', '--timeout', '120000', 'test/engine/*.test.ts'],
      300_000,
    );
    const failedUnits = [...new Set([...units.out.matchAll(/^\s+\d+\) (engine[\w /-]*)$/gm)].map((x) => x[1]!.trim()))];
    const caughtBySweep = await sweepTimed(dir, seedCount);
    const invariants = [...new Set(caughtBySweep.map((c) => c.invariant))];
    const firstCatches = invariants
      .map((inv) => caughtBySweep.find((c) => c.invariant === inv)!)
      .map((c) => `${c.invariant} (seed ${c.seed}, ${c.atS.toFixed(0)} s)`);
    // The fixed regression seeds (test/sim/regression-seeds.test.ts) without its random sweep.
    const regressions = runIn(
      dir,
      [
        'npx',
        'mocha',
        '--no-config',
        '--node-option',
        'import=tsx',
        '--timeout',
        '600000',
        'test/sim/regression-seeds.test.ts',
      ],
      1_200_000,
      { SVC_SIM_SWEEP_SEEDS: '0' },
    );
    const failedSeeds = [...new Set([...regressions.out.matchAll(/^\s+\d+\) .*?seed (\d+)/gm)].map((x) => x[1]))];
    const caught = failedScenarios.length > 0 || invariants.length > 0 || !units.ok || !regressions.ok;
    // An engine test on the simulated world may fail by a checker's InvariantViolation: that checker caught it too.
    const unitInvariants = [...units.out.matchAll(/InvariantViolation: ([\w-]+):/g)].map((x) => x[1]!);
    const targetHit =
      m.target === undefined
        ? ''
        : ` target ${m.target}: ${[...invariants, ...unitInvariants, ...failedScenarios].includes(m.target) ? 'hit' : 'NOT HIT'};`;
    rows.push(
      `${m.name.padEnd(28)} ${caught ? 'CAUGHT ' : 'MISSED '}${targetHit} scenarios: ${[...new Set(failedScenarios)].join(', ') || '-'}; engine tests: ${failedUnits.join(', ') || (units.ok ? '-' : 'failed')}; sim invariants (first seed, seconds into the sweep): ${firstCatches.join(', ') || '-'}; regression seeds: ${failedSeeds.join(', ') || (regressions.ok ? '-' : 'failed')}  (${m.rule})`,
    );
  } finally {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: root, stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(rows[rows.length - 1]);
}
console.log(
  `\n${rows.filter((r) => r.includes('CAUGHT')).length}/${rows.length} mutations caught (scenarios + engine tests + sim seeds 1..${seedCount} + the regression seeds)`,
);
