// Prng: mulberry32, a tiny seeded generator. The engine owns one, seeded from
// its config, so election jitter is reproducible (etcd's global source is not).
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
    return min + (this.nextUint32() % Math.max(1, maxExclusive - min));
  }
}
