// Summaries of V8 .cpuprofile files (node --cpu-prof): self time by function and by area of the
// code (our folders, dependencies, GC, idle), so the bench can say where a node's time goes.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  file: string;
  pid: number;
  totalMs: number;
  byArea: Array<{ area: string; ms: number; share: number }>;
  byFunction: Array<{ name: string; ms: number; share: number }>;
}

/** areaOf names where a frame's code lives: one of our folders, a dependency, or V8's own. */
export function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const nodeModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nodeModules) return `dep ${nodeModules[1]}`;
  if (url.startsWith('node:')) return `node ${url.slice(5).split('/')[0]}`;
  const ours = /\/(engine|transports\/[^/]+|api|proto\/gen|bin|sim)\//.exec(url);
  return ours ? ours[1]! : 'other';
}

export async function summarizeProfiles(dir: string, topCount: number): Promise<ProfileSummary[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  const summaries: ProfileSummary[] = [];
  for (const file of files) {
    const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile;
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const selfUs = new Map<number, number>();
    for (let i = 0; i < profile.samples.length; i++)
      selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
    const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
    const areas = new Map<string, number>();
    const functions = new Map<string, number>();
    for (const [id, us] of selfUs) {
      const frame = byId.get(id)!.callFrame;
      const area = areaOf(frame.url, frame.functionName);
      areas.set(area, (areas.get(area) ?? 0) + us);
      const where =
        frame.url === ''
          ? ''
          : ` ${frame.url.replace(/^.*\/(node_modules\/|work\/main\/)/, '')}:${frame.lineNumber + 1}`;
      const name = `${frame.functionName || '(anonymous)'}${where}`;
      functions.set(name, (functions.get(name) ?? 0) + us);
    }
    const top = (map: Map<string, number>): Array<[string, number]> =>
      [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, topCount);
    summaries.push({
      file,
      pid: Number(/^CPU\.\d+\.\d+\.(\d+)\./.exec(file)?.[1] ?? 0),
      totalMs: totalUs / 1000,
      byArea: top(areas).map(([area, us]) => ({ area, ms: us / 1000, share: us / totalUs })),
      byFunction: top(functions).map(([name, us]) => ({ name, ms: us / 1000, share: us / totalUs })),
    });
  }
  return summaries;
}
