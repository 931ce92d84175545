// LogRing: the node's most recent log lines, kept in memory within a byte bound (logRingBytesMax), so
// `svc debug bundle` can gather them through the Admin Logs call. The node writes its logs to stdout (the
// container's collector keeps them); a file of its own would need a rotation and a disk bound of its own,
// and would hold nothing the collector does not. The ring holds only what a bundle wants: the last minutes,
// of this run. It is a tee: every line still goes to the node's log destination as before.

/** LogDestination is what pino writes to: one JSON line per call. */
export interface LogDestination {
  write(line: string): unknown;
}

/** LogRingWindow selects lines by their time (ms since the epoch; 0 = no bound) and bounds the answer's bytes. */
export interface LogRingWindow {
  sinceMs: number;
  untilMs: number;
  bytesMax: number;
}

export interface LogRingRead {
  lines: string[];
  /** dropped counts lines let go: evicted by the ring's bound since it began, and those the answer's bound left out. */
  dropped: number;
  /** oldestMs is the time of the oldest line held (0 when none). */
  oldestMs: number;
}

interface Held {
  line: string;
  atMs: number;
  bytes: number;
}

export class LogRing implements LogDestination {
  private readonly held: Held[] = [];
  /** head indexes the oldest held line (lines before it are evicted; compacted now and then). */
  private head = 0;
  private bytes = 0;
  private evicted = 0;

  constructor(
    private readonly bytesMax: number,
    private readonly next: LogDestination | null,
    private readonly now: () => number = Date.now,
  ) {
    if (!Number.isSafeInteger(bytesMax) || bytesMax < 1)
      throw new RangeError(`logRingBytesMax must be a positive integer, got ${String(bytesMax)}`);
  }

  write(line: string): unknown {
    const result = this.next?.write(line);
    this.keep(line.endsWith('\n') ? line.slice(0, -1) : line);
    return result;
  }

  /** read answers the held lines in the window, oldest first; past bytesMax the newest are kept. */
  read(window: LogRingWindow): LogRingRead {
    const inWindow = this.held
      .slice(this.head)
      .filter(
        (h) => (window.sinceMs === 0 || h.atMs >= window.sinceMs) && (window.untilMs === 0 || h.atMs <= window.untilMs),
      );
    let bytes = 0;
    let from = inWindow.length;
    while (from > 0 && bytes + inWindow[from - 1]!.bytes <= window.bytesMax) bytes += inWindow[--from]!.bytes;
    return {
      lines: inWindow.slice(from).map((h) => h.line),
      dropped: this.evicted + from,
      oldestMs: this.held[this.head]?.atMs ?? 0,
    };
  }

  get bytesHeld(): number {
    return this.bytes;
  }

  private keep(line: string): void {
    // A line longer than the whole ring is cut: the ring's bound holds whatever a log call writes.
    const text = Buffer.byteLength(line) > this.bytesMax ? truncate(line, this.bytesMax) : line;
    const held: Held = { line: text, atMs: lineTime(text) ?? this.now(), bytes: Buffer.byteLength(text) };
    this.held.push(held);
    this.bytes += held.bytes;
    while (this.bytes > this.bytesMax) {
      this.bytes -= this.held[this.head]!.bytes;
      this.head++;
      this.evicted++;
    }
    // Compact once the evicted prefix outgrows what is held, so memory stays proportional to the bound.
    if (this.head > 1024 && this.head > this.held.length / 2) {
      this.held.splice(0, this.head);
      this.head = 0;
    }
  }
}

/** lineTime reads a pino line's `time` (ISO, the node's logger; or ms), undefined when it has none. */
function lineTime(line: string): number | undefined {
  const match = /"time":(?:"([^"]+)"|(\d+))/.exec(line);
  if (!match) return undefined;
  const ms = match[1] !== undefined ? Date.parse(match[1]) : Number(match[2]);
  return Number.isFinite(ms) ? ms : undefined;
}

function truncate(line: string, bytesMax: number): string {
  const marker = '…(cut)';
  return `${Buffer.from(line)
    .subarray(0, Math.max(0, bytesMax - Buffer.byteLength(marker)))
    .toString('utf8')}${marker}`;
}
