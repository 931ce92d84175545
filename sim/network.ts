// Network decides the fate of every message between node slots: when it arrives,
// or that it is lost. Faults are per directed link: partitions (blocked links),
// clogs (held until a time), capacity (drops beyond a count in flight), loss,
// hold-back (reordering), and for requests duplication and late replay.
import type { NetworkKnobs } from './options.js';
import type { Prng } from './prng.js';
import { SIM_LIMITS, msToUs } from './limits.js';

export const LOST = -1;

const NO_COPIES: readonly number[] = Object.freeze([]);

export class Network {
  private readonly blocked: Uint8Array;
  /**
   * cloggedUntilUs: per link, the time its clog lifts (0 = none). A plain array of whole numbers, not a
   * Float64Array: a Float64Array element is read back as a boxed double even when it is whole, and a clogged
   * message's arrival computed from it was such a double; stored in the queue, it turned the world's time
   * fields (nowUs, atUs, deadlines, ...) from small integers into doubles for the rest of the process (map
   * deprecations, deoptimisations and a boxed number per event).
   */
  private readonly cloggedUntilUs: number[];
  /** arrivalsUs holds, per link, arrival times of messages sent on it (pruned lazily at capacity). */
  private readonly arrivalsUs: number[][];
  private knobs: Required<NetworkKnobs>;

  constructor(
    private readonly prng: Prng,
    knobs: NetworkKnobs,
    readonly slotCount: number,
  ) {
    this.knobs = ownKnobs(knobs);
    const links = slotCount * slotCount;
    this.blocked = new Uint8Array(links);
    this.cloggedUntilUs = new Array<number>(links).fill(0);
    this.arrivalsUs = Array.from({ length: links }, () => []);
  }

  get currentKnobs(): Readonly<NetworkKnobs> {
    return this.knobs;
  }

  /** calm turns off random loss, duplication, replay, hold-back, late answers, slow snapshots and tight capacity (the liveness phase). */
  calm(): void {
    this.knobs = ownKnobs({
      ...this.knobs,
      lossProbability: 0,
      duplicateProbability: 0,
      replayProbability: 0,
      reorderProbability: 0,
      lateAnswerProbability: 0,
      slowSnapshotProbability: 0,
      linkInflightCountMax: Math.max(this.knobs.linkInflightCountMax, SIM_LIMITS.linkInflightCountMax),
    });
  }

  /**
   * send plans one message; it returns the arrival time, or LOST. A message that continues an
   * established stream (`onStream`) is flow-controlled, not dropped: only a partition cuts it.
   */
  send(from: number, to: number, nowUs: number, onStream = false): number {
    const link = this.link(from, to);
    if (from !== to && this.blocked[link] === 1) return LOST;
    if (!onStream && !this.hasCapacity(link, nowUs)) return LOST;
    if (!onStream && this.prng.chance(this.knobs.lossProbability)) return LOST;
    let atUs = nowUs + this.delayUs();
    if (this.prng.chance(this.knobs.reorderProbability))
      atUs += msToUs(this.prng.uniform(0, SIM_LIMITS.reorderExtraDelayMsMax));
    const clogUs = this.cloggedUntilUs[link]!;
    if (clogUs > atUs) atUs = clogUs + this.delayUs();
    this.arrivalsUs[link]!.push(atUs);
    return atUs;
  }

  /**
   * extraCopies plans duplicates and late replays of a request (each a fresh delivery). Most requests get none:
   * they share one frozen empty list rather than each allocating its own.
   */
  extraCopies(from: number, to: number, nowUs: number): readonly number[] {
    let copies: number[] | null = null;
    if (this.prng.chance(this.knobs.duplicateProbability)) {
      const at = this.send(from, to, nowUs);
      if (at !== LOST) copies = [at];
    }
    if (this.prng.chance(this.knobs.replayProbability)) {
      const at = this.send(from, to, nowUs + msToUs(this.prng.uniform(0, SIM_LIMITS.replayDelayMsMax)));
      if (at !== LOST) (copies ??= []).push(at);
    }
    return copies ?? NO_COPIES;
  }

  /** hasCapacity: fewer than linkInflightCountMax messages on the link have yet to arrive. */
  private hasCapacity(link: number, nowUs: number): boolean {
    let arrivals = this.arrivalsUs[link]!;
    if (arrivals.length < this.knobs.linkInflightCountMax) return true;
    arrivals = arrivals.filter((atUs) => atUs > nowUs);
    this.arrivalsUs[link] = arrivals;
    return arrivals.length < this.knobs.linkInflightCountMax;
  }

  /** shortDelayUs is a plain network delay with no faults (connection refused, status reads). */
  shortDelayUs(): number {
    return this.delayUs();
  }

  isBlocked(from: number, to: number): boolean {
    return from !== to && this.blocked[this.link(from, to)] === 1;
  }

  block(from: number, to: number): void {
    if (from !== to) this.blocked[this.link(from, to)] = 1;
  }

  /** split cuts every link from `a` to `b`, and back too when symmetric. */
  split(a: readonly number[], b: readonly number[], symmetric: boolean): void {
    for (const x of a) {
      for (const y of b) {
        this.block(x, y);
        if (symmetric) this.block(y, x);
      }
    }
  }

  isolate(node: number): void {
    for (let other = 0; other < this.slotCount; other++) {
      this.block(node, other);
      this.block(other, node);
    }
  }

  clog(from: number, to: number, untilUs: number): void {
    const link = this.link(from, to);
    this.cloggedUntilUs[link] = Math.max(this.cloggedUntilUs[link]!, untilUs);
  }

  /** heal lifts every partition and clog (random loss stays; see calm). */
  heal(): void {
    this.blocked.fill(0);
    this.cloggedUntilUs.fill(0);
  }

  /** healNode lifts the partitions touching one node. */
  healNode(node: number): void {
    for (let other = 0; other < this.slotCount; other++) {
      this.blocked[this.link(node, other)] = 0;
      this.blocked[this.link(other, node)] = 0;
    }
  }

  private delayUs(): number {
    return msToUs(this.prng.uniform(this.knobs.oneWayDelayMsMin, this.knobs.oneWayDelayMsMax));
  }

  private link(from: number, to: number): number {
    if (from < 0 || to < 0 || from >= this.slotCount || to >= this.slotCount) {
      throw new Error(`Network: node slot out of range (${from} -> ${to}, ${this.slotCount} slots)`);
    }
    return from * this.slotCount + to;
  }
}

/**
 * ownKnobs copies knobs into an object built in this one place with every field present, so every run's
 * network reads one shape. A spread copy kept its source's shape: the swarm's, a preset's, a script's, calm()'s
 * (with or without the optional fields), and each new one met in a process deoptimised send and delayUs again.
 */
function ownKnobs(knobs: NetworkKnobs): Required<NetworkKnobs> {
  return {
    lossProbability: knobs.lossProbability,
    duplicateProbability: knobs.duplicateProbability,
    replayProbability: knobs.replayProbability,
    reorderProbability: knobs.reorderProbability,
    oneWayDelayMsMin: knobs.oneWayDelayMsMin,
    oneWayDelayMsMax: knobs.oneWayDelayMsMax,
    linkInflightCountMax: knobs.linkInflightCountMax,
    lateAnswerProbability: knobs.lateAnswerProbability ?? 0,
    slowSnapshotProbability: knobs.slowSnapshotProbability ?? 0,
  };
}
