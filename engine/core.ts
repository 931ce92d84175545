// EngineCore: the engine's state and the order things happen in (Engine, engine.ts, is its face to
// drivers). A step runs what every role shares — admission, the one term rule (term-rule.ts), removal —
// and hands what differs by role to the handler set chosen with the role (roles.ts, role-*.ts).
// Each piece of state lives with its rules in its own file: positions.ts (commit, applied, durable,
// matched), progress.ts (per follower), quorum.ts (majorities), readiness.ts (Readiness rules 1-6),
// membership.ts (roster cache, conf-change gate, pending joins, joining), calls.ts (calls we placed),
// election.ts (election clock, lease, votes), proposals.ts (proposals awaiting commit), pull.ts (a
// follower's pull), transfer.ts (leadership handover), snapshot-staging.ts (the snapshot held).
import { assert, assertNever } from './assert.js';
import { OutstandingCalls, type CallContext } from './calls.js';
import { Effects } from './effects.js';
import { Election } from './election.js';
import {
  CALL_FORGET_AGE_ELECTION_TIMEOUTS,
  CALL_SWEEP_INTERVAL_ELECTION_TIMEOUTS,
  MEMBER_ADDRESS_CHARS_MAX,
  MEMBER_NAME_CHARS_MAX,
} from './limits.js';
import { RaftLog, logUpToDate } from './log.js';
import { filterOf, filteredEntries, isRefilling } from './communities.js';
import { JoinDialer, PendingChanges, RosterCache, confChangeRefusal, type ConfChangeRefusal } from './membership.js';
import {
  RosterProbe,
  senderOf,
  standingOf,
  vouchedRosterFrom,
  type RosterViews,
  type SenderStanding,
} from './membership-guard.js';
import { FollowerPull, readChunk } from './pull.js';
import { Progress, ProgressTracker } from './progress.js';
import { LogPositions } from './positions.js';
import { PendingProposals } from './proposals.js';
import { quorumMatch, type VoteTally } from './quorum.js';
import { ReadIndex } from './read-index.js';
import { snapshotFilterProblem } from './snapshot-install.js';
import { SnapshotStaging } from './snapshot-staging.js';
import { Readiness } from './readiness.js';
import type { RoleHandlersOf } from './roles.js';
import { isStaleTerm } from './term-rule.js';
import { LeadershipTransfer } from './transfer.js';
import { decodeRoster, encodeRoster, isRemoved, isVoter, memberById, memberByName, voterIds } from './roster.js';
import {
  decodeSegmentFrame,
  encodeSegmentFrame,
  FILTERED_SHIP_COVER_COUNT_MAX,
  type SegmentFrame,
} from './segment-frame.js';
import {
  REFUSAL_CODES,
  StatusCode,
  TRAILER_CATCHUP,
  TRAILER_REFUSAL,
  TRAILER_TERM,
  type AppliedReport,
  type CatchupTrailer,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type JoinRequest,
  type JoinResponse,
  type MemberInfo,
  type RpcRequest,
  type RpcResponse,
  type RpcStatus,
  type ShipSegmentRequest,
  type ShipSegmentResponse,
  type SnapshotHeader,
  type SnapshotRequest,
  type StreamRequest,
  type TimeoutNowRequest,
  type VoteRequest,
  type VoteResponse,
} from './rpc.js';
import {
  CAPABILITY_KIND4,
  CAPABILITY_LIVE_STREAM,
  EntryKind,
  MemberRole,
  type AdminResultCode,
  type Effect,
  type EngineConfig,
  type EngineLeadership,
  type EngineLimits,
  type EngineStatus,
  type Entry,
  type HardState,
  type Input,
  type NodeStats,
  type ProposalResultCode,
  type RestoredState,
  type Role,
  type Roster,
  type SnapshotExpectation,
  type SnapshotFailureCode,
  type SnapshotFilter,
  type SnapshotMeta,
  type MemberFilter,
} from './types.js';
import {
  canIncrementTerm,
  isCarriableTerm,
  parseCarriable,
  requestValueProblem,
  responseValueProblem,
} from './values.js';
import { VersionSpread } from './versions.js';
import { AUTOPILOT_ADMIN_ID, autopilotTick, EMPTY_AUTOPILOT_MEMORY } from './autopilot.js';

const EMPTY_ROSTER: Roster = { membershipVersion: 0, nextMemberId: 1, members: [] };

/**
 * EngineCore is the engine's state and the order things happen in; `Engine` (engine.ts) is its face to
 * drivers. Its members are open to the role files (role-*.ts), which hold what differs by role.
 */
/** RoleHandlers is a role's handler set acting on this core (roles.ts; the table is role-table.ts). */
export type RoleHandlers = RoleHandlersOf<EngineCore>;

export class EngineCore {
  readonly limits: EngineLimits;
  readonly fx = new Effects();
  readonly versions: VersionSpread;

  hs: HardState;
  /** savedHs is the hard state last handed out to be saved (commitSeq aside, which rides along). */
  savedHs: HardState;
  readonly log: RaftLog;
  /** baseRoster is the roster at log.baseSeq (from a snapshot or compaction). */
  baseRoster: Roster | null;
  /** snapshots: the snapshot we hold to serve, and whether a newer one is being staged (snapshot-staging.ts). */
  readonly snapshots: SnapshotStaging;
  /** statusCache holds status() until the next step changes anything. */
  statusCache: EngineStatus | null = null;
  /** rosterCache keeps decoded kind-4 bodies by seq (membership.ts). */
  readonly rosterCache = new RosterCache();
  /**
   * lastFrame: the last unfiltered segment frame this engine encoded in this step and its bytes. A leader
   * ships the same entries from the same point to every caught-up follower, so the frame is encoded once and
   * its bytes handed to each (nothing writes into a payload once built). Cleared as each step begins.
   */
  private lastFrame: { frame: SegmentFrame; payload: Uint8Array } | null = null;
  /** rosterProbe asks known members about members our log does not list yet (membership-guard.ts). */
  readonly rosterProbe = new RosterProbe();
  /**
   * reseedAwaitingSource: the reseed marker is latched (local evidence of damage) but the wipe
   * waits until a leader of our current term is confirmed to serve the reinstall.
   */
  reseedAwaitingSource = false;

  role: Role;
  /** handlers: what this role does differently (roles.ts), set with the role (setRole). */
  handlers: RoleHandlers;
  leaderId = 0;
  ticks = 0;
  heartbeatElapsedTicks = 0;
  /** positions: commit, applied, durable, matched, reported and the term barrier, with their order (positions.ts). */
  readonly positions: LogPositions;
  /** readiness: the latch and the spec's Readiness rules 1-6 (readiness.ts). */
  readonly readiness = new Readiness(
    (effect) => this.fx.other(effect),
    () => this.hs.removed || this.hs.halted !== '',
  );
  stats: NodeStats = { entityCount: 0, signalThroughputEps: 0, diskBytes: 0, nowNs: '0' };

  /** calls: the calls we placed and await (calls.ts). */
  readonly calls = new OutstandingCalls();

  /** election: the election clock, check-quorum's lease and the campaign's votes (election.ts). */
  readonly election: Election;

  // Leader state.
  /** progress: per follower, what it holds and what is in flight (progress.ts). */
  readonly progress = new ProgressTracker();
  electionPrevLog = { term: 0, seq: 0 };
  /** pendingProposals: proposals in our log awaiting commit (proposals.ts). */
  readonly pendingProposals = new PendingProposals();
  /** pendingChanges: joins and admin ops waiting for their kind-4 record to commit (membership.ts). */
  readonly pendingChanges = new PendingChanges();
  /** reads: linearizable reads waiting for the leader's term commit and a heartbeat round (read-index.ts). */
  readonly reads: ReadIndex;
  /** transfer: the leadership handover in progress, if any (transfer.ts). */
  readonly transfer = new LeadershipTransfer();
  /** autopilot: what the leader's autopilot remembers between ticks (autopilot.ts). */
  private autopilot = EMPTY_AUTOPILOT_MEMORY;

  // Follower state.
  /** pull: our one pull from the leader (stream or snapshot fetch) and when a segment was last accepted (pull.ts). */
  readonly pull = new FollowerPull();

  // Joiner state.
  /** joining: whom a joiner dials next, and its call in flight (membership.ts). */
  readonly joining: JoinDialer;

  constructor(
    readonly config: EngineConfig,
    restored: RestoredState,
    /** roleHandlers: each role's handler set (role-table.ts), given here so core.ts imports no role file. */
    private readonly roleHandlers: Readonly<Record<Role, RoleHandlers>>,
  ) {
    this.limits = config.limits;
    this.joining = new JoinDialer(config.seeds, config.seeds.length + config.limits.clusterMemberCountMax);
    this.election = new Election(config.limits.electionTimeoutTicks, config.randomSeed);
    this.hs = ownHardState(restored.hardState);
    this.savedHs = ownHardState(this.hs);
    const snap = restored.snapshot;
    const restoredEntries = restored.entries.filter((e) => e.seq > (snap?.seq ?? 0));
    this.log = new RaftLog(snap?.seq ?? 0, snap?.entryTerm ?? 0, restoredEntries);
    // A hole in what recovery handed us (RaftLog keeps only the contiguous run) is local evidence
    // of damage: entries we may have acknowledged are gone, so we reinstall rather than guess.
    const hole = restoredEntries.length > 0 && this.log.lastSeq() < restoredEntries[restoredEntries.length - 1]!.seq;
    this.baseRoster = snap?.roster ?? null;
    this.snapshots = new SnapshotStaging(
      snap && restored.snapshotHeader ? { meta: snap, header: restored.snapshotHeader } : null,
      restoredEntries.filter((e) => e.seq <= restored.appliedSeq),
    );
    this.positions = new LogPositions(this.log, restored.appliedSeq, this.hs.commitSeq);
    this.versions = new VersionSpread(() => this.hs.selfId, config.compat.buildVersion);
    this.reads = new ReadIndex(this.limits, {
      isLeader: () => this.role === 'leader',
      selfId: () => this.hs.selfId,
      term: () => this.hs.term,
      voterIds: () => voterIds(this.currentRoster()),
      commitSeq: () => this.positions.commitSeq,
      termCommitted: () => this.positions.termCommitted(),
      leaderHint: () =>
        this.role === 'leader' ? '' : (memberById(this.currentRoster(), this.leaderId)?.grpcAddr ?? ''),
      ticks: () => this.ticks,
      broadcastHeartbeat: (toIds) => this.broadcastHeartbeat(toIds),
      emit: (effect) => this.fx.other(effect),
    });
    if (this.hs.selfId === 0 && config.bootstrapRoster) {
      const self = memberByName(config.bootstrapRoster, config.name);
      if (self) this.hs.selfId = self.id;
    }
    this.role = this.hs.removed ? 'removed' : this.hs.selfId === 0 ? 'joiner' : 'follower';
    this.handlers = this.roleHandlers[this.role];
    this.election.randomizeTimeout();
    // Storage found damaged at recovery: nothing of it is applied, and the wipe waits for a
    // leader of the current term to reinstall from (fenceLeaderTraffic).
    if (hole) this.latchReseed(`recovered WAL has a hole after seq ${this.log.lastSeq()}`);
    if (this.hs.reseed && !this.hs.removed) this.reseedAwaitingSource = true;
    else this.applyCommitted();
  }

  /**
   * step feeds one input and returns the effects to carry out, in order. A message's term is checked
   * once, before its handler runs (termToAdopt); the frontiers are asserted after every step (assert.ts).
   */
  step(input: Input): Effect[] {
    this.statusCache = null;
    // The frame memo serves one step's ships (the same entries to each follower). Kept past a step it would
    // ride in a checkpoint, whose byte strings a recording keeps as lengths: a replay from that checkpoint
    // would then ship zeros where the node shipped the frame.
    this.lastFrame = null;
    switch (input.type) {
      case 'start':
        break; // recovery's effects, queued by the constructor, drain below
      case 'tick':
        this.tick();
        break;
      case 'stats':
        this.stats = input.stats;
        break;
      case 'request':
        this.onRequest(input.callId, input.request, input.callerId ?? 0);
        break;
      case 'response':
        this.onResponse(input.requestId, input.response);
        break;
      case 'callFailed':
        this.onCallFailed(input.requestId, input.status);
        break;
      case 'streamChunk':
        this.onStreamChunk(input.requestId, input.chunk);
        break;
      case 'streamEnded':
        this.onStreamEnded(input.requestId);
        break;
      case 'propose':
        this.handlers.onPropose(this, [input]);
        break;
      case 'proposeBatch':
        this.handlers.onPropose(this, input.proposals);
        break;
      case 'entriesPersisted':
        this.onEntriesPersisted(input.lastSeq, input.lastTerm, input.generation ?? 0);
        break;
      case 'snapshotStaged':
        this.onSnapshotStaged(input.meta, input.header);
        break;
      case 'snapshotInstalled':
        this.onSnapshotInstalled(input.requestId, input.meta, input.header);
        break;
      case 'snapshotFailed':
        this.onSnapshotFailed(input.requestId, input.code);
        break;
      case 'statusPolled':
        this.onStatusPolled(input.leaderLastSeq);
        break;
      case 'admin':
        this.handlers.onAdmin(this, input.adminId, input.op);
        break;
      case 'readIndex':
        this.reads.onRequest(input.readId, input.asker);
        break;
      default:
        assertNever(input);
    }
    // A leader's own log is the one to match: its commit may pass what it has synced itself when a
    // quorum of followers synced first (its matched frontier is its log end, moved at each append).
    this.positions.assertOrdered(this.role === 'leader');
    if (hardStateChanged(this.hs, this.savedHs)) {
      // Crash loudly rather than persist a term the next election cannot increment exactly.
      assert(
        isCarriableTerm(this.hs.term),
        () => `term ${this.hs.term} is not carriable (values.ts); refusing to save it`,
      );
      this.savedHs = ownHardState(this.hs);
      this.fx.hardState(hardStateToSave(this.hs, Math.min(this.positions.commitSeq, this.positions.durableSeq)));
    }
    return this.fx.drain();
  }

  status(): EngineStatus {
    if (this.statusCache) return this.statusCache;
    // Built by assignment, not conditional spreads (a spread is a runtime copy; built with them, this object took
    // twice as long in a micro-benchmark): the same keys in the same order, so the same shapes and the same JSON.
    // The cast covers the two fields assigned below.
    const status: EngineStatus = {
      id: this.hs.selfId,
      name: this.config.name,
      role: this.role,
      term: this.hs.term,
      leaderId: this.leaderId,
      lastSeq: this.log.lastSeq(),
      lastTerm: this.log.lastTerm(),
      commitSeq: this.positions.commitSeq,
      appliedSeq: this.positions.appliedSeq,
      durableSeq: this.positions.durableSeq,
      matchedSeq: this.positions.matchedSeq,
      snapshotSeq: this.snapshots.seq,
      ready: this.readiness.ready,
      halted: this.hs.halted,
      reseed: this.hs.reseed,
      removed: this.hs.removed,
      lagGaugeByShard: this.readiness.lagGauges(),
    } as EngineStatus;
    const filter = this.ownFilter();
    if (filter) status.filter = filter;
    if ((this.hs.filteredData ?? -1) >= 0) status.filteredData = true;
    const dataFilter = this.dataFilter();
    if (dataFilter) status.dataFilter = dataFilter;
    status.roster = this.currentRoster();
    status.versionsSeen = this.versions.snapshot();
    this.statusCache = status;
    return status;
  }

  /** entries are the log entries after the compaction point, oldest first. */
  entries(): readonly Entry[] {
    return this.log.entries();
  }

  /** logBase is the compaction point: (seq, term) of the last entry no longer held. */
  logBase(): { seq: number; term: number } {
    return { seq: this.log.baseSeq, term: this.log.baseTerm };
  }

  snapshot(): SnapshotMeta | null {
    return this.snapshots.meta;
  }

  // ---------------------------------------------------------------- ticks

  tick(): void {
    this.ticks++;
    if (this.ticks % (this.limits.electionTimeoutTicks * CALL_SWEEP_INTERVAL_ELECTION_TIMEOUTS) === 0)
      this.sweepCalls();
    this.handlers.tick(this);
  }

  // ---------------------------------------------------------------- roles

  promotable(): boolean {
    return (
      this.hs.selfId !== 0 &&
      !this.hs.removed &&
      this.hs.halted === '' &&
      !this.hs.reseed &&
      isVoter(this.currentRoster(), this.hs.selfId)
    );
  }

  /** afterStateImport: the state came from a checkpoint (engine-state.ts); what the role implies follows it. */
  afterStateImport(): void {
    this.handlers = this.roleHandlers[this.role];
  }

  setRole(role: Role): void {
    if (this.role === role) return;
    this.role = role;
    this.handlers = this.roleHandlers[role];
    this.fx.other({ type: 'roleChanged', role, term: this.hs.term, leaderId: this.leaderId });
  }

  becomeFollower(term: number, leaderId: number): void {
    const wasLeader = this.role === 'leader';
    if (term > this.hs.term) {
      this.hs.term = term;
      this.hs.votedFor = 0;
      this.positions.forgetMatch();
      this.pull.stop();
      this.readiness.forgetFrontiers();
    }
    if (wasLeader) this.abandonLeadership();
    if (leaderId !== this.leaderId) this.pull.stop();
    this.leaderId = leaderId;
    this.election.endCampaign();
    this.election.randomizeTimeout();
    if (this.hs.removed) this.setRole('removed');
    else if (this.hs.selfId === 0) this.setRole('joiner');
    else this.setRole('follower');
  }

  abandonLeadership(): void {
    for (const proposalId of this.pendingProposals.abandon())
      this.proposalResult(proposalId, 'leadership-lost', 'leadership lost; outcome unknown', 0, '');
    const abandoned = this.pendingChanges.abandon();
    for (const adminId of abandoned.adminIds)
      this.adminResult(adminId, 'leadership-lost', 'leadership lost; outcome unknown');
    for (const callId of abandoned.joinCallIds)
      this.replyJoinRefusal(callId, 'leadership lost before the join committed; retry');
    const moved = this.transfer.end();
    if (moved !== null) this.adminResult(moved, 'leadership-moved', 'leadership moved');
    this.reads.abandon();
    for (const [, pr] of this.progress.entries()) this.endLive(pr);
    this.progress.clear();
  }

  startPreVote(): void {
    this.election.randomizeTimeout();
    if (!this.termRoomLeft()) return;
    this.leaderId = 0;
    this.setRole('precandidate');
    this.election.startCampaign(this.hs.selfId);
    if (this.tally() === 'won') {
      this.startElection(false);
      return;
    }
    this.requestVotes(true, false);
  }

  startElection(transfer: boolean): void {
    if (!this.termRoomLeft()) return;
    this.hs.term++;
    this.hs.votedFor = this.hs.selfId;
    this.leaderId = 0;
    this.pull.stop();
    this.positions.forgetMatch();
    this.readiness.forgetHeartbeatFrontier();
    this.election.randomizeTimeout();
    this.setRole('candidate');
    this.election.startCampaign(this.hs.selfId);
    if (this.tally() === 'won') {
      this.becomeLeader();
      return;
    }
    this.requestVotes(false, transfer);
  }

  /** termRoomLeft: another election may start (values.ts); otherwise say so once per attempt. */
  termRoomLeft(): boolean {
    if (canIncrementTerm(this.hs.term)) return true;
    this.fx.other({
      type: 'warning',
      code: 'term-space-exhausted',
      message: `term ${this.hs.term} leaves no room for an election; not campaigning`,
    });
    return false;
  }

  requestVotes(prevote: boolean, transfer: boolean): void {
    const term = prevote ? this.hs.term + 1 : this.hs.term;
    for (const id of voterIds(this.currentRoster())) {
      if (id === this.hs.selfId) continue;
      const body: VoteRequest = {
        term,
        candidateRegion: this.hs.selfId,
        lastLogTerm: this.log.lastTerm(),
        lastLogSeq: this.log.lastSeq(),
        prevote,
        transfer,
      };
      this.sendToId(
        id,
        { method: 'RequestVote', body },
        { method: 'RequestVote', term: this.hs.term, toId: id, prevote },
      );
    }
  }

  tally(): VoteTally {
    return this.election.tally(this.currentRoster());
  }

  becomeLeader(): void {
    this.leaderId = this.hs.selfId;
    this.setRole('leader');
    this.electionPrevLog = { term: this.log.lastTerm(), seq: this.log.lastSeq() };
    this.heartbeatElapsedTicks = 0;
    this.election.restartClock();
    this.pull.stop();
    this.readiness.stopPolling();
    this.progress.clear();
    const barrier: Entry = {
      seq: this.log.lastSeq() + 1,
      term: this.hs.term,
      kind: EntryKind.TermBarrier,
      data: new Uint8Array(0),
    };
    this.positions.startTerm(barrier.seq);
    this.reads.onBecomeLeader();
    this.appendLocal([barrier]);
    this.syncProgressToRoster();
    if (this.readiness.wonLeadership()) this.reinstalled(); // Readiness rules, 4
    this.broadcastHeartbeat();
    for (const id of this.progress.ids()) this.maybeShip(id);
    this.maybeCommit();
  }

  /** learnRemoved: we were decommissioned (rule 6): 503, no campaigning, no reseed marker. */
  learnRemoved(): void {
    if (this.hs.removed) return;
    this.hs.removed = true;
    this.hs.reseed = false;
    if (this.role === 'leader') this.abandonLeadership();
    this.leaderId = 0;
    this.pull.stop();
    this.setRole('removed');
    this.readiness.removed(); // Readiness rules, 6
  }

  // ---------------------------------------------------------------- roster

  /** framePayload: encodeSegmentFrame(frame), or the same bytes as the last frame when it was this frame. */
  framePayload(frame: SegmentFrame): Uint8Array {
    if (frame.filtered === true) return encodeSegmentFrame(frame);
    const last = this.lastFrame;
    if (last !== null && sameFrame(last.frame, frame)) return last.payload;
    const payload = encodeSegmentFrame(frame);
    this.lastFrame = { frame, payload };
    return payload;
  }

  /** rosterAt is the configuration in force at seq: the newest kind-4 record at or before it. */
  rosterAt(seq: number): Roster {
    const record = this.log.lastMembershipAtOrBefore(Math.min(seq, this.log.lastSeq()));
    const roster = record ? this.rosterCache.rosterOf(record) : null;
    if (roster) return roster;
    return this.baseRoster ?? this.hs.rosterBase ?? this.config.bootstrapRoster ?? EMPTY_ROSTER;
  }

  /** currentRoster: Raft uses the newest configuration in the log, committed or not. */
  currentRoster(): Roster {
    return this.rosterAt(this.log.lastSeq());
  }

  committedRoster(): Roster {
    return this.rosterAt(this.positions.commitSeq);
  }

  /** pendingConfSeq: the seq of an uncommitted kind-4 record in the log, 0 when none. */
  pendingConfSeq(): number {
    return this.log.hasMembershipAfter(this.positions.commitSeq);
  }

  syncProgressToRoster(): void {
    const roster = this.currentRoster();
    for (const m of roster.members) {
      if (m.id === this.hs.selfId || this.progress.wasLetGo(m.id)) continue;
      const tracked = this.progress.get(m.id);
      if (tracked) {
        if (m.role === MemberRole.Removed && tracked.removalSeq === 0) this.markRemoved(m.id, tracked);
        continue;
      }
      if (m.role !== MemberRole.Removed) {
        const pr = new Progress(this.log.lastSeq(), this.ticks);
        if (filterOf(roster, m.id) !== null || isRefilling(roster, m.id)) pr.matchFloor = this.overlaySeq(m.id);
        this.progress.set(m.id, pr);
        continue;
      }
      // Keep shipping to a removed member until it holds the record that removed it, so it
      // learns (rule 6) even when it is a learner that never campaigns. Once that record is
      // compacted away we stop: it will learn from `removed` in vote responses, or never need to.
      const removalSeq = this.findRemovalSeq(m.id);
      if (removalSeq > 0) this.progress.set(m.id, new Progress(this.log.lastSeq(), this.ticks, removalSeq));
    }
    for (const [id, pr] of [...this.progress.entries()]) {
      if (memberById(roster, id)) continue;
      this.endLive(pr);
      this.progress.delete(id);
    }
  }

  /**
   * markRemoved: member `id`, which we track as a member, is Removed by the record we just appended (a leader
   * appends one kind-4 record at a time and never truncates, so findRemovalSeq finds it). We keep shipping to
   * it until it was told that record committed (learnedRemoval). Its live stream ends: a removed member's
   * ReportApplied is refused once the removal commits, and a chunk has no other answer, so its segments go by
   * ShipSegment, whose answers count (keepLive keeps no stream to a removed member either).
   */
  markRemoved(id: number, pr: Progress): void {
    const removalSeq = this.findRemovalSeq(id);
    assert(removalSeq > 0, () => `member ${id} is Removed in our roster but no record in our log removes it`);
    pr.markRemoved(removalSeq);
    if (pr.live !== null) {
      this.endLive(pr);
      pr.rewind();
    }
  }

  /**
   * overlaySeq: the seq of the newest kind-4 record in our log that set or removed member `id`'s filter
   * (matchFloor); the compaction point when that record is compacted away (it is then at or below it).
   */
  overlaySeq(id: number): number {
    return this.overlayRecordSeq(id) || Math.max(1, this.log.baseSeq);
  }

  /**
   * filterEpochFor: the epoch member `id`'s filtered frames and filtered snapshots carry — the seq its
   * progress took as its match floor (the record that set its filter, or the compaction point when that is
   * gone), so a snapshot and the ships after it are of one epoch and the member takes both.
   */
  filterEpochFor(id: number): number {
    const floor = this.progress.get(id)?.matchFloor ?? 0;
    return Math.max(1, floor > 0 ? floor : this.overlaySeq(id));
  }

  /** overlayRecordSeq: overlaySeq's record when our log (or the roster at its base) still shows it, else 0. */
  overlayRecordSeq(id: number): number {
    let after: { seq: number; roster: Roster } | null = null;
    for (let s = this.log.lastSeq(); s > this.log.baseSeq; s--) {
      const e = this.log.entryAt(s)!;
      if (e.kind !== EntryKind.Membership) continue;
      const r = decodeRoster(e.data);
      if (!r) continue;
      if (after !== null && overlayChanged(r, after.roster, id)) return after.seq;
      after = { seq: s, roster: r };
    }
    const base = this.baseRoster ?? this.hs.rosterBase ?? this.config.bootstrapRoster;
    if (after !== null && base !== null && overlayChanged(base, after.roster, id)) return after.seq;
    return 0;
  }

  /** findRemovalSeq: the seq of the kind-4 record that first lists `id` as Removed, 0 when compacted away. */
  findRemovalSeq(id: number): number {
    for (let s = this.log.baseSeq + 1; s <= this.log.lastSeq(); s++) {
      const e = this.log.entryAt(s)!;
      if (e.kind !== EntryKind.Membership) continue;
      const r = decodeRoster(e.data);
      if (r && isRemoved(r, id)) return s;
    }
    return 0;
  }

  // ---------------------------------------------------------------- local log

  /**
   * appendLocal is the leader's own append (term barrier, proposals, membership records). A leader's log
   * is the one to match, so its matched frontier moves to the log end with every append, whatever the
   * kind: its commit may pass its own sync on its followers' durable frontiers, and a leader demoted in
   * its own term (check-quorum) keeps that frontier as a follower, where commit <= matched is asserted.
   */
  appendLocal(entries: Entry[]): void {
    if (entries.length === 0) return;
    assert(this.role === 'leader', () => `appendLocal as ${this.role}: only a leader appends its own entries`);
    this.positions.appendOwn(entries);
    this.fx.append(entries[0]!.seq, entries);
    this.noteConfigChange(entries);
  }

  /** truncateLocal drops seq and after; never at or below the commit seqno (the caller checked; asserted). */
  truncateLocal(seq: number): void {
    assert(this.role !== 'leader', `a leader never truncates its own log (Leader Append-Only): from ${seq}`);
    this.positions.truncateFrom(seq);
  }

  noteConfigChange(entries: Entry[]): void {
    if (entries.some((e) => e.kind === EntryKind.Membership)) this.syncProgressToRoster();
  }

  onEntriesPersisted(lastSeq: number, lastTerm: number, generation = 0): void {
    if (generation !== this.fx.logGeneration) return; // from before a wipe: what it covered is gone
    if (!this.positions.persisted(lastSeq, lastTerm)) return;
    this.handlers.onPersisted(this);
  }

  /** afterFrontierMoved: one apply round on a follower — report it once, then check the latch. */
  afterFrontierMoved(): void {
    this.reportFrontier();
    this.tryConverge();
  }

  /** reportFrontier sends our leader a ReportApplied when our durable, matched frontier passed what we last reported. */
  reportFrontier(): void {
    const frontier = this.positions.reportable();
    if (frontier > this.positions.reportedSeq && this.leaderId !== 0 && this.role !== 'leader') {
      this.positions.reportedThrough(frontier);
      const body: AppliedReport = {
        reporterShard: this.hs.selfId,
        sourceShard: this.leaderId,
        appliedSeqno: frontier,
        reporterTerm: this.hs.term,
        capabilities: this.config.compat.capabilities,
      };
      this.sendToId(
        this.leaderId,
        { method: 'ReportApplied', body },
        { method: 'ReportApplied', term: this.hs.term, toId: this.leaderId },
      );
    }
  }

  applyCommitted(): void {
    if (this.positions.commitSeq <= this.positions.appliedSeq) return;
    const upTo = Math.min(this.positions.commitSeq, this.log.lastSeq());
    const entries = this.log.slice(
      this.positions.appliedSeq + 1,
      upTo,
      Number.MAX_SAFE_INTEGER,
      Number.MAX_SAFE_INTEGER,
    );
    if (entries.length === 0) return;
    this.positions.appliedThrough(entries[entries.length - 1]!.seq);
    this.fx.apply(entries);
    this.snapshots.applied(entries);
    if (entries.some((e) => e.kind === EntryKind.Membership) && isRemoved(this.committedRoster(), this.hs.selfId))
      this.learnRemoved();
    this.maybeStageSnapshot();
  }

  maybeStageSnapshot(): void {
    if (!this.snapshots.due(this.positions.appliedSeq, this.log.baseSeq, this.limits)) return;
    const cut = this.stagingCut();
    if (cut === null) return;
    this.snapshots.begin();
    const seq = this.positions.appliedSeq;
    this.fx.other({
      type: 'stageSnapshot',
      meta: { seq, entryTerm: this.log.termAt(seq) ?? 0, roster: this.rosterAt(seq), ...(cut ? { filter: cut } : {}) },
    });
  }

  /**
   * stagingCut: what a snapshot of our state is, named in its meta as a served one is — undefined for the full
   * state; the filter our data was cut by and its epoch when we hold filtered data; null (stage nothing yet)
   * while that filter is not known or we are wiping. The filter is our roster's at the epoch once our log
   * reaches it, else the one the filtered snapshot we installed named: a member that caught up through a
   * snapshot cut at an epoch beyond its log otherwise staged its communities' state under a meta saying "full"
   * (sim --filtered seed 178: n6, filtered at epoch 3508, staged at 2705 a state the checker took for the
   * whole committed state).
   */
  private stagingCut(): SnapshotFilter | undefined | null {
    const epoch = this.hs.filteredData;
    if (epoch === undefined) return undefined;
    if (epoch < 1) return null;
    const held = this.snapshots.meta?.filter;
    const filter = this.dataFilter() ?? (held?.epoch === epoch ? held.filter : null);
    return filter ? { epoch, filter } : null;
  }

  onSnapshotStaged(meta: SnapshotMeta, header: SnapshotHeader): void {
    if (!this.snapshots.staged(meta, header)) return;
    const through = Math.min(meta.seq - this.limits.compactionRetainEntryCount, this.positions.appliedSeq);
    if (through > this.log.baseSeq && through <= this.log.lastSeq()) {
      this.baseRoster = this.rosterAt(through);
      this.log.compactThrough(through);
      this.fx.other({ type: 'compact', throughSeq: through });
    }
  }

  // ---------------------------------------------------------------- sending

  /** memberToReach finds where member `id` is dialled: our newest roster, else the committed one, else a vouched one. */
  memberToReach(id: number): MemberInfo | undefined {
    return (
      memberById(this.currentRoster(), id) ??
      memberById(this.committedRoster(), id) ??
      (this.rosterProbe.vouched ? memberById(this.rosterProbe.vouched, id) : undefined)
    );
  }

  sendToId(toId: number, request: RpcRequest, ctx: CallContext): number | null {
    const member = this.memberToReach(toId);
    if (!member) return null;
    return this.sendTo(member.grpcAddr, toId, request, ctx);
  }

  sendTo(to: string, toId: number, request: RpcRequest, ctx: CallContext): number {
    const requestId = this.calls.place(ctx, this.ticks);
    this.fx.message({ type: 'send', requestId, to, toId, request });
    return requestId;
  }

  sweepCalls(): void {
    this.calls.sweep(this.ticks - this.limits.electionTimeoutTicks * CALL_FORGET_AGE_ELECTION_TIMEOUTS);
  }

  reply(callId: number, response: RpcResponse): void {
    this.fx.message({ type: 'reply', callId, response });
  }

  replyError(callId: number, code: RpcStatus['code'], details: string, trailers: Record<string, string> = {}): void {
    this.fx.message({
      type: 'replyError',
      callId,
      status: { code, details, trailers: { [TRAILER_TERM]: String(this.hs.term), ...trailers } },
    });
  }

  // ---------------------------------------------------------------- leader: replication

  /** broadcastHeartbeat sends one heartbeat round: to every member, or to toIds (a read round, read-index.ts). */
  broadcastHeartbeat(toIds?: readonly number[]): void {
    const lag: Record<number, number> = {};
    for (const [id, pr] of this.progress.entries()) lag[id] = Math.max(0, this.log.lastSeq() - pr.matchSeq);
    const round = this.reads.startRound();
    for (const id of toIds ?? this.progress.ids()) {
      if (!this.progress.has(id)) continue;
      const body: HeartbeatRequest = {
        shardId: this.hs.selfId,
        regionId: this.hs.selfId,
        entityCount: this.stats.entityCount,
        signalThroughputEps: this.stats.signalThroughputEps,
        diskBytes: this.stats.diskBytes,
        replicationLag: lag,
        lastHeartbeatNs: this.stats.nowNs,
        term: this.hs.term,
        leaderRegion: this.hs.selfId,
        streamBaseline: this.electionPrevLog.seq,
        prevLogTerm: this.electionPrevLog.term,
        prevLogSeq: this.electionPrevLog.seq,
        buildVersion: this.config.compat.buildVersion,
        leaderLastSeq: this.config.compat.sendsLeaderLastSeq ? this.positions.durableSeq : 0,
      };
      this.sendToId(id, { method: 'Heartbeat', body }, { method: 'Heartbeat', term: this.hs.term, toId: id, round });
    }
  }

  /** maybeShip sends the next segment to a follower when its window and state allow. */
  maybeShip(id: number): void {
    const pr = this.progress.get(id);
    if (!pr || this.role !== 'leader') return;
    if (pr.learnedRemoval()) {
      this.endLive(pr);
      this.progress.letGo(id);
      return;
    }
    if (pr.removalSeq > 0 && this.withholdsKind4From(id)) {
      // An older binary (it reported no bit 0) can never be told: let it go. One we have not heard yet is
      // heartbeated, and shipped to once its answer says it folds kind-4 records.
      if (this.progress.capabilitiesKnownOf(id)) {
        this.endLive(pr);
        this.progress.letGo(id);
      }
      return;
    }
    if (pr.state === 'paused') return;
    if (pr.live !== null) {
      // A live stream carries the unfiltered log: a filtered member never has one (docs/protocol.md).
      assert(filterOf(this.currentRoster(), id) === null, 'no live stream to a filtered member');
      this.pushLive(pr);
      return;
    }
    const window = pr.window(this.limits.inflightSegmentCountMax);
    while (pr.inflightCount < window) {
      const last = this.log.lastSeq();
      let prevSeq = pr.nextSeq - 1;
      if (prevSeq < this.log.baseSeq) prevSeq = this.log.baseSeq; // compacted: an empty probe makes it pull, then fetch a snapshot
      const prevTerm = this.log.termAt(prevSeq)!;
      // A filtered member gets only its communities' event batches; leader_last_seq is still the
      // unfiltered segment's end, so an empty filtered payload advances its frontier and gauge.
      const filter = filterOf(this.currentRoster(), id);
      const entries = filter
        ? this.filteredSlice(prevSeq + 1, last, filter)
        : this.log.slice(prevSeq + 1, last, this.limits.segmentEntryCountMax, this.limits.segmentPayloadBytesMax);
      const commitNews = pr.ackedCommitSeq < this.positions.commitSeq;
      if (entries.length === 0 && !(pr.state === 'probe' && pr.inflightCount === 0) && !commitNews) return;
      if (entries.length === 0 && pr.inflightCount > 0) return;
      const segLast = prevSeq + entries.length;
      const shipped = entries;
      const frame: SegmentFrame = { prevSeq, prevTerm, commitSeq: this.positions.commitSeq, entries: shipped };
      if (filter) {
        frame.filtered = true;
        frame.filterEpoch = this.filterEpochFor(id);
      }
      const body: ShipSegmentRequest = {
        id: { regionId: this.hs.selfId, shardId: this.hs.selfId, seqno: prevSeq + 1 },
        payload: this.framePayload(frame),
        eventCount: filter ? shipped.filter((e) => e.kind !== EntryKind.Withheld).length : entries.length,
        leaderLastSeq: segLast,
        streamBaseline: 0,
        term: this.hs.term,
        leaderRegion: this.hs.selfId,
      };
      const requestId = this.sendToId(
        id,
        { method: 'ShipSegment', body },
        {
          method: 'ShipSegment',
          term: this.hs.term,
          toId: id,
          prevSeq,
          lastSeq: segLast,
          commitSeq: this.positions.commitSeq,
        },
      );
      if (requestId === null) return;
      pr.shipped(requestId, this.ticks, segLast);
      if (entries.length === 0) return;
    }
  }

  /**
   * filteredSlice: the entries from `from` a ship to a member filtered by `filter` covers, cut to its
   * communities. The carried entries are bounded as any segment's (segmentEntryCountMax, segmentPayloadBytesMax);
   * withheld ones cost a few bytes a run however many, so one ship covers up to FILTERED_SHIP_COVER_COUNT_MAX
   * seqs: a filtered member refills by pushes alone (it never pulls), and at segmentEntryCountMax seqs a ship a
   * long log took longer than the liveness bound over a slow link (sim --filtered seed 80: ~25 seqs/s).
   */
  filteredSlice(from: number, to: number, filter: MemberFilter): Entry[] {
    const out: Entry[] = [];
    let carried = 0;
    let bytes = 0;
    for (let seq = from; seq <= to && out.length < FILTERED_SHIP_COVER_COUNT_MAX; seq++) {
      const [entry] = filteredEntries([this.log.entryAt(seq)!], filter, this.config.communityOf);
      if (entry!.kind !== EntryKind.Withheld) {
        bytes += entry!.data.length + 32;
        if (carried >= this.limits.segmentEntryCountMax || (carried > 0 && bytes > this.limits.segmentPayloadBytesMax))
          break;
        carried++;
      }
      out.push(entry!);
    }
    return out;
  }

  foldMatch(id: number, seq: number): void {
    const pr = this.progress.get(id);
    if (!pr || !pr.foldMatch(seq, this.log.lastSeq(), this.ticks)) return;
    this.maybeCommit();
    this.maybeSendTimeoutNow();
  }

  /** maybeCommit advances the quorum commit index: entries of this term only (Figure 8). */
  maybeCommit(): void {
    if (this.role !== 'leader') return;
    // The leader counts its own durable frontier, a follower its reported durable, matched one (decision 6).
    const quorumSeq = quorumMatch(this.currentRoster(), (id) =>
      id === this.hs.selfId ? this.positions.durableSeq : this.progress.matchOf(id),
    );
    if (quorumSeq <= this.positions.commitSeq || this.log.termAt(quorumSeq) !== this.hs.term) return;
    this.positions.commitTo(quorumSeq);
    this.applyCommitted();
    this.settleLeaderWaits();
    this.reads.onCommit();
    for (const id of this.progress.ids()) this.maybeShip(id);
  }

  settleLeaderWaits(): void {
    for (const { seq, proposalId } of this.pendingProposals.settle(this.positions.commitSeq))
      this.proposalResult(proposalId, 'committed', '', seq, '');
    for (const change of this.pendingChanges.settle(this.positions.commitSeq)) {
      if (change.kind === 'admin') this.adminResult(change.id, 'done', '');
      else for (const callId of change.callIds) this.replyJoinAccepted(callId, change.id, this.rosterAt(change.seq));
    }
  }

  /** checkQuorum: a majority of voters was heard this election timeout; each check starts a new count. */
  checkQuorum(): boolean {
    return this.progress.checkQuorum(this.currentRoster(), this.hs.selfId);
  }

  proposalResult(proposalId: number, code: ProposalResultCode, reason: string, seq: number, leaderHint: string): void {
    this.fx.other({ type: 'proposalResult', proposalId, ok: code === 'committed', code, seq, reason, leaderHint });
  }

  adminResult(adminId: number, code: AdminResultCode, reason: string): void {
    this.fx.other({
      type: 'adminResult',
      adminId,
      ok: code === 'done' || code === 'already-leader' || code === 'leadership-moved',
      code,
      reason,
    });
  }

  // ---------------------------------------------------------------- requests

  onRequest(callId: number, request: RpcRequest, callerId = 0): void {
    const problem = requestValueProblem(request);
    if (problem) {
      this.fx.other({ type: 'warning', code: 'bad-request', message: problem });
      this.replyError(callId, StatusCode.INVALID_ARGUMENT, problem);
      return;
    }
    const sender = senderOf(request);
    if (sender !== null) {
      if (sender === 0) {
        this.replyError(
          callId,
          StatusCode.INVALID_ARGUMENT,
          `${request.method}: the sender id is 0, which is not a member id`,
        );
        return;
      }
      const standing = this.standingOf(sender);
      if (standing !== 'member') {
        this.refuseNonMember(callId, request, sender, standing);
        return;
      }
    }
    if (this.refusedBeforeTerm(callId, request)) return;
    // The term rule, once, before any handler: a stale term refused, a newer one adopted (termToAdopt).
    if (isStaleTerm(request, this.hs.term)) return this.refuseStaleTerm(callId, request);
    this.stepTerm(this.termToAdopt(request));
    switch (request.method) {
      case 'ShipSegment':
        this.onShipSegment(callId, request.body);
        break;
      case 'StreamSegments':
        this.onStreamSegments(callId, request.body, callerId);
        break;
      case 'FetchSnapshot':
        this.onFetchSnapshot(callId, request.body, callerId);
        break;
      case 'Heartbeat':
        this.onHeartbeat(callId, request.body);
        break;
      case 'ReportApplied':
        this.onReportApplied(callId, request.body);
        break;
      case 'RequestVote':
        this.onRequestVote(callId, request.body);
        break;
      case 'TimeoutNow':
        this.onTimeoutNow(callId, request.body);
        break;
      case 'JoinCluster':
        this.onJoinCluster(callId, request.body);
        break;
      default:
        assertNever(request);
    }
  }

  /**
   * refusedBeforeTerm answers what is refused whatever the term: a segment to a halted receiver (it
   * takes nothing more) and a heartbeat listing more regions than replicationLagRegionCountMax (a
   * value beyond our limits). True when it answered.
   */
  refusedBeforeTerm(callId: number, request: RpcRequest): boolean {
    if (request.method === 'ShipSegment' && this.hs.halted !== '') {
      this.replyError(callId, StatusCode.FAILED_PRECONDITION, `receiver halted: ${this.hs.halted}`);
      return true;
    }
    if (request.method !== 'Heartbeat') return false;
    const lagRegions = Object.keys(request.body.replicationLag).length;
    if (lagRegions <= this.limits.replicationLagRegionCountMax) return false;
    this.replyError(
      callId,
      StatusCode.INVALID_ARGUMENT,
      `replication_lag has ${lagRegions} regions, limit ${this.limits.replicationLagRegionCountMax}`,
    );
    return true;
  }

  /**
   * refuseStaleTerm answers a request whose term is stale (term-rule.ts) the way the spec has each
   * kind answer it; nothing of ours changes. Our term rides on every answer, so the sender learns it.
   */
  refuseStaleTerm(callId: number, request: RpcRequest): void {
    switch (request.method) {
      case 'ShipSegment':
        return this.replyError(
          callId,
          StatusCode.FAILED_PRECONDITION,
          `stale term ${request.body.term}: receiver is at term ${this.hs.term}`,
        );
      case 'Heartbeat':
        return this.replyHeartbeat(callId, false, isRemoved(this.committedRoster(), request.body.regionId));
      case 'ReportApplied':
        return this.reply(callId, { method: 'ReportApplied', body: { acknowledged: false } });
      case 'RequestVote': {
        const removed = isRemoved(this.committedRoster(), request.body.candidateRegion);
        return this.reply(callId, { method: 'RequestVote', body: { term: this.hs.term, granted: false, removed } });
      }
      case 'TimeoutNow':
        this.warnTimeoutNowRefused(request.body);
        return this.reply(callId, { method: 'TimeoutNow', body: { accepted: false } });
      case 'StreamSegments':
      case 'FetchSnapshot':
        return this.replyError(
          callId,
          StatusCode.FAILED_PRECONDITION,
          `stale puller term ${request.body.term}: source is at term ${this.hs.term}; rejoin first`,
        );
      case 'JoinCluster':
        return assert(false, 'JoinCluster carries no term to be stale');
      default:
        assertNever(request);
    }
  }

  // ---------------------------------------------------------------- identity and trust

  rosterViews(): RosterViews {
    const current = this.currentRoster();
    this.rosterProbe.forgetIfStale(current.membershipVersion);
    return { current, committed: this.committedRoster(), vouched: this.rosterProbe.vouched };
  }

  standingOf(id: number): SenderStanding {
    // The common case first (every heartbeat and ship): an active member of the newest roster.
    const member = memberById(this.currentRoster(), id);
    if (member && member.role !== MemberRole.Removed) return 'member';
    return standingOf(id, this.rosterViews());
  }

  /**
   * refuseNonMember answers a message from a sender that is not a member: nothing of ours
   * changes. A removed member hears `removed` where the message has the field (so it stops);
   * everything else gets FAILED_PRECONDITION with a typed x-svc-refusal trailer. A stranger may
   * be a member our log does not list yet, so it makes us ask a known member (rate-limited).
   */
  refuseNonMember(
    callId: number,
    request: RpcRequest,
    sender: number,
    standing: Exclude<SenderStanding, 'member'>,
  ): void {
    if (this.hs.selfId === 0) {
      // A joiner not yet admitted knows no roster: the leader ships to it as soon as it appends the
      // joiner's record, before the join is answered. Expected, so not worth a warning.
      this.replyError(
        callId,
        StatusCode.FAILED_PRECONDITION,
        `${REFUSAL_CODES.notAdmitted}: this node's join has not been answered yet`,
        { [TRAILER_REFUSAL]: REFUSAL_CODES.notAdmitted },
      );
      return;
    }
    const code = standing === 'removed' ? REFUSAL_CODES.removedMember : REFUSAL_CODES.notAMember;
    const what = standing === 'removed' ? `removed member ${sender}` : `${sender}, which is not a member`;
    this.fx.other({
      type: 'warning',
      code,
      message: `${request.method} from ${what} (term ${'term' in request.body ? request.body.term : 0}) refused; nothing changed`,
    });
    if (standing === 'removed' && request.method === 'Heartbeat') return this.replyHeartbeat(callId, false, true);
    if (standing === 'removed' && request.method === 'RequestVote') {
      return this.reply(callId, { method: 'RequestVote', body: { term: this.hs.term, granted: false, removed: true } });
    }
    this.replyError(callId, StatusCode.FAILED_PRECONDITION, `${code}: ${request.method} from ${what} of this cluster`, {
      [TRAILER_REFUSAL]: code,
    });
    if (standing === 'stranger') this.maybeProbeRoster();
  }

  /** maybeProbeRoster asks the next known member for its roster and term (a JoinCluster under our own name). */
  maybeProbeRoster(): void {
    if (this.hs.selfId === 0 || this.hs.removed || this.role === 'joiner' || this.role === 'removed') return;
    if (!this.rosterProbe.due(this.ticks, this.limits.rosterProbeIntervalTicks)) return;
    const target = this.rosterProbe.nextTarget(this.currentRoster(), this.hs.selfId);
    if (!target) return;
    // capabilities 0: should the name be unknown to the answering leader, it refuses rather
    // than admit anyone (JoinCluster's capability rule); a known name appends nothing.
    const body: JoinRequest = {
      name: this.config.name,
      grpcAddr: this.config.grpcAddr,
      httpAddr: this.config.httpAddr,
      capabilities: 0,
    };
    const requestId = this.sendTo(
      target.grpcAddr,
      target.id,
      { method: 'JoinCluster', body },
      { method: 'JoinCluster', term: this.hs.term, toAddr: target.grpcAddr, probe: true },
    );
    this.rosterProbe.started(requestId, this.ticks);
  }

  /**
   * onRosterProbeAnswer takes a member's word (it answered the call we placed to it): a newer
   * roster it knows becomes vouched (so its members' messages are heard), and a higher term it
   * is at becomes ours, as any member's answer would make it. A stranger's claim never does either.
   */
  onRosterProbeAnswer(body: JoinResponse): void {
    const known = Math.max(this.currentRoster().membershipVersion, this.rosterProbe.vouched?.membershipVersion ?? 0);
    const vouched = vouchedRosterFrom(body, known, this.limits.clusterMemberCountMax);
    if (vouched) this.rosterProbe.vouch(vouched);
    this.stepTerm(body.term); // a member's answer to our call, judged with the roster it vouches for (termToAdopt)
  }

  /**
   * fenceLeaderTraffic: a member's leader-asserting traffic at our term or above (the term rule refused
   * a stale one) names its leader; a newer term or a leader we did not know makes us its follower,
   * unless the term already has another leader. False = rejected.
   */
  fenceLeaderTraffic(term: number, leaderRegion: number): boolean {
    if (leaderRegion === 0) return false;
    if (
      term > this.hs.term ||
      this.role === 'precandidate' ||
      this.role === 'candidate' ||
      this.leaderId !== leaderRegion
    ) {
      if (this.role === 'leader' && term === this.hs.term) return false; // two leaders in one term cannot happen; refuse
      if (term === this.hs.term && this.leaderId !== 0 && this.leaderId !== leaderRegion) {
        // A term has one leader (Raft's Election Safety): a second claimant is forged or corrupt.
        this.fx.other({
          type: 'warning',
          code: 'conflicting-leader',
          message: `member ${leaderRegion} claims term ${term}, whose leader is ${this.leaderId}; refused`,
        });
        return false;
      }
      this.becomeFollower(term, leaderRegion);
    }
    this.election.heardLeader();
    if (this.reseedAwaitingSource && this.role === 'follower') {
      // The leader of our current term is confirmed: it will serve the reinstall.
      this.reseedAwaitingSource = false;
      this.wipeForReseed();
    }
    return true;
  }

  onShipSegment(callId: number, req: ShipSegmentRequest): void {
    const decoded = decodeSegmentFrame(req.payload);
    if (!decoded.ok) {
      this.replyError(callId, StatusCode.INVALID_ARGUMENT, `bad segment payload: ${decoded.reason}`);
      return;
    }
    // A segment that would replace a committed entry is refused before it can change anything, its term
    // included — unless our own log is already known damaged (reseed latched), which is about to be wiped.
    if (!this.reseedAwaitingSource && this.contradictsCommit(req, decoded.frame)) {
      this.reply(callId, {
        method: 'ShipSegment',
        body: { accepted: false, appliedSeqno: this.positions.reportable(), term: this.hs.term },
      });
      return;
    }
    if (!this.fenceLeaderTraffic(req.term, req.leaderRegion)) {
      this.replyError(
        callId,
        StatusCode.FAILED_PRECONDITION,
        `leadership claim of member ${req.leaderRegion} at term ${req.term} refused: receiver is at term ${this.hs.term}, led by ${this.leaderId || 'nobody known'}`,
      );
      return;
    }
    const outcome = this.receiveSegment(req, decoded.frame);
    if (outcome === 'halted') {
      this.replyError(callId, StatusCode.FAILED_PRECONDITION, `receiver halted: ${this.hs.halted}`);
      return;
    }
    const body: ShipSegmentResponse = {
      accepted: outcome === 'accepted',
      appliedSeqno: this.positions.reportable(),
      term: this.hs.term,
    };
    this.reply(callId, { method: 'ShipSegment', body });
    // A contradiction is not repaired by pulling the same history again: the leader pauses,
    // retries after pullTimeoutTicks, and each refusal is reported.
    if (outcome === 'rejected') this.startPull(true);
  }

  /**
   * receiveSegment runs the log-matching check and appends; shared by ShipSegment and stream chunks.
   * 'contradicted': the segment would replace an entry at or below our commit seqno; refused, reported.
   */
  receiveSegment(req: ShipSegmentRequest, frame: SegmentFrame): 'accepted' | 'rejected' | 'contradicted' | 'halted' {
    // leader_last_seq is the segment's authoritative end; 0 means a leader from before the field, and
    // the spec has the receiver use the batch boundaries it decodes instead (segmentEnd).
    const end = segmentEnd(req, frame);
    this.readiness.foldLagGauge(req.id?.shardId ?? req.leaderRegion, end);
    this.pull.heardFrontier(req.term, req.leaderRegion, end);
    for (const e of frame.entries) {
      const known =
        e.kind === EntryKind.EventBatch ||
        e.kind === EntryKind.TermBarrier ||
        (e.kind === EntryKind.Withheld && frame.filtered === true) ||
        (e.kind === EntryKind.Membership && (this.config.compat.capabilities & CAPABILITY_KIND4) !== 0);
      if (!known) {
        this.halt(`unknown batch kind ${e.kind} at seq ${e.seq}`);
        return 'halted';
      }
    }
    if (!this.takesFrameKind(frame)) return 'rejected';
    if (frame.prevSeq > this.log.lastSeq()) return 'rejected';
    if (
      frame.prevSeq >= this.log.baseSeq &&
      frame.prevSeq > this.positions.commitSeq &&
      this.log.termAt(frame.prevSeq) !== frame.prevTerm
    )
      return 'rejected';
    if (
      frame.prevSeq === this.log.baseSeq &&
      this.log.baseSeq > this.positions.commitSeq &&
      this.log.baseTerm !== frame.prevTerm
    )
      return 'rejected';
    if (this.contradictsCommit(req, frame)) return 'contradicted';
    this.appendFromLeader(frame.entries);
    this.positions.matchThrough(frame.prevSeq + frame.entries.length);
    this.pull.accepted(this.ticks);
    const newCommit = Math.min(frame.commitSeq, this.positions.matchedSeq);
    if (newCommit > this.positions.commitSeq) {
      this.positions.commitTo(newCommit);
      this.applyCommitted();
    }
    this.afterFrontierMoved();
    return 'accepted';
  }

  /** contradictsCommit reports (warning) and returns true when a segment would replace a committed entry. */
  contradictsCommit(req: ShipSegmentRequest, frame: SegmentFrame): boolean {
    const conflict = this.committedConflict(frame.entries);
    if (conflict === 0) return false;
    this.fx.other({
      type: 'warning',
      code: 'commit-contradiction',
      message: `member ${req.leaderRegion}'s segment (term ${req.term}) holds another entry at seq ${conflict}, at or below our commit seqno ${this.positions.commitSeq}; refused, nothing truncated`,
    });
    return true;
  }

  /** committedConflict: the seq of the first entry that differs from one we hold at or below our commit seqno, 0 = none. */
  committedConflict(entries: Entry[]): number {
    for (const e of entries) {
      if (e.seq > this.positions.commitSeq) return 0;
      if (e.seq <= this.log.baseSeq) continue;
      const have = this.log.termAt(e.seq);
      if (have === undefined) return 0;
      if (have !== e.term) return e.seq;
    }
    return 0;
  }

  /** appendFromLeader skips entries we hold, truncates at the first conflict (above commit: committedConflict ran), appends the rest. */
  appendFromLeader(entries: Entry[]): void {
    assert(this.role !== 'leader', 'a leader takes no segments: its own log is the one to match');
    let i = 0;
    for (; i < entries.length; i++) {
      const e = entries[i]!;
      if (e.seq <= this.log.baseSeq) continue;
      const have = this.log.termAt(e.seq);
      if (have === undefined) break;
      if (have !== e.term) {
        this.truncateLocal(e.seq);
        break;
      }
    }
    const rest = entries.slice(i).filter((e) => e.seq > this.log.baseSeq);
    if (rest.length > 0) {
      this.log.append(rest);
      this.fx.append(rest[0]!.seq, rest);
    }
  }

  /** ownFilter: our community-overlay filter in our newest roster, null = unfiltered. */
  ownFilter(): ReturnType<typeof filterOf> {
    return this.hs.selfId === 0 ? null : filterOf(this.currentRoster(), this.hs.selfId);
  }

  /** dataFilter: the filter what we hold was cut by (the roster at our filter epoch), null when unknown or unfiltered. */
  dataFilter(): ReturnType<typeof filterOf> {
    const epoch = this.hs.filteredData;
    if (epoch === undefined || epoch <= 0 || this.hs.selfId === 0 || epoch > this.log.lastSeq()) return null;
    return filterOf(this.rosterAt(epoch), this.hs.selfId);
  }

  /** filteredMember: our roster filters us, or what we hold was shipped filtered (we may not know the record yet). */
  filteredMember(): boolean {
    return this.ownFilter() !== null || (this.hs.filteredData ?? -1) >= 0;
  }

  /**
   * snapshotExpectation: the snapshot we may install now (snapshot-install.ts snapshotFilterProblem, run by
   * the driver right before the swap): the full state while we hold the full log (or wipe toward it); else
   * one filtered at our data's epoch (any, while wiping toward a filtered log) by the filter we know for it,
   * and not older than a filter change our own log shows.
   */
  snapshotExpectation(): SnapshotExpectation {
    const epoch = this.hs.filteredData ?? -1;
    if (epoch < 0) return { filtered: false };
    const filter = epoch >= 1 ? this.dataFilter() : this.ownFilter();
    const newer = this.hs.selfId === 0 ? 0 : this.overlayRecordSeq(this.hs.selfId);
    return { filtered: true, epoch, filter, newerEpoch: newer };
  }

  /**
   * filterChangedAfter: our filter was changed again after `epoch` — a record our log shows, or, when our log
   * is compacted past `epoch` (a snapshot installed), a roster at the compaction point that no longer filters
   * us (sim --filtered seed 103: a member refilled by a full snapshot after its filter was removed was wiped by
   * a late filtered ship, as the removal record was inside the snapshot).
   */
  filterChangedAfter(epoch: number): boolean {
    if (this.overlayRecordSeq(this.hs.selfId) > epoch) return true;
    const base = this.baseRoster;
    return base !== null && epoch <= this.log.baseSeq && filterOf(base, this.hs.selfId) === null;
  }

  /** holdsFilteredData: what we hold was shipped filtered, or is being wiped toward a filtered log. */
  holdsFilteredData(): boolean {
    return (this.hs.filteredData ?? -1) >= 0;
  }

  /**
   * takesFrameKind: a filtered frame (withheld runs) and a full one never mix in one log. When a segment of
   * the other kind arrives — our filter was set (we hold other communities' data, which must go) or removed
   * (we hold placeholders, and must hold the full log again) — we wipe the state machine and the log and
   * take the log again from the leader's pushes (filtered) or pulls (full): docs/protocol.md, "Filtered
   * members". A voter never takes a filtered frame (a filtered member is never a voter): refused, false.
   */
  takesFrameKind(frame: SegmentFrame): boolean {
    const filtered = frame.filtered === true;
    const epoch = filtered ? Math.max(1, frame.filterEpoch ?? 0) : undefined;
    if (epoch === this.hs.filteredData && epoch !== 0) return true; // (epoch is never -1)
    if (filtered && isVoter(this.currentRoster(), this.hs.selfId)) {
      this.fx.other({
        type: 'warning',
        code: 'bad-request',
        message: 'a filtered segment reached a voter; refused (a filtered member is never a voter)',
      });
      return false;
    }
    const holdsData = this.log.lastSeq() > 0 || this.positions.appliedSeq > 0;
    // A filtered frame cut by a filter our log already shows changed again (cleared, or set anew) is stale: a
    // ship from before that change, delayed or replayed by the network. It wipes nothing (sim --filtered seed
    // 78: a learner refilled by pulls after its filter was cleared was wiped by a late filtered ship, while
    // the leader still counted the frontier it had reported).
    if (epoch !== undefined && holdsData && this.filterChangedAfter(epoch)) return false;
    if (!holdsData) {
      this.hs.filteredData = epoch;
      return true;
    }
    // The hard state is saved before the wipe is carried out: it says "wiping" (0 toward a filtered log, which
    // pulls nothing; -1 toward the full log), never the new kind, so a
    // crash between the two leaves a node that drops its data again at the next segment rather than one
    // that keeps the old data under the new kind. This segment is refused; the next one, on the empty log,
    // records the new kind (a filtered member's leader pushes again from what it answers; a full one pulls).
    this.hs.filteredData = filtered ? 0 : -1;
    this.wipeLog();
    this.readiness.refilling();
    return false;
  }

  halt(reason: string): void {
    this.hs.halted = reason;
    this.pull.stop();
    this.readiness.halted();
    this.fx.other({
      type: 'warning',
      code: 'receiver-halted',
      message: `segment receiver halted permanently: ${reason}`,
    });
  }

  /**
   * latchReseed: local evidence (a hole in the recovered WAL) says our storage is damaged. A remote
   * claim never latches it (a contradiction is refused and reported instead). The wipe waits for
   * a leader of the current term (reseedAwaitingSource); meanwhile we neither campaign nor vote.
   */
  latchReseed(reason: string): void {
    if (this.hs.removed) return;
    this.hs.reseed = true;
    this.reseedAwaitingSource = true;
    this.readiness.reseedLatched();
    this.fx.other({
      type: 'warning',
      code: 'reseed-latched',
      message: `reseed marker latched: ${reason}; reinstalling from the leader once one is confirmed`,
    });
  }

  /** wipeForReseed drops the state machine and the log; the node then pulls everything again. */
  wipeForReseed(): void {
    this.wipeLog();
    this.startPull();
  }

  /** wipeLog drops the state machine and the log, still knowing who the members are. */
  wipeLog(): void {
    this.hs.rosterBase = this.currentRoster(); // keep knowing who the members are while the log is empty
    this.fx.resetStateMachine();
    this.positions.wipe();
    this.baseRoster = null;
    this.fx.logGeneration++;
    this.fx.append(1, []);
    this.snapshots.drop();
    this.pull.wiped();
  }

  onHeartbeat(callId: number, req: HeartbeatRequest): void {
    const removed = isRemoved(this.committedRoster(), req.regionId);
    // The cut is judged once: before anything changes, unless our log waits to be wiped for a
    // reseed (fenceLeaderTraffic may wipe it), when it is judged on what is left afterwards.
    const awaitingWipe = this.reseedAwaitingSource;
    let cut = awaitingWipe ? 0 : this.divergentFrom(req.prevLogTerm, req.prevLogSeq, req.term);
    if (cut !== 0 && cut <= this.positions.commitSeq) {
      // Obeying would truncate committed entries: a legitimate leader holds every committed
      // entry, so this claim is corrupt or forged. Refused before it changes anything.
      this.fx.other({
        type: 'warning',
        code: 'commit-contradiction',
        message: `member ${req.leaderRegion}'s heartbeat (term ${req.term}) places its log at (${req.prevLogTerm}, ${req.prevLogSeq}), which would cut ours from ${cut}, at or below our commit seqno ${this.positions.commitSeq}; refused`,
      });
      this.replyHeartbeat(callId, false, removed);
      return;
    }
    if (!this.fenceLeaderTraffic(req.term, req.leaderRegion)) {
      this.replyHeartbeat(callId, false, removed);
      return;
    }
    const warning = this.versions.observe(req.leaderRegion, req.buildVersion);
    if (warning) this.fx.other({ type: 'warning', code: 'version-major-mismatch', message: warning });
    if (awaitingWipe) cut = this.divergentFrom(req.prevLogTerm, req.prevLogSeq, req.term);
    if (cut > this.positions.commitSeq) {
      this.truncateLocal(cut);
      this.fx.append(cut, []);
    }
    this.readiness.foldLagGauge(req.shardId, req.leaderLastSeq);
    this.readiness.foldLagGauge(req.shardId, req.streamBaseline);
    this.readiness.onHeartbeatFrontier(req.leaderLastSeq);
    this.pull.heardFrontier(req.term, req.leaderRegion, Math.max(req.leaderLastSeq, req.streamBaseline));
    this.tryConverge();
    const behind = this.positions.reportable() < this.pull.target(this.hs.term, req.leaderRegion);
    if (behind && this.pull.due(this.ticks, this.limits.electionTimeoutTicks, this.hs.reseed)) this.startPull();
    else this.keepStreamOpen();
    // A restarted follower tells its leader where it stands once, even when nothing moves: its matched frontier
    // restarted at the commit seqno its hard state saved, which may be older than the commit the leader counts as
    // told to it. A restart quicker than the heartbeat interval fails no call, and an idle cluster ships nothing,
    // so without this report the leader never re-sends the commit (Progress.reportedBehind). While a pull is in
    // flight (often the one just opened above) it waits: the pull's first chunk carries the leader's commit and
    // makes us report (afterFrontierMoved), so this report would be a second one, and it would make the leader
    // re-send a commit the chunk already told. A pull that fails carries nothing: no report has gone, so the
    // next accepted heartbeat makes it.
    if (!this.positions.reportedSinceStart && !this.pull.active) this.reportFrontier();
    this.replyHeartbeat(callId, true, removed);
  }

  replyHeartbeat(callId: number, accepted: boolean, removed: boolean): void {
    const body: HeartbeatResponse = {
      acknowledged: true,
      term: this.hs.term,
      accepted,
      capabilities: this.config.compat.capabilities,
      removed,
    };
    this.reply(callId, { method: 'Heartbeat', body });
  }

  /**
   * divergentFrom: our entries whose (term, seq) exceed the leader's election-time position and
   * predate its term were never in its log, so never committed: the first seq to cut, 0 = none.
   * A zero in either field means "unknown" (a leader from before the fields, spec Versioning 4),
   * never "an empty log": the check is skipped, and segments' log matching repairs any suffix.
   */
  divergentFrom(prevLogTerm: number, prevLogSeq: number, leaderTerm: number): number {
    if (prevLogTerm === 0 || prevLogSeq === 0) return 0;
    let cut = 0;
    for (let s = this.log.lastSeqBelowTerm(leaderTerm); s > this.log.baseSeq; s--) {
      const t = this.log.termAt(s)!;
      if (t > prevLogTerm || (t === prevLogTerm && s > prevLogSeq)) cut = s;
      else break;
    }
    return cut;
  }

  onReportApplied(callId: number, req: AppliedReport): void {
    const folded = this.handlers.foldReport(this, req);
    this.reply(callId, { method: 'ReportApplied', body: { acknowledged: folded } });
  }

  /**
   * leaseRefuses: while a leader is fresh (we lead, or heard ours within an election timeout), a
   * vote for anyone else is refused unless the leader itself hands over (transfer): check-quorum's lease.
   */
  leaseRefuses(req: VoteRequest): boolean {
    const inLease = this.role === 'leader' || (this.leaderId !== 0 && this.election.leaseHeld);
    return !req.transfer && inLease && req.candidateRegion !== this.leaderId;
  }

  onRequestVote(callId: number, req: VoteRequest): void {
    const removed = isRemoved(this.committedRoster(), req.candidateRegion);
    const respond = (granted: boolean) => {
      const body: VoteResponse = { term: this.hs.term, granted, removed };
      this.reply(callId, { method: 'RequestVote', body });
    };
    if (removed) return respond(false);
    if (this.leaseRefuses(req)) return respond(false);
    // We answer even if our roster says we are a learner (etcd-io/etcd#10998): the candidate's roster, not
    // ours, decides whether our grant counts, and we may have been promoted by a record we never received.
    // Without this a promoted learner cut off from its promotion refuses every vote and no leader is
    // ever elected again (docs/protocol.md, Elections; scenarios/promoted-learner-votes.txt). A node that
    // knows it was removed (committed) stays out. A node reseeding after damage may have lost entries it
    // acknowledged: it grants nothing until reinstalled. The candidate must be a voter of our roster or of
    // one a roster probe vouched for (a non-member's campaign changes nothing).
    const vouched = this.rosterProbe.vouched;
    const reinstalled = !this.hs.reseed;
    // A filtered member never votes: its log is not the log (docs/protocol.md, "Filtered members").
    const mayVote = this.hs.selfId !== 0 && !this.hs.removed && !this.filteredMember();
    const eligible =
      reinstalled &&
      mayVote &&
      (isVoter(this.currentRoster(), req.candidateRegion) ||
        (vouched !== null && isVoter(vouched, req.candidateRegion))) &&
      logUpToDate(req.lastLogTerm, req.lastLogSeq, this.log.lastTerm(), this.log.lastSeq());
    if (req.prevote) return respond(eligible && req.term > this.hs.term);
    const canVote = this.hs.votedFor === 0 || this.hs.votedFor === req.candidateRegion;
    const granted = eligible && canVote;
    if (granted) {
      this.hs.votedFor = req.candidateRegion;
      this.election.restartClock();
    }
    respond(granted);
  }

  /**
   * onTimeoutNow obeys only the leader of our current term: the term must be ours and the sender
   * the leader we follow in it. Anything else (another term, another member, no leader known)
   * is answered accepted = false and changes nothing, so a forged TimeoutNow cannot force an election.
   */
  onTimeoutNow(callId: number, req: TimeoutNowRequest): void {
    const fromOurLeader =
      req.term === this.hs.term && req.term > 0 && this.leaderId !== 0 && req.leaderRegion === this.leaderId;
    if (!fromOurLeader) this.warnTimeoutNowRefused(req);
    const ok = fromOurLeader && this.role === 'follower' && this.promotable();
    if (ok) this.startElection(true);
    this.reply(callId, { method: 'TimeoutNow', body: { accepted: ok } });
  }

  warnTimeoutNowRefused(req: TimeoutNowRequest): void {
    this.fx.other({
      type: 'warning',
      code: 'timeout-now-refused',
      message: `TimeoutNow from member ${req.leaderRegion} at term ${req.term}; our term is ${this.hs.term}, led by ${this.leaderId || 'nobody known'}: ignored`,
    });
  }

  onStreamSegments(callId: number, req: StreamRequest, callerId = 0): void {
    const refusal = this.fenceSourceRequest(req.term) ?? this.refusePullByFiltered(callerId);
    if (refusal) {
      this.replyError(callId, StatusCode.FAILED_PRECONDITION, refusal);
      return;
    }
    const from = Math.max(1, req.fromSeqno);
    if (from <= this.log.baseSeq) {
      const trailer: CatchupTrailer = {
        firstAvailableSeq: this.log.baseSeq + 1,
        snapshotSeq: this.snapshots.seq,
        term: this.hs.term,
        leaderRegion: this.hs.selfId,
      };
      this.replyError(callId, StatusCode.FAILED_PRECONDITION, `compacted past from_seqno ${from}: fetch a snapshot`, {
        [TRAILER_CATCHUP]: JSON.stringify(trailer),
      });
      return;
    }
    if (from > this.log.lastSeq() + 1) {
      this.replyError(
        callId,
        StatusCode.FAILED_PRECONDITION,
        `from_seqno ${from} is beyond the source's log end ${this.log.lastSeq()}`,
      );
      return;
    }
    let next = from;
    let burstBytes = 0;
    // A removed member that may not fold kind-4 records is never sent one (withholdsKind4From).
    const withheld = this.withholdsKind4From(callerId);
    let withheldReached = false;
    for (
      let chunks = 0;
      chunks < this.limits.streamChunkCountMax && burstBytes < this.limits.streamPayloadBytesMax;
      chunks++
    ) {
      let entries = this.log.slice(
        next,
        this.log.lastSeq(),
        this.limits.segmentEntryCountMax,
        this.limits.segmentPayloadBytesMax,
      );
      const kind4At = withheld ? entries.findIndex((e) => e.kind === EntryKind.Membership) : -1;
      if (kind4At >= 0) {
        entries = entries.slice(0, kind4At);
        withheldReached = true;
      }
      if (entries.length === 0 && chunks > 0) break;
      if (entries.length === 0 && withheldReached) {
        this.replyError(
          callId,
          StatusCode.FAILED_PRECONDITION,
          `member ${callerId} is removed and has not reported capability bit 0: the kind-4 record at ${next} is withheld`,
        );
        return;
      }
      const prevSeq = next - 1;
      const frame: SegmentFrame = {
        prevSeq,
        prevTerm: this.log.termAt(prevSeq)!,
        commitSeq: this.positions.commitSeq,
        entries,
      };
      const chunk: ShipSegmentRequest = {
        id: { regionId: this.hs.selfId, shardId: this.hs.selfId, seqno: next },
        payload: this.framePayload(frame),
        eventCount: entries.length,
        leaderLastSeq: prevSeq + entries.length,
        streamBaseline: this.electionPrevLog.seq,
        term: this.hs.term,
        leaderRegion: this.hs.selfId,
      };
      burstBytes += chunk.payload.length;
      this.fx.message({ type: 'streamChunk', callId, chunk });
      next = prevSeq + entries.length + 1;
      if (entries.length === 0 || withheldReached) break;
    }
    if (withheldReached || !this.keepLive(callId, callerId, next)) this.fx.message({ type: 'streamEnd', callId });
  }

  /**
   * withholdsKind4From: member `id` is Removed in our newest roster and has not reported capability bit 0 to us
   * (it reported 0, an older binary, or nothing: we never heard it, or we do not lead). Such a member is never
   * sent a kind-4 record. The leader may append the removal of a voter it never heard from (membership.ts
   * confChangeRefusal: a voter gone for good must stay removable), and an older binary that meets the record
   * halts its receiver for good (spec: an unknown batch kind); if that record is then truncated by a later
   * leader, the member is a voter again but halted, and the cluster has lost it (sim seed 263587: the old
   * founder pulled the chunk holding its own uncommitted removal, halted, and the removal was cut away). It
   * does not need the record: it left the voter set when the record was appended, and a removed member learns
   * its removal from the `removed` flag of vote answers (spec). So a leader ships nothing to it until a
   * heartbeat answer says it folds them (then it is told as any removed member is), lets it go when the answer
   * says it does not, and a source cuts a stream it asks for before the first kind-4 record.
   */
  withholdsKind4From(id: number): boolean {
    if (id === 0 || !isRemoved(this.currentRoster(), id)) return false;
    return (this.progress.capabilitiesOf(id) & CAPABILITY_KIND4) === 0;
  }

  /**
   * keepLive: a stream whose burst reached our log end, from a member that follows live streams
   * (CAPABILITY_LIVE_STREAM, as it reported), stays open: that follower's segments go onto it from now on
   * (maybeShip). A stream it had open before is ended. True when kept.
   */
  keepLive(callId: number, callerId: number, next: number): boolean {
    if (this.limits.liveStreamTicksMax <= 0 || callerId === 0 || next <= this.log.lastSeq()) return false;
    const pr = this.progress.get(callerId);
    if (!pr || pr.removalSeq !== 0 || !pr.mayGoLive(CAPABILITY_LIVE_STREAM)) return false;
    assert(filterOf(this.currentRoster(), callerId) === null, 'a filtered member is never kept live');
    this.endLive(pr);
    pr.goLive(callId, this.ticks, next, this.positions.commitSeq);
    return true;
  }

  /** endLive ends a follower's live stream, if it has one; its segments go by ShipSegment again. */
  endLive(pr: Progress): void {
    if (pr.live === null) return;
    this.fx.message({ type: 'streamEnd', callId: pr.live.callId });
    pr.live = null;
  }

  /**
   * pushLive puts what the follower has not been sent onto its live stream, in segments of the same bounds
   * as ships, or an empty one when it only has commit news. The stream is ordered, so nothing waits for an
   * answer; the follower's ReportApplied moves its frontier. A gap the log no longer holds ends the stream.
   */
  pushLive(pr: Progress): void {
    const live = pr.live!;
    for (;;) {
      const prevSeq = pr.nextSeq - 1;
      const prevTerm = this.log.termAt(prevSeq);
      if (prevSeq < this.log.baseSeq || prevTerm === undefined) {
        this.endLive(pr);
        pr.rewind();
        return;
      }
      const entries = this.log.slice(
        prevSeq + 1,
        this.log.lastSeq(),
        this.limits.segmentEntryCountMax,
        this.limits.segmentPayloadBytesMax,
      );
      // Commit news alone waits while segments are unreported: the next segment or report carries it.
      if (entries.length === 0 && (live.pushedCommitSeq >= this.positions.commitSeq || pr.nextSeq - 1 > pr.matchSeq))
        return;
      if (live.unreportedEnds.length >= this.limits.inflightSegmentCountMax) return;
      const frame: SegmentFrame = { prevSeq, prevTerm, commitSeq: this.positions.commitSeq, entries };
      const chunk: ShipSegmentRequest = {
        id: { regionId: this.hs.selfId, shardId: this.hs.selfId, seqno: prevSeq + 1 },
        payload: this.framePayload(frame),
        eventCount: entries.length,
        leaderLastSeq: prevSeq + entries.length,
        streamBaseline: this.electionPrevLog.seq,
        term: this.hs.term,
        leaderRegion: this.hs.selfId,
      };
      this.fx.message({ type: 'streamChunk', callId: live.callId, chunk });
      pr.pushed(this.ticks, prevSeq + entries.length, this.positions.commitSeq);
      if (entries.length === 0) return;
    }
  }

  /**
   * refusePullByFiltered: a filtered member takes its log only from ShipSegment, which the leader cuts to its
   * communities; StreamSegments (its burst and the live stream after it) serves the unfiltered log, so a caller
   * the roster filters is refused (docs/protocol.md, "Filtered members"). Its engine never streams once it
   * knows its filter (startPull); this covers a member that does not know it yet, and any other. (FetchSnapshot
   * serves such a caller a filtered snapshot instead: onFetchSnapshot.)
   * A caller not known (0: plaintext) cannot be told apart: filters need mutual TLS to hold.
   */
  refusePullByFiltered(callerId: number): string | null {
    if (callerId === 0 || filterOf(this.currentRoster(), callerId) === null) return null;
    return `member-filtered: member ${callerId} is filtered and takes only ShipSegment (its communities)`;
  }

  /**
   * fenceSourceRequest: rules 2 and 4 — serve only at equal terms, as the leader (a stale puller was
   * refused by the term rule, term-rule.ts). A puller at a higher term is refused, but the source does not adopt that term: StreamRequest and
   * SnapshotRequest name no sender, so their term is an unverified claim. A deposed source
   * learns its deposition from members (their answers' terms, or check-quorum).
   */
  fenceSourceRequest(term: number): string | null {
    if (term > this.hs.term)
      return `puller claims term ${term}, above the source's ${this.hs.term}: not serving a possibly stale tail`;
    if (this.role !== 'leader') return `not the leader of term ${term}`;
    return null;
  }

  /**
   * onFetchSnapshot serves the held snapshot covering `from_seqno`. To a caller our newest roster filters (named
   * by its certificate, callerId: never a claim of the request) it is served cut to that member's communities
   * (serveSnapshot's `filter`: the driver restricts the artifact with the same inCommunities the filtered ships
   * use, and hashes what it serves), so a filtered member behind our compaction point catches up without a
   * byte of other communities (docs/protocol.md, "Filtered members").
   */
  onFetchSnapshot(callId: number, req: SnapshotRequest, callerId = 0): void {
    const refusal = this.fenceSourceRequest(req.term);
    if (refusal) {
      this.replyError(callId, StatusCode.FAILED_PRECONDITION, refusal);
      return;
    }
    const from = Math.max(1, req.fromSeqno);
    if (from > this.log.baseSeq) {
      const header: SnapshotHeader = {
        needed: false,
        snapshotSeq: 0,
        term: this.hs.term,
        leaderRegion: this.hs.selfId,
        files: [],
      };
      this.fx.message({ type: 'serveSnapshot', callId, header });
      return;
    }
    const held = this.snapshots.headerCovering(from);
    if (held === null) {
      this.maybeStageSnapshot();
      this.replyError(callId, StatusCode.UNAVAILABLE, 'no snapshot staged yet; retry');
      return;
    }
    const filter = callerId === 0 ? null : filterOf(this.currentRoster(), callerId);
    this.fx.message({
      type: 'serveSnapshot',
      callId,
      header: { ...held, term: this.hs.term, leaderRegion: this.hs.selfId },
      ...(filter ? { filter: { epoch: this.filterEpochFor(callerId), filter } } : {}),
    });
  }

  onJoinCluster(callId: number, req: JoinRequest): void {
    if (
      req.name === '' ||
      req.grpcAddr === '' ||
      req.name.length > MEMBER_NAME_CHARS_MAX ||
      req.grpcAddr.length > MEMBER_ADDRESS_CHARS_MAX ||
      req.httpAddr.length > MEMBER_ADDRESS_CHARS_MAX
    ) {
      this.replyJoinRefusal(
        callId,
        `invalid join request: name and grpc_addr are required (name ≤ ${MEMBER_NAME_CHARS_MAX}, addresses ≤ ${MEMBER_ADDRESS_CHARS_MAX} chars)`,
      );
      return;
    }
    this.handlers.onJoin(this, callId, req);
  }

  /**
   * confChangeRefusal: the kind-4 / capability gate on this leader's next membership change (membership.ts);
   * promotingId / removingId: the member the change promotes or removes (0 = none).
   */
  confChangeRefusal(promotingId: number, removingId = 0): ConfChangeRefusal | null {
    return confChangeRefusal({
      roster: this.currentRoster(),
      selfId: this.hs.selfId,
      commitSeq: this.positions.commitSeq,
      barrierSeq: this.positions.barrierSeq,
      pendingConfSeq: this.pendingConfSeq(),
      transferring: this.transfer.inProgress,
      selfCapabilities: this.config.compat.capabilities,
      capabilitiesOf: (id) => this.progress.capabilitiesOf(id),
      capabilitiesKnownOf: (id) => this.progress.capabilitiesKnownOf(id),
      clusterMemberCountMax: this.limits.clusterMemberCountMax,
      promotingId,
      removingId,
    });
  }

  appendConfChange(roster: Roster): number {
    const before = this.currentRoster();
    const entry: Entry = {
      seq: this.log.lastSeq() + 1,
      term: this.hs.term,
      kind: EntryKind.Membership,
      data: encodeRoster(roster),
    };
    this.appendLocal([entry]);
    // A member whose filter was set or removed will drop what it holds: start its progress afresh (matchFloor).
    for (const m of roster.members) {
      if (m.id === this.hs.selfId || !overlayChanged(before, roster, m.id) || !this.progress.has(m.id)) continue;
      // Its live stream (a member filtered now had one while full) ends: the stream carries the unfiltered log.
      this.endLive(this.progress.get(m.id)!);
      const fresh = new Progress(this.log.lastSeq(), this.ticks);
      fresh.matchFloor = entry.seq;
      this.progress.set(m.id, fresh);
    }
    for (const id of this.progress.ids()) this.maybeShip(id);
    return entry.seq;
  }

  replyJoinRefusal(callId: number, reason: string): void {
    const leader = memberById(this.currentRoster(), this.leaderId);
    // The roster we know rides along on a refusal, so a joiner whose seeds know no leader (or were
    // removed) can try other members instead of dialling the same seed forever.
    const roster = this.currentRoster();
    const body: JoinResponse = {
      accepted: false,
      refusalReason: reason,
      assignedId: 0,
      term: this.hs.term,
      leaderRegion: this.leaderId === 0 ? '' : String(this.leaderId),
      leaderGrpcAddr: leader?.grpcAddr ?? '',
      leaderHttpAddr: leader?.httpAddr ?? '',
      members: roster.members.filter((m) => m.role !== MemberRole.Removed),
      membershipVersion: roster.membershipVersion,
    };
    this.reply(callId, { method: 'JoinCluster', body });
  }

  replyJoinAccepted(callId: number, id: number, roster: Roster): void {
    const self = memberById(roster, this.hs.selfId);
    const body: JoinResponse = {
      accepted: true,
      refusalReason: '',
      assignedId: id,
      term: this.hs.term,
      leaderRegion: String(this.hs.selfId),
      leaderGrpcAddr: self?.grpcAddr ?? this.config.grpcAddr,
      leaderHttpAddr: self?.httpAddr ?? this.config.httpAddr,
      members: roster.members,
      membershipVersion: roster.membershipVersion,
    };
    this.reply(callId, { method: 'JoinCluster', body });
  }

  // ---------------------------------------------------------------- responses

  onResponse(requestId: number, response: RpcResponse): void {
    const ctx = this.calls.get(requestId);
    if (!ctx || ctx.method !== response.method) return;
    const problem = responseValueProblem(response);
    if (problem) {
      this.fx.other({ type: 'warning', code: 'bad-request', message: problem });
      this.onCallFailed(requestId, { code: StatusCode.INVALID_ARGUMENT, details: problem, trailers: {} });
      return;
    }
    this.calls.settle(requestId);
    if (this.stepTerm(this.termToAdopt(response, ctx))) return;
    switch (response.method) {
      case 'ShipSegment':
        this.handlers.onShipAnswer(
          this,
          requestId,
          ctx as Extract<CallContext, { method: 'ShipSegment' }>,
          response.body,
        );
        break;
      case 'Heartbeat': {
        const heartbeat = ctx as Extract<CallContext, { method: 'Heartbeat' }>;
        // Told we were removed, in any role: Readiness rules, 6.
        if (response.body.removed) this.learnRemoved();
        else this.handlers.onHeartbeatAnswer(this, heartbeat, response.body);
        break;
      }
      case 'ReportApplied':
        break;
      case 'RequestVote': {
        const vote = ctx as Extract<CallContext, { method: 'RequestVote' }>;
        // Told we were removed, in any role: Readiness rules, 6 (a removed node stops campaigning).
        if (response.body.removed) this.learnRemoved();
        else this.handlers.onVoteAnswer(this, vote, response.body);
        break;
      }
      case 'TimeoutNow':
        this.onTimeoutNowResponse(ctx as Extract<CallContext, { method: 'TimeoutNow' }>, response.body.accepted);
        break;
      case 'JoinCluster':
        if ((ctx as Extract<CallContext, { method: 'JoinCluster' }>).probe) {
          if (this.rosterProbe.settled(requestId)) this.onRosterProbeAnswer(response.body);
        } else {
          if (this.joining.settled(requestId)) this.handlers.onJoinAnswer(this, response.body);
        }
        break;
      default:
        assertNever(response);
    }
  }

  /**
   * termToAdopt: the term a member's message makes us adopt before its handler runs, 0 = none —
   * etcd's Step check, with its exceptions, in one place. Messages reach it only once admitted
   * (values checked, sender a member; an answer matched to our call), so a stranger's term never counts.
   * - An answer to our call carries the answerer's term (a failed call: its x-svc-term trailer) —
   *   except one saying we were removed (we stop instead: Readiness rules, 6), a vote answer for an
   *   earlier campaign or one that granted, and JoinCluster (a joiner has no term yet; a roster
   *   probe's answer is judged together with the roster it vouches for: onRosterProbeAnswer).
   * - ReportApplied: the reporter's term.
   * - RequestVote: its term, unless it is a pre-vote (which changes nothing), the candidate was
   *   removed, or a fresh leader's lease refuses it (leaseRefuses).
   * - ShipSegment and Heartbeat assert a leader: a newer term is adopted by fenceLeaderTraffic, after
   *   the checks that must refuse them before anything changes, our term included (a commit
   *   contradiction, a bad payload).
   * A stale term is refused before any of this (term-rule.ts, refuseStaleTerm).
   * - StreamSegments and FetchSnapshot name no sender: their term is never adopted (fenceSourceRequest);
   *   TimeoutNow is obeyed only at our own term; JoinCluster carries no term.
   */
  termToAdopt(message: RpcRequest): number;
  termToAdopt(message: RpcResponse, ctx: CallContext): number;
  termToAdopt(message: RpcRequest | RpcResponse, ctx?: CallContext): number {
    if (ctx === undefined) {
      const request = message as RpcRequest;
      switch (request.method) {
        case 'ReportApplied':
          return request.body.reporterTerm;
        case 'RequestVote': {
          const req = request.body;
          if (req.prevote || isRemoved(this.committedRoster(), req.candidateRegion) || this.leaseRefuses(req)) return 0;
          return req.term;
        }
        default:
          return 0;
      }
    }
    const response = message as RpcResponse;
    switch (response.method) {
      case 'ShipSegment':
        return response.body.term;
      case 'Heartbeat':
        return response.body.removed ? 0 : response.body.term;
      case 'RequestVote':
        return response.body.removed || ctx.term !== this.hs.term || response.body.granted ? 0 : response.body.term;
      default:
        return 0;
    }
  }

  /** stepTerm adopts a higher term as a follower with no leader known; true when it did. */
  stepTerm(term: number): boolean {
    if (term <= this.hs.term) return false;
    this.becomeFollower(term, 0);
    return true;
  }

  onTimeoutNowResponse(ctx: Extract<CallContext, { method: 'TimeoutNow' }>, accepted: boolean): void {
    if (!accepted && this.transfer.settle(ctx.adminId))
      this.adminResult(ctx.adminId, 'transfer-refused', 'transfer target refused TimeoutNow');
  }

  onCallFailed(requestId: number, status: RpcStatus): void {
    const ctx = this.calls.get(requestId);
    if (!ctx) return;
    this.calls.settle(requestId);
    // The failed call's x-svc-term trailer is its answerer's term (termToAdopt); a JoinCluster's is not ours to take.
    if (ctx.method !== 'JoinCluster' && this.stepTerm(parseCarriable(status.trailers[TRAILER_TERM]))) return;
    switch (ctx.method) {
      case 'ShipSegment': {
        const pr = this.progress.get(ctx.toId);
        if (!pr || !pr.answered(requestId)) return;
        if (pr.state !== 'paused') pr.rewind();
        break;
      }
      case 'JoinCluster':
        if (ctx.probe) this.rosterProbe.settled(requestId);
        else this.joining.settled(requestId);
        break;
      case 'StreamSegments':
        if (!this.pull.isFor(requestId)) return;
        this.pull.stop();
        if (status.code === StatusCode.FAILED_PRECONDITION && status.trailers[TRAILER_CATCHUP] !== undefined)
          this.startSnapshotFetch();
        break;
      case 'TimeoutNow':
        if (this.transfer.settle(ctx.adminId))
          this.adminResult(ctx.adminId, 'transfer-failed', `TimeoutNow failed: ${status.details}`);
        break;
      case 'Heartbeat':
        if (status.code === StatusCode.UNAVAILABLE && this.role === 'leader')
          this.progress.get(ctx.toId)?.commitNewsMaybeLost();
        break;
      case 'FetchSnapshot':
      case 'RequestVote':
      case 'ReportApplied':
        break;
      default:
        assertNever(ctx);
    }
  }

  // ---------------------------------------------------------------- follower: pulling

  /**
   * startPull asks the leader's stream for what we miss, from the first seq not known to match. `refused`: we
   * just refused the leader's ship (a gap), which a filtered member answers with a snapshot fetch at once.
   */
  startPull(refused = false): void {
    if (this.pull.active || this.leaderId === 0 || this.role === 'leader' || this.hs.halted !== '') return;
    // A member holding filtered data never pulls: the leader serves pulls unfiltered (and refuses a caller its
    // roster filters, refusePullByFiltered); its pushes rewind to what it answers (role-leader.ts). A member whose
    // filter was removed holds the full kind again after its wipe and refills by pulling, though the roster it
    // has replayed so far may still name its old filter (sim --filtered seed 22: it waited on pushes alone,
    // and the leader, taking no frontier below the removal, kept rewinding them).
    // Behind our leader's compaction point, its pushes cannot reach us: a member that refused a ship (a gap: the
    // leader's probe at its compaction point is one) or whose pushes stalled for an election timeout asks for a
    // snapshot, which the leader cuts to our communities (onFetchSnapshot). At most one such fetch per election
    // timeout: a leader whose log still holds what we miss answers not-needed, and pushes from our answer.
    if (this.holdsFilteredData()) {
      const quiet = this.limits.electionTimeoutTicks;
      if ((refused || this.pull.due(this.ticks, quiet, false)) && this.pull.fetchDue(this.ticks, quiet))
        this.startSnapshotFetch();
      return;
    }
    const body: StreamRequest = {
      shardId: this.leaderId,
      fromSeqno: this.positions.matchedSeq + 1,
      term: this.hs.term,
    };
    const requestId = this.sendToId(
      this.leaderId,
      { method: 'StreamSegments', body },
      { method: 'StreamSegments', term: this.hs.term, toId: this.leaderId },
    );
    if (requestId !== null) this.pull.started(requestId, 'stream', this.ticks);
  }

  startSnapshotFetch(): void {
    const leader = this.memberToReach(this.leaderId);
    if (!leader || this.pull.active) return;
    const requestId = this.calls.place(
      { method: 'FetchSnapshot', term: this.hs.term, toId: this.leaderId },
      this.ticks,
    );
    const request: SnapshotRequest = {
      shardId: this.leaderId,
      fromSeqno: this.positions.matchedSeq + 1,
      term: this.hs.term,
    };
    this.pull.started(requestId, 'snapshot', this.ticks);
    this.fx.message({ type: 'fetchSnapshot', requestId, to: leader.grpcAddr, toId: this.leaderId, request });
  }

  onStreamChunk(requestId: number, chunk: ShipSegmentRequest): void {
    if (!this.pull.isFor(requestId) || this.hs.halted !== '') return;
    const reading = readChunk(chunk, this.hs.term, this.leaderId);
    if (reading.verdict === 'invalid') {
      this.fx.other({ type: 'warning', code: 'bad-request', message: `stream chunk: ${reading.problem}` });
      this.pull.stop();
      return;
    }
    if (reading.verdict === 'foreign') return;
    this.election.heardLeader();
    this.pull.progressed(this.ticks);
    if (reading.verdict === 'undecodable' || this.receiveSegment(chunk, reading.frame) !== 'accepted') this.pull.stop();
  }

  onStreamEnded(requestId: number): void {
    if (!this.pull.isFor(requestId)) return;
    this.calls.settle(requestId);
    this.pull.stop();
    // A bounded stream ended before we reached the leader's frontier of this term: pull on.
    if (this.positions.matchedSeq < this.pull.target(this.hs.term, this.leaderId)) this.startPull();
    else this.keepStreamOpen();
  }

  /**
   * keepStreamOpen: a follower that speaks live streams (CAPABILITY_LIVE_STREAM) keeps a StreamSegments call
   * open to its leader, which pushes our segments onto it once its burst caught us up (keepLive). At most one
   * stream starts per election timeout (streamDue), so a leader that ends every stream costs little.
   */
  keepStreamOpen(): void {
    if (
      this.role !== 'follower' ||
      this.limits.liveStreamTicksMax <= 0 ||
      (this.config.compat.capabilities & CAPABILITY_LIVE_STREAM) === 0 ||
      this.hs.reseed ||
      !this.pull.streamDue(this.ticks, this.limits.electionTimeoutTicks)
    )
      return;
    this.startPull();
  }

  onSnapshotInstalled(requestId: number, meta: SnapshotMeta, header: SnapshotHeader): void {
    if (this.pull.isFor(requestId)) this.pull.stop();
    this.calls.settle(requestId);
    // The driver has already swapped the state machine to the artifact: adopt it whatever we thought. It checked
    // the snapshot is of the kind we expect right before the swap (adoptSnapshot, with snapshotExpectation()):
    // a state of other communities than ours, or filtered while we hold the full log, is never adopted.
    const wrong = snapshotFilterProblem(meta, this.snapshotExpectation());
    assert(wrong === null, `snapshotInstalled of a snapshot this member does not take: ${wrong}`);
    if (this.positions.installSnapshot(meta.seq, meta.entryTerm)) this.fx.append(meta.seq + 1, []);
    // The state is of the kind the snapshot is (snapshot-install.ts checked it was the one we expect): a
    // filtered one's epoch, or the full log — which ends a wipe toward it (-1), else the next full segment
    // would wipe the state just installed.
    if (meta.filter) this.hs.filteredData = meta.filter.epoch;
    else this.hs.filteredData = undefined;
    this.baseRoster = meta.roster;
    this.fx.other({ type: 'compact', throughSeq: meta.seq });
    this.snapshots.installed(meta, header);
    if (this.hs.reseed) this.hs.reseed = false;
    if (isRemoved(meta.roster, this.hs.selfId)) this.learnRemoved();
    this.applyCommitted();
    this.afterFrontierMoved();
    this.startPull();
  }

  onSnapshotFailed(requestId: number, code: SnapshotFailureCode): void {
    if (!this.pull.isFor(requestId)) return;
    this.calls.settle(requestId);
    this.pull.stop();
    // The leader's log still holds what we miss: pull it (a filtered member waits for the leader's pushes).
    if (code === 'not-needed' && !this.holdsFilteredData()) this.startPull();
  }

  // ---------------------------------------------------------------- readiness (readiness.ts)

  /**
   * reinstalled: the latch turned ready. A reseeding node rebuilt its log from nothing by pulling from
   * the leader: reaching the leader's frontier (or installing a snapshot) is the reinstall completing.
   */
  reinstalled(): void {
    if (this.hs.reseed) this.hs.reseed = false;
  }

  /** tryConverge: Readiness rules, 2, 3 and 5 (readiness.ts) on our durable, matched frontier. */
  tryConverge(): void {
    if (this.readiness.tryConverge(this.positions.reportable())) this.reinstalled();
  }

  onStatusPolled(leaderLastSeq: number): void {
    if (this.readiness.onStatusPolled(leaderLastSeq)) this.tryConverge();
  }

  // ---------------------------------------------------------------- client and admin

  /** refuseProposal answers a client command we do not append; a follower names the leader to try. */
  refuseProposal(proposalId: number, refusal: { code: ProposalResultCode; reason: string }): void {
    const leader = memberById(this.currentRoster(), this.leaderId);
    this.proposalResult(
      proposalId,
      refusal.code,
      refusal.reason,
      0,
      this.role === 'leader' ? '' : (leader?.grpcAddr ?? ''),
    );
  }

  /** autopilotTick promotes the learner autopilot.ts finds caught up and stable, as an admin promote would. */
  autopilotTick(): void {
    const step = autopilotTick(
      this.autopilot,
      {
        term: this.hs.term,
        roster: this.currentRoster(),
        lastSeq: this.log.lastSeq(),
        matchOf: (id) => this.progress.matchOf(id),
        heard: (id) => this.progress.heardRecently(id),
      },
      this.limits,
    );
    this.autopilot = step.memory;
    const id = step.promote;
    if (id === null || this.progress.matchOf(id) < this.positions.commitSeq || this.confChangeRefusal(id) !== null)
      return;
    this.handlers.onAdmin(this, AUTOPILOT_ADMIN_ID, { op: 'promote', memberId: id });
  }

  /** leadership: role, term, leader and membership version now (EngineLeadership); reads, never changes, state. */
  leadership(): EngineLeadership {
    return {
      role: this.role,
      term: this.hs.term,
      leaderId: this.leaderId,
      membershipVersion: this.currentRoster().membershipVersion,
    };
  }

  /** matchSeqs: on the leader, each follower's matched frontier as last reported (empty elsewhere). */
  matchSeqs(): Record<number, number> {
    const match: Record<number, number> = {};
    if (this.role === 'leader') for (const [id, pr] of this.progress.entries()) match[id] = pr.matchSeq;
    return match;
  }

  maybeSendTimeoutNow(): void {
    if (this.role !== 'leader') return;
    // The target must hold our whole log, or it could not win the election TimeoutNow starts.
    const t = this.transfer.takeDue((targetId) => {
      const pr = this.progress.get(targetId);
      return pr !== undefined && pr.matchSeq >= this.log.lastSeq();
    });
    if (t === null) return;
    this.reads.onTransferStarted();
    const body: TimeoutNowRequest = { term: this.hs.term, leaderRegion: this.hs.selfId };
    this.sendToId(
      t.targetId,
      { method: 'TimeoutNow', body },
      { method: 'TimeoutNow', term: this.hs.term, toId: t.targetId, adminId: t.adminId },
    );
  }
}

/** overlayChanged: member `id`'s filter (or refilling mark) differs between two rosters. */
function overlayChanged(a: Roster, b: Roster, id: number): boolean {
  return (
    JSON.stringify(filterOf(a, id)) !== JSON.stringify(filterOf(b, id)) || isRefilling(a, id) !== isRefilling(b, id)
  );
}

/**
 * segmentEnd: the last seqno a segment covers — its leader_last_seq, or, when that is 0 (unknown: a
 * leader from before the field, spec ShipSegmentRequest.leader_last_seq), the last batch boundary its
 * frame decodes to (prevSeq plus the entries carried). Never below the decoded end: a leader's claim
 * can only say the segment covers more than it carries (entries filtered out), not less.
 */
export function segmentEnd(req: ShipSegmentRequest, frame: SegmentFrame): number {
  const decoded = frame.prevSeq + frame.entries.length;
  return Math.max(req.leaderLastSeq, decoded);
}

/**
 * ownHardState copies a hard state into the one shape the engine keeps: every field present, `filteredData`
 * undefined when absent. Storage may hand back either shape (with or without `filteredData`); a spread copy kept
 * the source's, and the engine's hot paths that read `hs` then met two hidden classes (polymorphic loads).
 */
function ownHardState(h: HardState): HardState {
  return {
    term: h.term,
    votedFor: h.votedFor,
    selfId: h.selfId,
    commitSeq: h.commitSeq,
    rosterBase: h.rosterBase,
    halted: h.halted,
    reseed: h.reseed,
    removed: h.removed,
    filteredData: h.filteredData,
  };
}

/**
 * hardStateToSave is the hard state handed out in a saveHardState effect: the fields of `hs` in their order, with
 * `commitSeq` given, and `filteredData` only when set (absent = the full log, as storage and recordings have it).
 */
function hardStateToSave(hs: HardState, commitSeq: number): HardState {
  const saved: HardState = {
    term: hs.term,
    votedFor: hs.votedFor,
    selfId: hs.selfId,
    commitSeq,
    rosterBase: hs.rosterBase,
    halted: hs.halted,
    reseed: hs.reseed,
    removed: hs.removed,
  };
  if (hs.filteredData !== undefined) saved.filteredData = hs.filteredData;
  return saved;
}

/** hardStateChanged compares what must be saved; rosterBase is replaced, never mutated, so identity suffices. */
function hardStateChanged(a: HardState, b: HardState): boolean {
  return (
    a.term !== b.term ||
    a.votedFor !== b.votedFor ||
    a.selfId !== b.selfId ||
    a.halted !== b.halted ||
    a.reseed !== b.reseed ||
    a.removed !== b.removed ||
    a.filteredData !== b.filteredData ||
    a.rosterBase !== b.rosterBase
  );
}

/**
 * sameFrame: two unfiltered frames with the same bounds, commit and entry objects (the log's own, which it
 * never changes in place: a truncation drops them and an append adds new ones) encode to the same bytes.
 */
function sameFrame(a: SegmentFrame, b: SegmentFrame): boolean {
  if (a.prevSeq !== b.prevSeq || a.prevTerm !== b.prevTerm || a.commitSeq !== b.commitSeq) return false;
  if (a.filtered === true || b.filtered === true || a.entries.length !== b.entries.length) return false;
  for (let i = 0; i < a.entries.length; i++) if (a.entries[i] !== b.entries[i]) return false;
  return true;
}
