// Where a simulator run spends its time (not a test): reads the .cpuprofile files V8 writes and
// prints self time per folder, the top functions by self time, the time spent inside the engine
// (Engine.step and Engine.status with everything they call) by function, and the inclusive time of
// the world's parts (checkers, trace, wire codec, state machine).
//
//   npx tsx bench/sim-profile.ts [A..B] [topCount]     profiles a sweep of seeds A..B (default 1..10), then summarises
//   node --cpu-prof --cpu-prof-dir=/tmp/simprof --import tsx sim/cli.ts --seeds 1..20
//   npx tsx bench/sim-profile.ts /tmp/simprof [topCount]  summarises profiles written already
//
// Under tsx every frame reports line 1 (the transform does not keep lines), so a function's line is
// looked up in its .ts source by its name (the first definition of that name in the file).
// Samples are wall-clock: on a loaded machine a descheduled thread's time lands on whatever it ran,
// so shares are the figure to read, not milliseconds. V8's own profile format, read directly: no
// maintained npm package summarises it by folder and by subtree, which is what this needs.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const ROOT = join(import.meta.dirname, '..');
const TOP_COUNT_DEFAULT = 15;
const PROFILE_SEEDS_DEFAULT = '1..10';

/** PARTS: the world's parts, by the function that enters each (inclusive time, not counted twice). */
const PARTS: [label: string, prefix: string][] = [
  ['engine step (Engine.step)', 'step engine/engine.ts'],
  ['engine status (Engine.status)', 'status engine/engine.ts'],
  ['checkers after each step', 'afterStep sim/checkers/suite.ts'],
  ['checkers before each effect', 'beforeEffect sim/checkers/suite.ts'],
  ['checkers on append', 'onAppend sim/checkers/suite.ts'],
  ['checkers on apply', 'onApply sim/checkers/suite.ts'],
  ['checkers on artifact', 'onArtifact sim/checkers/suite.ts'],
  ['linearizability (end of run)', 'checkLinearizability sim/checkers/linearizability.ts'],
  ['trace line text', 'traceLine sim/trace-format.ts'],
  ['trace hashing (record)', 'record sim/trace.ts'],
  ['world event lines', 'recordWorld sim/cluster.ts'],
  ['protobuf round trip (wire.ts)', 'roundTrip sim/wire.ts'],
  ['state machine apply', 'apply sim/state-machine.ts'],
  ['snapshot capture (BLAKE3)', 'captureArtifact sim/artifacts.ts'],
  ['garbage collector', '(garbage collector)'],
];

function frameFile(url: string): string {
  if (url === '') return '';
  const path = url.replace(/^file:\/\//, '');
  return path.startsWith('/') ? relative(ROOT, path) : path;
}

const lineCache = new Map<string, number>();

/** sourceLine finds a function's definition line in a .ts file of this repository (0 = not found). */
function sourceLine(file: string, fn: string): number {
  const key = `${file}#${fn}`;
  const cached = lineCache.get(key);
  if (cached !== undefined) return cached;
  let line = 0;
  const path = join(ROOT, file);
  if (file.endsWith('.ts') && fn !== '' && existsSync(path)) {
    const escaped = fn.replace(/[$]/g, '\\$');
    const definition = new RegExp(
      `(function\\*?\\s+${escaped}\\b|^\\s*(?:(?:private|public|protected|static|readonly|async|get|set)\\s+)*${escaped}\\s*[(<]|\\b${escaped}\\s*=\\s*(?:\\(|function|async))`,
    );
    const lines = readFileSync(path, 'utf8').split('\n');
    const at = lines.findIndex((l) => definition.test(l));
    line = at + 1;
  }
  lineCache.set(key, line);
  return line;
}

function frameName(frame: CallFrame): string {
  const file = frameFile(frame.url);
  const fn = frame.functionName || '(anonymous)';
  if (file === '') return fn;
  const line = sourceLine(file, frame.functionName);
  return `${fn} ${file}${line > 0 ? `:${line}` : ''}`;
}

function folderOf(frame: CallFrame): string {
  const file = frameFile(frame.url);
  if (file === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (file.startsWith('node:')) return 'node internals';
  const modules = file.indexOf('node_modules/');
  if (modules >= 0) return file.slice(modules).split('/').slice(0, 2).join('/');
  const parts = file.split('/');
  return parts[0] === 'sim' && parts.length > 2 ? `${parts[0]}/${parts[1]}/` : `${parts[0]}/`;
}

class Totals {
  readonly byKey = new Map<string, number>();
  add(key: string, us: number): void {
    this.byKey.set(key, (this.byKey.get(key) ?? 0) + us);
  }
  top(count: number): [string, number][] {
    return [...this.byKey].sort((a, b) => b[1] - a[1]).slice(0, count);
  }
}

function main(): void {
  const what = process.argv[2] ?? PROFILE_SEEDS_DEFAULT;
  const topCount = Number(process.argv[3] ?? TOP_COUNT_DEFAULT);
  if (/^\d+\.\.\d+$/.test(what)) {
    const dir = mkdtempSync(join(tmpdir(), 'sim-profile-'));
    try {
      console.log(`profiling npm run sim -- --seeds ${what} ...`);
      const run = spawnSync(
        process.execPath,
        ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--import', 'tsx', 'sim/cli.ts', '--seeds', what],
        { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
      );
      console.log(run.stdout.split('\n')[0]);
      summarise(dir, topCount);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  summarise(what, topCount);
}

function summarise(dir: string, topCount: number): void {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) throw new Error(`no .cpuprofile in ${dir}`);
  const byFolder = new Totals();
  const byFunction = new Totals();
  const inEngine = new Totals();
  const parts = new Totals();
  let totalUs = 0;
  let engineUs = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const selfUs = new Map<number, number>();
    profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
    // Walk the call tree once, carrying which parts (and whether the engine) enclose each frame.
    const walk = (id: number, enclosing: ReadonlySet<string>, engine: boolean): void => {
      const node = nodes.get(id)!;
      const name = frameName(node.callFrame);
      const us = selfUs.get(id) ?? 0;
      const idle = node.callFrame.functionName === '(idle)' || node.callFrame.functionName === '(program)';
      const part = PARTS.find(([, prefix]) => name.startsWith(prefix))?.[0];
      const within = part !== undefined && !enclosing.has(part) ? new Set([...enclosing, part]) : enclosing;
      const inside = engine || name.startsWith('step engine/engine.ts') || name.startsWith('status engine/engine.ts');
      if (!idle && us > 0) {
        totalUs += us;
        byFolder.add(folderOf(node.callFrame), us);
        byFunction.add(name, us);
        for (const p of within) parts.add(p, us);
        if (inside) {
          engineUs += us;
          inEngine.add(name, us);
        }
      }
      for (const child of node.children ?? []) walk(child, within, inside);
    };
    walk(profile.nodes[0]!.id, new Set(), false);
  }
  const pct = (us: number, of = totalUs): string => `${((100 * us) / of).toFixed(1).padStart(5)}%`;
  const ms = (us: number): string => `${(us / 1_000).toFixed(0).padStart(7)} ms`;
  console.log(`${files.length} profile(s), ${(totalUs / 1_000).toFixed(0)} ms sampled (idle left out)`);
  console.log('\nself time by folder:');
  for (const [k, us] of byFolder.top(20)) console.log(`${ms(us)} ${pct(us)}  ${k}`);
  console.log(`\ntop ${topCount} functions by self time:`);
  for (const [k, us] of byFunction.top(topCount)) console.log(`${ms(us)} ${pct(us)}  ${k}`);
  console.log('\nthe world by part (inclusive: a part and all it calls):');
  for (const [label] of PARTS)
    console.log(`${ms(parts.byKey.get(label) ?? 0)} ${pct(parts.byKey.get(label) ?? 0)}  ${label}`);
  console.log(
    `\ninside the engine (Engine.step + Engine.status and all they call): ${pct(engineUs).trim()} of the run; by function (share of the engine's time):`,
  );
  for (const [k, us] of inEngine.top(topCount)) console.log(`${ms(us)} ${pct(us, engineUs)}  ${k}`);
}

main();
