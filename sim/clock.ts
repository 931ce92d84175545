// NodeClock is one node's view of time: it runs fast or slow by a fixed drift,
// so its tick period in virtual (true) time differs from its nominal tickMs.
import { msToUs } from './limits.js';

/** EPOCH_NS is when virtual time 0 happened on the wall clock (stats carry a wall time). */
const EPOCH_NS = 1_700_000_000_000_000_000n;

export class NodeClock {
  /** rate is local seconds per true second (1.02 runs 2% fast). */
  readonly rate: number;
  readonly tickIntervalUs: number;
  private readonly offsetUs: number;

  constructor(driftFraction: number, tickMs: number, offsetMs: number) {
    if (!(Math.abs(driftFraction) < 1)) throw new Error(`clock drift must be within (-1, 1), got ${driftFraction}`);
    this.rate = 1 + driftFraction;
    this.tickIntervalUs = Math.max(1, Math.round(msToUs(tickMs) / this.rate));
    this.offsetUs = msToUs(offsetMs);
  }

  /** localNowUs is what this node's clock reads at true time `trueUs`. */
  localNowUs(trueUs: number): number {
    return Math.round(this.offsetUs + trueUs * this.rate);
  }

  /** wallNowNs is localNowUs as nanoseconds since the Unix epoch, a decimal string (NodeStats.nowNs). */
  wallNowNs(trueUs: number): string {
    return (EPOCH_NS + BigInt(this.localNowUs(trueUs)) * 1_000n).toString();
  }
}
