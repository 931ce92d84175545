// The time window of `svc debug bundle` (--since, --until, --window) and which recording segments it takes.
import { UsageError } from './usage.js';

/** BundleWindow: [sinceMs, untilMs] in ms since the epoch; sinceMs 0 = from the start, untilMs Infinity = until now. */
export interface BundleWindow {
  sinceMs: number;
  untilMs: number;
}

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** parseDuration reads 500ms, 90s, 10m, 2h, 1d (one number and a unit). */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) throw new UsageError(`--window takes a duration such as 10m, 90s or 2h, got ${JSON.stringify(text)}`);
  const ms = Number(match[1]) * DURATION_UNITS_MS[match[2]!]!;
  if (!(ms > 0) || !Number.isFinite(ms)) throw new UsageError(`--window must be longer than 0, got ${text}`);
  return Math.round(ms);
}

function parseTime(flag: string, text: string): number {
  const ms = Date.parse(text);
  if (Number.isNaN(ms)) throw new UsageError(`--${flag} takes a time such as 2026-11-27T10:00:00Z, got ${text}`);
  return ms;
}

/** bundleWindow: --window D alone is the last D; with --until, the D before it; --since with --window is refused. */
export function bundleWindow(flags: { since?: string; until?: string; window?: string }, nowMs: number): BundleWindow {
  const untilMs = flags.until === undefined ? Infinity : parseTime('until', flags.until);
  let sinceMs = flags.since === undefined ? 0 : parseTime('since', flags.since);
  if (flags.window !== undefined) {
    if (flags.since !== undefined) throw new UsageError('--window and --since both set the start: give one');
    sinceMs = (untilMs === Infinity ? nowMs : untilMs) - parseDuration(flags.window);
  }
  if (sinceMs > untilMs) throw new UsageError('the window ends before it starts (--since after --until)');
  return { sinceMs, untilMs };
}

export interface ListedSegment {
  name: string;
  /** modifiedUnixMs: the segment's last write (its newest step, give or take a flush). */
  modifiedUnixMs: number;
  /** run names the node run the segment belongs to ('' when its first line could not be read). */
  run: string;
}

/**
 * segmentsForWindow picks the segments (in name order, which is write order) a bundle takes: those whose
 * writes overlap the window, and every earlier segment of their runs, since a run replays from its start
 * (its run line and every step from 1). A segment's writes start no earlier than the previous segment's
 * last write (the ring opens a segment when the one before it is full or its run ended), so that bound is
 * used; the first segment listed has none and counts as starting at once.
 */
export function segmentsForWindow(listed: readonly ListedSegment[], window: BundleWindow): ListedSegment[] {
  const ordered = [...listed].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // A segment whose run is unknown stands alone.
  const runOf = (segment: ListedSegment): string => segment.run || `?${segment.name}`;
  const runs = new Set<string>();
  ordered.forEach((segment, i) => {
    const startMs = i === 0 ? -Infinity : ordered[i - 1]!.modifiedUnixMs;
    if (startMs <= window.untilMs && segment.modifiedUnixMs >= window.sinceMs) runs.add(runOf(segment));
  });
  const chosen: ListedSegment[] = [];
  for (let i = 0; i < ordered.length; i++) {
    const segment = ordered[i]!;
    if (!runs.has(runOf(segment))) continue;
    // A run's segments after the window are left out: they hold only steps past it.
    const startMs = i === 0 ? -Infinity : ordered[i - 1]!.modifiedUnixMs;
    if (startMs > window.untilMs) continue;
    chosen.push(segment);
  }
  return chosen;
}
