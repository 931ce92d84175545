// Prng: mulberry32, a tiny seeded generator. The engine owns one, seeded from
// its config, so election jitter is reproducible (etcd's global source is not).
/** SMALL_SPAN_MAX: a remainder below it fits an int32, so `| 0` leaves its value unchanged. */
const SMALL_SPAN_MAX = 2 ** 31;

export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** nextUint32 returns a uniformly distributed 32-bit unsigned integer. */
  nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** intBetween returns an integer in [min, maxExclusive). */
  intBetween(min: number, maxExclusive: number): number {
    const span = Math.max(1, maxExclusive - min);
    const offset = this.nextUint32() % span;
    // The same number either way; `| 0` only keeps it a small integer in V8. A draw above 2^30 is a boxed double,
    // and unoptimised code's `%` of one boxes its result too, which turned every field it reached (the election
    // timeout) into a double field (sim/README.md, "Whole numbers stored as doubles").
    return min + (span <= SMALL_SPAN_MAX ? offset | 0 : offset);
  }
}
