// The checker contract: the world calls these hooks as things happen, and a
// checker throws an InvariantViolation the moment an invariant breaks.
import type { Effect, EngineStatus, Entry, Input } from '../../engine/types.js';
import type { RpcRequest, VoteRequest, VoteResponse } from '../../engine/rpc.js';
import type { SimNode } from '../node.js';
import type { Artifact } from '../artifacts.js';
import type { Coverage } from '../coverage.js';

/** StepRecord is one engine step: what went in, what came out, status before and after. */
export interface StepRecord {
  node: SimNode;
  input: Input;
  effects: readonly Effect[];
  before: EngineStatus | null;
  after: EngineStatus;
  nowUs: number;
  /**
   * cutShort: a boundary crash stopped this step part-way (sim/crash-points.ts): `effects` holds only those
   * carried out, `after` is the engine's view, and the node crashes right after. Checkers that compare the
   * engine's view with the disk skip such a step.
   */
  cutShort?: boolean;
}

/** CheckerWorld is the read-only view of the world checkers may consult. */
export interface CheckerWorld {
  readonly nodes: readonly SimNode[];
  nodeByMemberId(id: number): SimNode | undefined;
  /** foreignCall: how a forged call a server took in was made (sim/foreign.ts); null for a member's call. */
  foreignCall?(callId: number): { kind: string; cluster: string } | null;
  /** clientCall: a server callId was a lockstep script's client call (sim/lockstep.ts inject), not a member's. */
  clientCall?(callId: number): boolean;
  /** clusterId is the simulated cluster's wire id. */
  readonly clusterId?: string;
  /** coverage counts rare situations a checker sees (absent in hand-made test worlds). */
  readonly coverage?: Coverage;
}

export interface Checker {
  readonly name: string;
  afterStep?(step: StepRecord): void;
  /**
   * beforeEffect: `node` is about to carry out one effect of a step (the disk is as it is at that moment:
   * earlier effects of the step done, later ones not). `answering` is the request a reply, error or
   * stream message answers, null for other effects.
   */
  beforeEffect?(node: SimNode, effect: Effect, answering: RpcRequest | null): void;
  /**
   * beforeEffectTypes: the effect types beforeEffect acts on (it returns at once for any other); absent = every
   * type. The suite calls beforeEffect only for these: most effects (proposal results, appends, applies) concern
   * no checker's beforeEffect, and this hook runs for every effect of every step.
   */
  readonly beforeEffectTypes?: readonly Effect['type'][];
  /** onAppend: an append effect was written to the node's WAL (prevTerm: term at fromSeq-1, if known). */
  onAppend?(node: SimNode, fromSeq: number, entries: readonly Entry[], prevTerm: number | undefined): void;
  onApply?(node: SimNode, entries: readonly Entry[]): void;
  /** onVote: `voter` answered a RequestVote (voterStatus is its status right after that step). */
  onVote?(voter: SimNode, voterStatus: EngineStatus, request: VoteRequest, response: VoteResponse): void;
  /** onProposalResult: data is what the client proposed under that proposalId; term is the answering node's. */
  onProposalResult?(
    node: SimNode,
    proposalId: number,
    ok: boolean,
    seq: number,
    data: Uint8Array | undefined,
    term: number,
  ): void;
  onArtifact?(node: SimNode, artifact: Artifact, how: 'staged' | 'installed'): void;
  onCrash?(node: SimNode): void;
  onStart?(node: SimNode): void;
}
