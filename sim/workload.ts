// Workload is the client side: puts at random intervals (exponential gaps), sent
// to the node the client believes leads; a refusal with a leader hint is retried
// there, a silent node is retried elsewhere after a client timeout. Idle periods
// stop new writes for a while.
import type { Cluster } from './cluster.js';
import type { SimNode } from './node.js';
import { SIM_LIMITS, msToUs } from './limits.js';
import type { WorkloadKnobs } from './options.js';
import type { Prng } from './prng.js';
import { encodeCommand } from './state-machine.js';

interface Write {
  writeId: number;
  data: Uint8Array;
  attemptCount: number;
}

export class Workload {
  issuedCount = 0;
  ackedCount = 0;
  refusedCount = 0;
  abandonedCount = 0;
  private nextWriteId = 1;
  private idleUntilUs = 0;
  private stopped = false;
  private leaderGuess = -1;
  /** attempts maps a proposalId to the write it carries, while the client still waits for it. */
  private readonly attempts = new Map<number, Write>();

  /** burstPrng draws burst sizes only, so runs without bursts draw exactly what they did before bursts existed. */
  constructor(
    private readonly cluster: Cluster,
    private readonly prng: Prng,
    private readonly knobs: WorkloadKnobs,
    private readonly burstPrng: Prng,
  ) {
    cluster.onProposalResult((node, proposalId, ok, _seq, hint) => this.onResult(node, proposalId, ok, hint));
  }

  start(): void {
    this.scheduleNext();
  }

  /** idle stops new writes until `untilUs` (retries of writes in flight go on). */
  idle(untilUs: number): void {
    this.idleUntilUs = Math.max(this.idleUntilUs, untilUs);
  }

  /** stop ends new writes for good (the liveness phase). */
  stop(): void {
    this.stopped = true;
  }

  private scheduleNext(): void {
    const gapMs = -this.knobs.writeIntervalMsMean * Math.log(1 - this.prng.next());
    this.cluster.schedule(this.cluster.nowUs + msToUs(gapMs), 'client write', () => this.issue());
  }

  private issue(): void {
    if (this.stopped) return;
    if (this.cluster.nowUs < this.idleUntilUs) {
      this.cluster.schedule(this.idleUntilUs, 'client wakes', () => this.issue());
      return;
    }
    const count = this.knobs.burstWriteCountMax > 1 ? 1 + this.burstPrng.int(this.knobs.burstWriteCountMax) : 1;
    if (count === 1) this.attempt(this.newWrite(), this.pickTarget());
    else
      this.attemptBurst(
        Array.from({ length: count }, () => this.newWrite()),
        this.pickTarget(),
      );
    this.scheduleNext();
  }

  private newWrite(): Write {
    const writeId = this.nextWriteId++;
    const key = `k${this.prng.int(SIM_LIMITS.keySpaceCount)}`;
    this.issuedCount++;
    return { writeId, data: encodeCommand({ op: 'put', key, value: `v${writeId}`, writeId }), attemptCount: 0 };
  }

  /** attemptBurst proposes writes together, once; a write that times out or is refused is retried alone. */
  private attemptBurst(writes: Write[], target: number): void {
    if (target < 0) {
      this.abandonedCount += writes.length;
      return;
    }
    for (const write of writes) write.attemptCount++;
    const proposalIds = this.cluster.proposeBatch(
      target,
      writes.map((w) => w.data),
      this.burstPrng.uniform(0, 2),
    );
    proposalIds.forEach((proposalId, i) => this.await(proposalId, writes[i]!));
  }

  private attempt(write: Write, target: number): void {
    if (target < 0 || write.attemptCount >= SIM_LIMITS.clientAttemptCountMax) {
      this.abandonedCount++;
      return;
    }
    write.attemptCount++;
    const proposalId = this.cluster.propose(target, write.data, this.prng.uniform(0, 2));
    this.await(proposalId, write);
  }

  private await(proposalId: number, write: Write): void {
    this.attempts.set(proposalId, write);
    this.cluster.schedule(this.cluster.nowUs + msToUs(SIM_LIMITS.clientTimeoutMs), 'client timeout', () => {
      if (!this.attempts.delete(proposalId)) return;
      this.leaderGuess = -1;
      this.attempt(write, this.pickTarget());
    });
  }

  private onResult(node: SimNode, proposalId: number, ok: boolean, hint: string): void {
    const write = this.attempts.get(proposalId);
    if (!write) return;
    this.attempts.delete(proposalId);
    if (ok) {
      this.ackedCount++;
      this.leaderGuess = node.index;
      return;
    }
    this.refusedCount++;
    const hinted = hint ? this.cluster.nodeByGrpcAddr(hint) : undefined;
    this.leaderGuess = hinted && hinted !== node ? hinted.index : -1;
    const delayMs = this.prng.uniform(0, SIM_LIMITS.clientRetryDelayMsMax);
    this.cluster.schedule(this.cluster.nowUs + msToUs(delayMs), 'client retry', () =>
      this.attempt(write, this.pickTarget()),
    );
  }

  private pickTarget(): number {
    const live = this.cluster.nodes.filter((n) => n.isLive);
    if (this.leaderGuess >= 0 && this.cluster.nodes[this.leaderGuess]!.isLive) return this.leaderGuess;
    if (live.length === 0) return -1;
    return this.prng.pick(live).index;
  }
}
