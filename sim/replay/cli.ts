// npm run sim -- --replay PATH... [--view] [--view-out FILE] [--trace FILE] [--to-scenario [FILE.txt]]
// Each PATH is one member's recording (its <data-dir>/recording directory, or one segment file), or a
// `svc debug bundle` file (*.tar.gz), unpacked into a temporary folder for the replay (every member in it). Every
// run of every member is replayed on this build's engine and each step's effects digest compared with the
// node's; the checkers that a partial history allows run over what the replays produced; --view draws
// all members as one space-time diagram on the wall-clock axis. Last line:
// `replay result=pass|fail members=N steps=NAME:MATCHED/RECORDED,...`.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { extractBundle, isBundleFile } from '../../recording/bundle.js';
import { readRecording } from '../../recording/reader.js';
import { defaultViewPath, writeView } from '../view/write.js';
import { checkPartialHistory, PARTIAL_HISTORY_CHECKS } from './checks.js';
import { replayRun, type Divergence, type ReplayEngineFactory, type RunReplay } from './replay.js';
import { toScenario } from './to-scenario.js';
import { replayTrace } from './trace.js';

export interface ReplayRequest {
  paths: string[];
  view: boolean;
  viewOut?: string;
  traceFile?: string;
  /** toScenario: write the incident as a scenario file there ('' = a name under scenarios/). */
  toScenario?: string;
}

export const REPLAY_USAGE = `usage: npm run sim -- --replay PATH... [--view] [--view-out FILE] [--trace FILE] [--to-scenario [FILE.txt]]
  PATH      a member's recording: its <data-dir>/recording directory or one seg-*.rec file,
            or a \`svc debug bundle\` file (*.tar.gz): every member's recording in it
  --view    write the space-time diagram of every member (wall-clock axis) and print view=PATH
  --trace   write the aligned trace (the viewer's input) to FILE
  --to-scenario  write the incident's events as a scenario the lockstep world runs (default scenarios/recorded-TIME.txt)`;

export function parseReplayArgs(argv: string[]): ReplayRequest {
  const request: ReplayRequest = { paths: [], view: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--replay') continue;
    if (arg === '--view') request.view = true;
    else if (arg === '--to-scenario') {
      const next = argv[i + 1];
      request.toScenario = next !== undefined && next.endsWith('.txt') ? argv[++i]! : '';
    } else if (arg === '--view-out' || arg === '--trace') {
      const value = argv[++i];
      if (value === undefined) throw new Error(`${arg} needs a file`);
      if (arg === '--view-out') {
        request.view = true;
        request.viewOut = value;
      } else request.traceFile = value;
    } else if (arg.startsWith('--'))
      throw new Error(
        `--replay (a flight recording's replay) does not take ${arg}; the late-replay fault's probability is --replay-rate P`,
      );
    else request.paths.push(arg);
  }
  if (request.paths.length === 0) throw new Error('--replay needs at least one recording path');
  return request;
}

/**
 * expandBundles replaces each bundle file among the paths by the recording folders it holds, unpacked into
 * a temporary folder that `cleanup` removes.
 */
export function expandBundles(paths: readonly string[]): { paths: string[]; cleanup: () => void } {
  const temporary: string[] = [];
  const cleanup = (): void => {
    for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
  };
  const expanded: string[] = [];
  try {
    for (const path of paths) {
      if (!isBundleFile(path)) {
        expanded.push(path);
        continue;
      }
      const dir = mkdtempSync(join(tmpdir(), 'svc-replay-bundle-'));
      temporary.push(dir);
      const recordings = extractBundle(path, dir);
      if (recordings.length === 0) throw new Error(`${path} holds no member's recording`);
      expanded.push(...recordings);
    }
  } catch (error) {
    cleanup();
    throw error;
  }
  return { paths: expanded, cleanup };
}

export interface ReplayOutcome {
  runs: RunReplay[];
  ok: boolean;
}

/** replayPaths replays every run of every path; `engine` lets a test plant a bug in the engine. */
export function replayPaths(
  paths: readonly string[],
  write: (line: string) => void,
  options: { engine?: ReplayEngineFactory; keepSteps?: boolean } = {},
): ReplayOutcome {
  const runs: RunReplay[] = [];
  for (const path of paths) {
    for (const recorded of readRecording(path)) {
      const replay = replayRun(recorded, { engine: options.engine, keepSteps: options.keepSteps ?? true });
      runs.push(replay);
      const head = `replay ${replay.node} run=${replay.run}${replay.build ? ` build=${replay.build}` : ''}`;
      if (replay.skipped && replay.matched === 0) {
        write(`${head}: not replayed (${replay.skipped}); ${replay.recorded} steps recorded`);
        continue;
      }
      const extra = [
        replay.fromCheckpoint > 0
          ? `started from the checkpoint after step ${replay.fromCheckpoint}: the run's start rotated out of the ring`
          : '',
        replay.skipped ? `stopped: ${replay.skipped}` : '',
        replay.gap ? `recording gap ${replay.gap}` : '',
        recorded.torn > 0 ? `${recorded.torn} torn line at a segment end (crash)` : '',
      ].filter((s) => s !== '');
      write(
        `${head}: ${replay.matched}/${replay.recorded} steps identical${replay.divergence ? ', DIVERGED' : ''}` +
          (extra.length > 0 ? ` (${extra.join('; ')})` : ''),
      );
      if (replay.divergence) for (const line of describeDivergence(replay.divergence)) write(line);
    }
  }
  const violations = checkPartialHistory(runs);
  write(
    `checks on the partial history (${PARTIAL_HISTORY_CHECKS.join(', ')}): ${violations.length === 0 ? 'pass' : `${violations.length} violations`}`,
  );
  for (const v of violations) write(`  ${v.check} on ${v.node}: ${v.message}`);
  const ok = violations.length === 0 && runs.every((r) => r.divergence === null);
  return { runs, ok };
}

export function describeDivergence(d: Divergence): string[] {
  return [
    `DIVERGED node=${d.node} run=${d.run} step=${d.step} tick=${d.tick} at=${new Date(d.atMs).toISOString()}`,
    `  input: ${d.input}`,
    `  recorded effects (digest ${d.recorded.digest}):`,
    ...(d.recorded.effects.length > 0
      ? d.recorded.effects.map((e) => `    ${e}`)
      : ['    (format 3 records the digest alone; the steps after this one show what the node did next)']),
    `  replayed effects (digest ${d.replayed.digest}):`,
    ...d.replayed.effects.map((e) => `    ${e}`),
    `  replayed, canonical: ${d.replayed.canonical.slice(0, 4000)}`,
  ];
}

export function replayMain(argv: string[]): number {
  let request: ReplayRequest;
  try {
    request = parseReplayArgs(argv);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${REPLAY_USAGE}\n`);
    return 2;
  }
  const write = (line: string): void => void process.stdout.write(`${line}\n`);
  let outcome: ReplayOutcome;
  let recordings: { paths: string[]; cleanup: () => void } | null = null;
  try {
    recordings = expandBundles(request.paths);
    outcome = replayPaths(recordings.paths, write);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  } finally {
    // The replay holds every step in memory: the unpacked files are not needed past it.
    recordings?.cleanup();
  }
  if (request.view || request.traceFile !== undefined) {
    const title = `replay of ${request.paths.map((p) => basename(p)).join(', ')}`;
    const trace = replayTrace(outcome.runs, title);
    const viewOut = request.view ? (request.viewOut ?? defaultViewPath('replay')) : undefined;
    const traceFile = request.traceFile ?? viewOut!.replace(/(\.html?)?$/, '.jsonl');
    writeFileSync(traceFile, `${trace.lines.join('\n')}\n`);
    write(`trace=${traceFile} (${trace.messages} messages, ${trace.matched} calls matched across members)`);
    if (viewOut !== undefined) {
      const written = writeView(traceFile, viewOut, title);
      write(`view=${written.path} (open it in a browser)`);
    }
  }
  if (request.toScenario !== undefined) {
    const file =
      request.toScenario === ''
        ? join('scenarios', `recorded-${new Date().toISOString().replace(/[:.]/g, '-')}.txt`)
        : request.toScenario;
    writeFileSync(file, toScenario(outcome.runs, request.paths.join(' ')));
    write(`scenario=${file} (run it: npm run sim -- --scenario ${file})`);
  }
  const byNode = new Map<string, { matched: number; recorded: number }>();
  for (const run of outcome.runs) {
    const n = byNode.get(run.node) ?? { matched: 0, recorded: 0 };
    n.matched += run.matched;
    n.recorded += run.recorded;
    byNode.set(run.node, n);
  }
  const steps = [...byNode].map(([node, n]) => `${node}:${n.matched}/${n.recorded}`).join(',');
  write(
    `replay result=${outcome.ok ? 'pass' : 'fail'} members=${byNode.size} runs=${outcome.runs.length} steps=${steps}`,
  );
  return outcome.ok ? 0 : 1;
}
