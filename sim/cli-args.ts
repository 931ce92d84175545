// Command-line parsing for `npm run sim`: bad input gets a clear error, never a crash.
//
// npm takes the flags written before `--` for itself: `npm run sim --seed 7` hands the script only `7` and
// sets npm_config_seed=true, `npm run sim --seed=7` hands it nothing and sets npm_config_seed=7. So a bare
// number is a seed and a bare A..B a sweep (`npm run sim 7` works too), and under npm (npm_lifecycle_event
// sim) npm_config_seed / npm_config_seeds with a value count as --seed / --seeds when the arguments give none.
import { FOREIGN_RATE_FORCED, OVERRIDES, type OverrideValues } from './options.js';
import { SWEEP_JOBS_MAX, type Shard } from './sweep.js';

/** SWEEP_SEED_COUNT_MAX bounds one --seeds range. */
export const SWEEP_SEED_COUNT_MAX = 1_000_000;

export type CliRequest =
  | { mode: 'help' }
  | { mode: 'list-checkers' }
  | { mode: 'scenario'; file: string }
  /** view: write the trace viewer page for a --trace file (to viewOut, or a temp file). */
  | { mode: 'view'; traceFile: string; viewOut?: string }
  | {
      mode: 'single';
      seed: number;
      overrides: OverrideValues;
      onlyFaults: number[] | null;
      traceFile?: string;
      shrink: boolean;
      verbose: boolean;
      view?: boolean;
      viewOut?: string;
    }
  | {
      mode: 'sweep';
      firstSeed: number;
      lastSeed: number;
      overrides: OverrideValues;
      /** jobs: threads running seeds, this one and jobs - 1 workers (1 = this thread only). */
      jobs: number;
      /** shard: run only every shard.count-th seed of the range, from its shard.index-th; null = all. */
      shard: Shard | null;
      /** eachSeed: print every seed's line (`seed=N result=… events=E trace=HEX`), in seed order. */
      eachSeed: boolean;
    };

/**
 * isRecordingReplay: the arguments ask for a flight recording's replay (`--replay PATH…`, sim/replay/cli.ts), which
 * has its own arguments. No knob is spelt `--replay` (the late-replay fault's is `--replay-rate`), so a printed
 * reproduction never lands here.
 */
export function isRecordingReplay(argv: readonly string[]): boolean {
  return argv.includes('--replay');
}

export function usage(): string {
  const knobs = OVERRIDES.map((o) => `  --${o.flag.padEnd(20)} ${o.describe} [${o.min}..${o.max}]`).join('\n');
  return [
    'usage: npm run sim -- --seed N [options]      one run; last line: seed=N result=pass|fail events=E trace=HEX',
    '       npm run sim -- --seeds A..B [knobs]     a sweep; lists failing seeds',
    '         --jobs N               run the sweep on N threads, this one and N-1 workers (same output, in seed order)',
    '         --shard I/N            run only seeds A+I, A+I+N, ... (0 <= I < N): one part of a sweep split N ways',
    "         --each-seed            print every seed's line (seed=N result=… events=E trace=HEX), in seed order",
    '       npm run sim N | npm run sim --seed N    one run too (so is A..B for a sweep); options still go after --',
    '       npm run sim -- --scenario FILE          run one scripted scenario (scenarios/*.txt)',
    "       npm run sim -- --list-checkers          print every checker's name, one a line",
    '',
    '       npm run sim -- --view-file FILE         write the trace viewer page for a --trace FILE; prints its path',
    '',
    '  --trace FILE             write one JSON line per event',
    '  --view                   also write the trace viewer page (a static HTML file) and print its path',
    '  --view-out FILE          where --view / --view-file write the page (default: the temp directory)',
    '  --only-faults LIST       keep only these fault-schedule indices (comma list, or "none")',
    '  --no-shrink              do not shrink a failing run',
    '  --verbose                print the options and the fault schedule',
    `  --foreign-traffic        forged calls from outside the cluster in every seed (= --foreign-rate ${FOREIGN_RATE_FORCED})`,
    '',
    'knobs (pin a per-seed swarm choice):',
    knobs,
  ].join('\n');
}

/** NpmEnv is the part of the environment npm uses to pass the flags it took (process.env fits). */
export type NpmEnv = Readonly<Record<string, string | undefined>>;

/** npmFlags reads the --seed / --seeds npm took from before `--` (as `--seed=N`), when npm runs the sim script. */
function npmFlags(env: NpmEnv): string[] {
  if (env.npm_lifecycle_event !== 'sim') return [];
  const flags: string[] = [];
  for (const name of ['seed', 'seeds']) {
    const value = env[`npm_config_${name}`];
    // 'true' is `--seed 7`: npm took the flag alone and passed 7 on as an argument.
    if (value !== undefined && value !== '' && value !== 'true') flags.push(`--${name}`, value);
  }
  return flags;
}

/** MissingSeedError: the arguments name no run at all (npm may hold its seed). */
class MissingSeedError extends Error {}

/** parseCli reads the arguments; only when they name no seed do the flags npm took count (env: process.env). */
export function parseCli(argv: readonly string[], env: NpmEnv = {}): CliRequest {
  // `npm run sim --seeds 1..500 --foreign-traffic` (no `--`): npm keeps the valueless flag for itself.
  const args =
    env.npm_lifecycle_event === 'sim' &&
    env.npm_config_foreign_traffic === 'true' &&
    !argv.includes('--foreign-traffic')
      ? [...argv, '--foreign-traffic']
      : argv;
  try {
    return parseArgs(args);
  } catch (err) {
    const fromNpm = npmFlags(env);
    if (!(err instanceof MissingSeedError) || fromNpm.length === 0) throw err;
    return parseArgs([...fromNpm, ...args]);
  }
}

function parseArgs(argv: readonly string[]): CliRequest {
  const args = argv.flatMap((a) =>
    a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a],
  );
  let seed: number | null = null;
  let range: [number, number] | null = null;
  let traceFile: string | undefined;
  let onlyFaults: number[] | null = null;
  let shrink = true;
  let verbose = false;
  let foreignTraffic = false;
  let view = false;
  let viewOut: string | undefined;
  let viewFile: string | undefined;
  let jobs: number | null = null;
  let shard: Shard | null = null;
  let eachSeed = false;
  const overrides: OverrideValues = {};
  for (let i = 0; i < args.length; i++) {
    const flag = args[i]!;
    const value = (): string => {
      const v = args[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    switch (flag) {
      case '--help':
      case '-h':
        return { mode: 'help' };
      case '--list-checkers':
        if (args.length !== 1) throw new Error('--list-checkers takes no other arguments');
        return { mode: 'list-checkers' };
      case '--scenario': {
        const file = value();
        if (args.length !== 2) throw new Error('--scenario FILE takes no other arguments');
        return { mode: 'scenario', file };
      }
      case '--seed':
        if (seed !== null) throw new Error('give one seed, or --seeds A..B');
        seed = parseSeed(value(), flag);
        break;
      case '--seeds':
        range = parseRange(value());
        break;
      case '--trace':
        traceFile = value();
        break;
      case '--view':
        view = true;
        break;
      case '--view-out':
        viewOut = value();
        break;
      case '--view-file':
        viewFile = value();
        break;
      case '--only-faults':
        onlyFaults = parseList(value());
        break;
      case '--no-shrink':
        shrink = false;
        break;
      case '--verbose':
        verbose = true;
        break;
      case '--foreign-traffic':
        foreignTraffic = true;
        break;
      case '--jobs':
        jobs = parseJobs(value());
        break;
      case '--shard':
        shard = parseShard(value());
        break;
      case '--each-seed':
        eachSeed = true;
        break;
      default: {
        if (/^\d+$/.test(flag)) {
          if (seed !== null) throw new Error('give one seed, or --seeds A..B');
          seed = parseSeed(flag, 'a seed');
          break;
        }
        if (/^\d+\.\.\d+$/.test(flag)) {
          range = parseRange(flag);
          break;
        }
        const override = flag.startsWith('--') ? OVERRIDES.find((o) => o.flag === flag.slice(2)) : undefined;
        if (!override) throw new Error(`unknown argument ${flag}`);
        const text = value();
        const number = Number(text);
        if (text.trim() === '' || !Number.isFinite(number)) throw new Error(`${flag} needs a number, got "${text}"`);
        overrides[override.flag] = number;
      }
    }
  }
  if (viewFile !== undefined) {
    if (args.length !== (viewOut === undefined ? 2 : 4))
      throw new Error('--view-file FILE takes only --view-out FILE besides');
    return { mode: 'view', traceFile: viewFile, viewOut };
  }
  if (foreignTraffic && overrides['foreign-rate'] === undefined) overrides['foreign-rate'] = FOREIGN_RATE_FORCED;
  if (seed !== null && range !== null) throw new Error('give either --seed or --seeds, not both');
  if (range !== null) {
    if (traceFile !== undefined || onlyFaults !== null || view || viewOut !== undefined)
      throw new Error('--trace, --view and --only-faults apply to one --seed run');
    return { mode: 'sweep', firstSeed: range[0], lastSeed: range[1], overrides, jobs: jobs ?? 1, shard, eachSeed };
  }
  if (jobs !== null || shard !== null || eachSeed)
    throw new Error('--jobs, --shard and --each-seed apply to a --seeds sweep');
  if (seed === null) throw new MissingSeedError('missing --seed N or --seeds A..B');
  if (viewOut !== undefined && !view) throw new Error('--view-out needs --view (or --view-file)');
  const single: CliRequest = { mode: 'single', seed, overrides, onlyFaults, traceFile, shrink, verbose };
  return view ? { ...single, view, viewOut } : single;
}

function parseSeed(text: string, flag: string): number {
  if (!/^\d{1,15}$/.test(text)) throw new Error(`${flag} needs a whole number >= 0, got "${text}"`);
  return Number(text);
}

function parseRange(text: string): [number, number] {
  const match = /^(\d{1,15})\.\.(\d{1,15})$/.exec(text);
  if (!match) throw new Error(`--seeds needs A..B (e.g. 1..500), got "${text}"`);
  const first = Number(match[1]);
  const last = Number(match[2]);
  if (last < first) throw new Error(`--seeds ${text}: the range is empty`);
  if (last - first + 1 > SWEEP_SEED_COUNT_MAX)
    throw new Error(`--seeds ${text}: at most ${SWEEP_SEED_COUNT_MAX} seeds per sweep`);
  return [first, last];
}

function parseJobs(text: string): number {
  if (!/^\d{1,3}$/.test(text) || Number(text) < 1 || Number(text) > SWEEP_JOBS_MAX)
    throw new Error(`--jobs needs a whole number in [1, ${SWEEP_JOBS_MAX}], got "${text}"`);
  return Number(text);
}

function parseShard(text: string): Shard {
  const match = /^(\d{1,7})\/(\d{1,7})$/.exec(text);
  const shard = match ? { index: Number(match[1]), count: Number(match[2]) } : null;
  if (!shard || shard.count < 1 || shard.index >= shard.count || shard.count > SWEEP_SEED_COUNT_MAX)
    throw new Error(`--shard needs I/N with 0 <= I < N <= ${SWEEP_SEED_COUNT_MAX} (e.g. 0/4), got "${text}"`);
  return shard;
}

function parseList(text: string): number[] {
  if (text === 'none' || text === '') return [];
  const parts = text.split(',');
  if (!parts.every((p) => /^\d{1,6}$/.test(p)))
    throw new Error(`--only-faults needs a comma list of indices, got "${text}"`);
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}
