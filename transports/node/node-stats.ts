// The measurements a leader's heartbeats carry: applied events per second over a sliding window,
// and the bytes the node keeps on disk (WAL segments and snapshot artifacts), refreshed by a
// bounded walk of the data directory in the background.
import type { Dirent } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** ThroughputMeter counts events in one-second buckets and averages them over a window. */
export class ThroughputMeter {
  private readonly buckets = new Map<number, number>();
  private readonly startedAtMs: number;
  private total = 0;

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAtMs = now();
  }

  get count(): number {
    return this.total;
  }

  add(events: number): void {
    if (events <= 0) return;
    const second = Math.floor(this.now() / 1000);
    this.buckets.set(second, (this.buckets.get(second) ?? 0) + events);
    this.total += events;
    this.prune(second);
  }

  /** eventsPerSecond averages the window (or the time since start, when shorter). */
  eventsPerSecond(): number {
    const nowMs = this.now();
    const second = Math.floor(nowMs / 1000);
    this.prune(second);
    let events = 0;
    for (const count of this.buckets.values()) events += count;
    const spanMs = Math.min(this.windowMs, Math.max(1000, nowMs - this.startedAtMs));
    return events / (spanMs / 1000);
  }

  private prune(second: number): void {
    const oldest = second - Math.ceil(this.windowMs / 1000);
    for (const s of this.buckets.keys()) if (s <= oldest) this.buckets.delete(s);
  }
}

/** STAT_BATCH_COUNT_MAX bounds the lstat calls a walk has in flight: the libuv pool's default size, which the WAL's writes and fdatasyncs share. */
const STAT_BATCH_COUNT_MAX = 4;

/** DiskUsage keeps the last measured size of a directory tree; refresh() walks it again. */
export class DiskUsage {
  private measured = 0;
  private walking: Promise<void> | null = null;

  constructor(
    private readonly dir: string,
    private readonly fileCountMax: number,
  ) {}

  get bytes(): number {
    return this.measured;
  }

  /** refresh walks the tree unless a walk is already running; files vanishing meanwhile are skipped. */
  refresh(): Promise<void> {
    this.walking ??= this.walk()
      .then(
        (bytes) => {
          this.measured = bytes;
        },
        () => undefined,
      )
      .finally(() => {
        this.walking = null;
      });
    return this.walking;
  }

  /**
   * walk sums the sizes of the regular files under the tree, visiting at most fileCountMax entries. The
   * directory listing says each entry's type, so only regular files are stat'ed (for their size), and a
   * directory's files are stat'ed in batches: one wake-up of the loop per batch rather than one per file.
   */
  private async walk(): Promise<number> {
    let bytes = 0;
    let visited = 0;
    // A file with several names (a layered snapshot's store.json, hard-linked into each artifact that reuses it)
    // takes its disk once: counted at its first name only.
    const linkedSeen = new Set<string>();
    const pending = [this.dir];
    while (pending.length > 0 && visited < this.fileCountMax) {
      const dir = pending.pop()!;
      let entries: Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      const files: string[] = [];
      for (const entry of entries) {
        if (++visited > this.fileCountMax) break;
        if (entry.isDirectory()) pending.push(join(dir, entry.name));
        else if (entry.isFile()) files.push(join(dir, entry.name));
      }
      for (let at = 0; at < files.length; at += STAT_BATCH_COUNT_MAX) {
        const infos = await Promise.all(
          // A file deleted between readdir and lstat (compaction, pruning) is not on disk any more.
          files.slice(at, at + STAT_BATCH_COUNT_MAX).map((file) =>
            lstat(file).then(
              (info) => info,
              () => null,
            ),
          ),
        );
        for (const info of infos) {
          if (info === null || !info.isFile()) continue;
          if (info.nlink > 1) {
            const inode = `${info.dev}:${info.ino}`;
            if (linkedSeen.has(inode)) continue;
            linkedSeen.add(inode);
          }
          bytes += info.size;
        }
      }
    }
    return bytes;
  }
}

/** wallClockNs is the wall clock in nanoseconds since the epoch as a decimal string (last_heartbeat_ns). */
export function wallClockNs(): string {
  return (BigInt(Date.now()) * 1_000_000n).toString();
}
