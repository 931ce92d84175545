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

export interface SubtreeShare {
  file: string;
  pid: number;
  /** busyMs: sampled time not idle (the share's denominator). */
  busyMs: number;
  /** share of busy time spent in frames of the chosen code or in anything they called. */
  share: number;
  /**
   * sampleShare: the same share counted in samples, each sample once. V8 samples on a wall-clock timer, so
   * on a loaded machine a sample taken after the thread was descheduled carries the whole gap (often at a
   * syscall that wakes another thread); counting samples does not weigh those gaps.
   */
  sampleShare: number;
  /** byFunction: self time inside that subtree, by function, as shares of busy time. */
  byFunction: Array<{ name: string; share: number }>;
}

/**
 * subtreeShares: for each profile, the share of its busy (non-idle) time spent inside frames whose url
 * matches `code`, counting what they called (inclusive time), and where inside that the time went.
 */
export async function subtreeShares(dir: string, code: RegExp, topCount: number): Promise<SubtreeShare[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile'));
  const shares: SubtreeShare[] = [];
  for (const file of files) {
    const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile & {
      nodes: Array<ProfileNode & { children?: number[] }>;
    };
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
    const inside = new Map<number, boolean>();
    const isInside = (id: number): boolean => {
      const known = inside.get(id);
      if (known !== undefined) return known;
      const up = parent.get(id);
      const result = code.test(byId.get(id)!.callFrame.url) || (up !== undefined && isInside(up));
      inside.set(id, result);
      return result;
    };
    let busyUs = 0;
    let insideUs = 0;
    let busySamples = 0;
    let insideSamples = 0;
    const functions = new Map<string, number>();
    for (let i = 0; i < profile.samples.length; i++) {
      const id = profile.samples[i]!;
      const us = profile.timeDeltas[i] ?? 0;
      const frame = byId.get(id)!.callFrame;
      if (frame.functionName === '(idle)') continue;
      busyUs += us;
      busySamples++;
      if (!isInside(id)) continue;
      insideUs += us;
      insideSamples++;
      const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/(node_modules\/|wt-[^/]+\/|main\/)/, '')}`;
      functions.set(name, (functions.get(name) ?? 0) + us);
    }
    if (busyUs === 0) continue;
    shares.push({
      file,
      pid: Number(/^CPU\.\d+\.\d+\.(\d+)\./.exec(file)?.[1] ?? 0),
      busyMs: busyUs / 1000,
      share: insideUs / busyUs,
      sampleShare: insideSamples / busySamples,
      byFunction: [...functions.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, topCount)
        .map(([name, us]) => ({ name, share: us / busyUs })),
    });
  }
  return shares;
}
