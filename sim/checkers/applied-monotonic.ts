// Applied never goes back: within one life of a node, its state machine's applied seqno only grows.
// A snapshot installed below what the state machine has applied would move the state back to an older
// one (reads served before it saw newer values) and, when the node's log no longer holds the entries
// between, cut entries the node had reported durable and matched (Raft's rule on a stale snapshot,
// engine/snapshot-install.ts). A restart starts over from the newest artifact, and a reseed wipes the
// state on purpose (its node is unready until it has pulled again): both begin a new count.
import type { Effect } from '../../engine/types.js';
import type { Artifact } from '../artifacts.js';
import type { SimNode } from '../node.js';
import type { Checker } from './checker.js';
import { violate } from '../violation.js';

export class AppliedMonotonicChecker implements Checker {
  readonly name = 'applied-monotonic';
  /** highSeq: per node index, the highest seqno its state machine has applied in this life. */
  private readonly highSeq = new Map<number, number>();

  onStart(node: SimNode): void {
    this.highSeq.set(node.index, node.machine.appliedSeq);
  }

  onCrash(node: SimNode): void {
    this.highSeq.delete(node.index);
  }

  readonly beforeEffectTypes: readonly Effect['type'][] = ['resetStateMachine'];

  beforeEffect(node: SimNode, effect: Effect): void {
    if (effect.type === 'resetStateMachine') this.highSeq.set(node.index, 0);
  }

  onApply(node: SimNode): void {
    this.highSeq.set(node.index, Math.max(this.highSeq.get(node.index) ?? 0, node.machine.appliedSeq));
  }

  onArtifact(node: SimNode, artifact: Artifact, how: 'staged' | 'installed'): void {
    if (how !== 'installed') return;
    const high = this.highSeq.get(node.index) ?? 0;
    if (artifact.meta.seq < high)
      violate(
        this.name,
        `${node.name} installed a snapshot at seq ${artifact.meta.seq} after its state machine had applied ${high}: ` +
          'the applied state went back',
        node.index,
      );
    this.highSeq.set(node.index, artifact.meta.seq);
  }
}
