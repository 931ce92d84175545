// Prng is the simulator's only source of randomness: seedrandom's Alea, seeded
// from a string. Streams are forked by label, not by draw order, so removing a
// fault from a schedule does not reshuffle the network's or the workload's draws.
import seedrandom from 'seedrandom';

export class Prng {
  private readonly source: seedrandom.PRNG;

  constructor(readonly seedText: string) {
    this.source = seedrandom.alea(seedText);
  }

  /** fork derives an independent stream named by `label`; the parent's draws are untouched. */
  fork(label: string): Prng {
    return new Prng(`${this.seedText}/${label}`);
  }

  /** next is uniform in [0, 1). */
  next(): number {
    return this.source();
  }

  /** int is uniform in [0, countExclusive). */
  int(countExclusive: number): number {
    if (!(countExclusive >= 1)) throw new Error(`Prng.int needs a count >= 1, got ${countExclusive}`);
    return Math.floor(this.source() * countExclusive);
  }

  /** between is a uniform integer in [min, max], both included. */
  between(min: number, max: number): number {
    if (max < min) throw new Error(`Prng.between needs min <= max, got ${min}..${max}`);
    return min + Math.floor(this.source() * (max - min + 1));
  }

  /** uniform is a float in [min, max). */
  uniform(min: number, max: number): number {
    return min + this.source() * (max - min);
  }

  chance(probability: number): boolean {
    return probability > 0 && this.source() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Prng.pick from an empty list');
    return items[this.int(items.length)]!;
  }

  /** uint32 is a whole number in [0, 2^32), e.g. an engine's randomSeed. */
  uint32(): number {
    return this.source.int32() >>> 0;
  }

  /** shuffled returns a new array in a random order (Fisher-Yates). */
  shuffled<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }
}

/** pickByFraction resolves a pre-drawn fraction in [0, 1) against a list known only later. */
export function pickByFraction<T>(items: readonly T[], fraction: number): T | undefined {
  if (items.length === 0) return undefined;
  return items[Math.min(items.length - 1, Math.floor(fraction * items.length))];
}
