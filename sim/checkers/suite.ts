// CheckerSuite fans every hook out to all checkers, in a fixed order.
import type { Effect, EngineStatus, Entry } from '../../engine/types.js';
import type { RpcRequest, VoteRequest, VoteResponse } from '../../engine/rpc.js';
import type { SimNode } from '../node.js';
import type { Artifact } from '../artifacts.js';
import { AppliedMonotonicChecker } from './applied-monotonic.js';
import { BarrierChecker } from './barrier.js';
import { CanonicalLog } from './canonical-log.js';
import type { Checker, CheckerWorld, StepRecord } from './checker.js';
import { DurabilityChecker } from './durability.js';
import { ElectionChecker } from './election.js';
import { ForeignTrafficChecker } from './foreign-traffic.js';
import { LagGaugeChecker } from './lag-gauge.js';
import { LeaderStepDownChecker } from './leader-step-down.js';
import { LogMatchingChecker } from './log-matching.js';
import { MatchHonestyChecker } from './match-honesty.js';
import { MembershipChecker } from './membership.js';
import { OverlayChecker } from './overlay.js';
import { ReadQuorumChecker } from './read-quorum.js';
import { ReadinessChecker } from './readiness.js';
import { RemovedChecker } from './removed.js';
import { ReportHonestyChecker } from './report-honesty.js';
import { RosterReplayChecker } from './roster-replay.js';
import { SnapshotIntegrityChecker } from './snapshot-integrity.js';
import { StateMachineSafetyChecker } from './state-machine-safety.js';
import { TermFencingChecker } from './term-fencing.js';

export class CheckerSuite implements Checker {
  readonly name = 'suite';
  readonly canonical = new CanonicalLog();
  readonly durability = new DurabilityChecker(this.canonical);
  readonly foreignTraffic: ForeignTrafficChecker;
  readonly checkers: Checker[];

  constructor(world: CheckerWorld, extra: Checker[] = []) {
    this.foreignTraffic = new ForeignTrafficChecker(world);
    this.checkers = [
      new ElectionChecker(),
      new LogMatchingChecker(),
      new StateMachineSafetyChecker(this.canonical),
      new AppliedMonotonicChecker(),
      this.durability,
      new TermFencingChecker(),
      new ReadinessChecker(world),
      new LagGaugeChecker(),
      new SnapshotIntegrityChecker(this.canonical),
      new MembershipChecker(world),
      new RemovedChecker(),
      this.foreignTraffic,
      new BarrierChecker(),
      new ReportHonestyChecker(world),
      new LeaderStepDownChecker(world),
      new RosterReplayChecker(),
      new MatchHonestyChecker(world),
      new OverlayChecker(this.canonical),
      new ReadQuorumChecker(),
      ...extra,
    ];
    this.withBeforeEffect = this.checkers.filter((c) => c.beforeEffect !== undefined);
    this.withAfterStep = this.checkers.filter((c) => c.afterStep !== undefined);
    this.withOnAppend = this.checkers.filter((c) => c.onAppend !== undefined);
    this.withOnApply = this.checkers.filter((c) => c.onApply !== undefined);
    this.withOnProposalResult = this.checkers.filter((c) => c.onProposalResult !== undefined);
  }

  // The checkers with each per-event hook, listed once: the hot hooks then make no call to a checker without it.
  private readonly withBeforeEffect: Checker[];
  private readonly withAfterStep: Checker[];
  private readonly withOnAppend: Checker[];
  private readonly withOnApply: Checker[];
  private readonly withOnProposalResult: Checker[];
  /** beforeEffectByType: per effect type, the checkers whose beforeEffect acts on it (filled as types appear). */
  private beforeEffectByType = new Map<Effect['type'], Checker[]>();

  /** drop removes the named checker: a test showing that another checker (linearizability) catches the same bug. */
  drop(name: string): void {
    for (const list of [
      this.checkers,
      this.withBeforeEffect,
      this.withAfterStep,
      this.withOnAppend,
      this.withOnApply,
      this.withOnProposalResult,
    ]) {
      const at = list.findIndex((c) => c.name === name);
      if (at >= 0) list.splice(at, 1);
    }
    this.beforeEffectByType = new Map();
  }

  /** beforeEffectCheckers: the checkers whose beforeEffect acts on effects of this type (often none). */
  beforeEffectCheckers(type: Effect['type']): readonly Checker[] {
    let list = this.beforeEffectByType.get(type);
    if (!list) {
      list = this.withBeforeEffect.filter(
        (c) => c.beforeEffectTypes === undefined || c.beforeEffectTypes.includes(type),
      );
      this.beforeEffectByType.set(type, list);
    }
    return list;
  }

  beforeEffect(node: SimNode, effect: Effect, answering: RpcRequest | null): void {
    for (const c of this.beforeEffectCheckers(effect.type)) c.beforeEffect!(node, effect, answering);
  }

  afterStep(step: StepRecord): void {
    for (const c of this.withAfterStep) c.afterStep!(step);
  }

  onAppend(node: SimNode, fromSeq: number, entries: readonly Entry[], prevTerm: number | undefined): void {
    for (const c of this.withOnAppend) c.onAppend!(node, fromSeq, entries, prevTerm);
  }

  onApply(node: SimNode, entries: readonly Entry[]): void {
    for (const c of this.withOnApply) c.onApply!(node, entries);
  }

  onVote(voter: SimNode, voterStatus: EngineStatus, request: VoteRequest, response: VoteResponse): void {
    for (const c of this.checkers) c.onVote?.(voter, voterStatus, request, response);
  }

  onProposalResult(
    node: SimNode,
    proposalId: number,
    ok: boolean,
    seq: number,
    data: Uint8Array | undefined,
    term: number,
  ): void {
    for (const c of this.withOnProposalResult) c.onProposalResult!(node, proposalId, ok, seq, data, term);
  }

  onArtifact(node: SimNode, artifact: Artifact, how: 'staged' | 'installed'): void {
    for (const c of this.checkers) c.onArtifact?.(node, artifact, how);
  }

  onCrash(node: SimNode): void {
    for (const c of this.checkers) c.onCrash?.(node);
  }

  onStart(node: SimNode): void {
    for (const c of this.checkers) c.onStart?.(node);
  }
}
