// A cap on how many log lines one kind of event may write per window. Engine warnings are driven by
// what peers send: a forged or misdirected message is refused with a warning, so a peer holding a valid
// certificate could otherwise turn the node's log into its own write amplifier (one line per forged
// call). Metrics still count every event; the log keeps the first few of each kind per window and then
// says how many it left out. A fixed window per kind is all this needs: a token-bucket package
// (`limiter`, `bottleneck`) schedules work, and here nothing waits — a line is written or counted.

/** Admission says whether to write a line, and how many of its kind the last window left out. */
export interface Admission {
  write: boolean;
  /** suppressedBefore counts lines of this kind left out since the last one written (reported once). */
  suppressedBefore: number;
}

interface KindWindow {
  startedMs: number;
  written: number;
  suppressed: number;
}

export class LogThrottle {
  private readonly windows = new Map<string, KindWindow>();

  /** See NodeLimits.logLinesPerKindWindowMax and logThrottleWindowMs (limits.ts). */
  constructor(
    private readonly linesPerKindWindowMax: number,
    private readonly windowMs: number,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /**
   * admit decides for one event of `kind`. The kinds are a closed set (warning codes), so the map stays
   * small; a caller must not pass peer-chosen text as a kind.
   */
  admit(kind: string): Admission {
    const now = this.nowMs();
    let window = this.windows.get(kind);
    if (!window || now - window.startedMs >= this.windowMs) {
      const carried = window?.suppressed ?? 0;
      window = { startedMs: now, written: 0, suppressed: 0 };
      this.windows.set(kind, window);
      window.written = 1;
      return { write: true, suppressedBefore: carried };
    }
    if (window.written < this.linesPerKindWindowMax) {
      window.written += 1;
      return { write: true, suppressedBefore: 0 };
    }
    window.suppressed += 1;
    return { write: false, suppressedBefore: 0 };
  }
}
