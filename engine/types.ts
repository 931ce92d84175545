// The engine's contract with whatever drives it (the simulator or a real node):
// inputs go in through Engine.step, effects come out in the order they must be
// carried out. See docs/architecture.md for the ordering contract.
import type {
  MemberInfo,
  RpcRequest,
  RpcResponse,
  RpcStatus,
  ShipSegmentRequest,
  SnapshotHeader,
  SnapshotRequest,
} from './rpc.js';

/**
 * EntryKind numbers entries in the log (decision 5). 3 and 5+ are unknown and halt a receiver.
 * Withheld is local, never a kind on the wire: the placeholder a filtered member keeps for an event
 * batch outside its communities (engine/communities.ts), rebuilt from a filtered frame's withheld runs
 * (segment-frame.ts); it holds the entry's seq and term and no data, and applies as nothing.
 */
export const EntryKind = { EventBatch: 1, TermBarrier: 2, Membership: 4, Withheld: 255 } as const;
export type EntryKind = number;

/** Entry is one log record: numbered by a global seqno from 1, carrying the term that wrote it. */
export interface Entry {
  seq: number;
  term: number;
  kind: EntryKind;
  data: Uint8Array;
}

/** MemberRole is MemberInfo.role on the wire. */
export const MemberRole = { Voter: 0, Learner: 1, Removed: 2 } as const;
export type MemberRole = (typeof MemberRole)[keyof typeof MemberRole];

/**
 * MemberFilter is a filtered member's communities (docs/protocol.md, "Filtered members"): the event
 * batches it holds are those whose key starts with one of `prefixes` or whose tenant is one of
 * `tenants` (engine/communities.ts). Both empty is no community at all (it holds no event batch).
 */
export interface MemberFilter {
  prefixes: string[];
  tenants: string[];
}

/**
 * Community is what a CommunityReader reads from an event batch's command: its key and its tenant
 * ('' when the record has none). null: the command names no key (held by no filtered member).
 */
export interface Community {
  key: string;
  /** tenant: the record's tenant, '' for none, null for unknown (a delete names no record: held by every tenant filter). */
  tenant: string | null;
}

/** CommunityReader reads an event batch's community; pure (no I/O), supplied by the driver (EngineConfig). */
export type CommunityReader = (data: Uint8Array) => Community | null;

/** Roster is a whole membership configuration, the body of a kind-4 record. */
export interface Roster {
  /** membershipVersion counts configurations: each kind-4 record raises it by one. */
  membershipVersion: number;
  /** nextMemberId is the next permanent id to hand out; ids are never reused. */
  nextMemberId: number;
  members: MemberInfo[];
  /** filters: member id → its filter, for filtered learners only; absent when no member is filtered. */
  filters?: Record<number, MemberFilter>;
  /**
   * refilling: ids of learners whose filter was removed and who have not yet been promoted: each must
   * prove to the leader that it holds the full log again before promotion (docs/protocol.md). Absent = none.
   */
  refilling?: number[];
}

/** CAPABILITY_KIND4 is capability bit 0: the binary folds kind-4 membership records. */
export const CAPABILITY_KIND4 = 0x1;

/**
 * CAPABILITY_LIVE_STREAM is capability bit 1: the binary follows a StreamSegments call that stays open past
 * its burst (a leader pushes live segments onto it) and opens one to its leader while caught up. A leader
 * keeps a follower's stream open only when the follower reported this bit (docs/protocol.md, "Live streams").
 */
export const CAPABILITY_LIVE_STREAM = 0x2;

/**
 * HardState is what must be durable before any effect that follows a
 * saveHardState effect is carried out (a vote, a term, our identity).
 */
export interface HardState {
  term: number;
  /** votedFor is the member id voted for in `term`, 0 = none. */
  votedFor: number;
  /** selfId is our permanent member id, 0 while a joiner has not been admitted. */
  selfId: number;
  /** commitSeq is a lower bound of the cluster's commit index (saves re-shipping after a restart). */
  commitSeq: number;
  /** rosterBase is the roster a joiner was admitted with, used until its log or a snapshot says more. */
  rosterBase: Roster | null;
  /** halted names why the segment receiver stopped for good (unknown entry kind), '' = running. */
  halted: string;
  /** reseed is latched when repair would cross the applied seqno; cleared by a snapshot install. */
  reseed: boolean;
  /** removed is set once we learned we were decommissioned; it never clears. */
  removed: boolean;
  /**
   * filteredData: the log and state this node holds were shipped filtered (withheld placeholders, some
   * communities only), cut by the filter set at this seq (its filter epoch); absent = the full log. A
   * segment of another kind or epoch wipes them first (core.ts takesFrameKind); 0 = wiping toward a filtered log,
   * -1 toward the full log (whatever is held is dropped at the next segment).
   */
  filteredData?: number;
}

/** SnapshotMeta describes the state a snapshot artifact holds (carried in its meta file). */
export interface SnapshotMeta {
  /** seq is the last seqno the artifact includes (SnapshotHeader.snapshot_seq). */
  seq: number;
  /** entryTerm is the term of the entry at `seq`, for the log-matching check after install. */
  entryTerm: number;
  /** roster is the membership configuration at `seq`. */
  roster: Roster;
  /**
   * filter: the artifact holds only the communities of this filter (a filtered snapshot, cut by the leader
   * for a filtered member: docs/protocol.md, "Filtered members"); absent = the full state. `seq` and
   * `entryTerm` keep the unfiltered numbering.
   */
  filter?: SnapshotFilter;
}

/**
 * SnapshotFilter names the filter a filtered snapshot was cut by: the member's filter and its epoch (the seq
 * of the membership record that set it, the same epoch its filtered frames carry).
 */
export interface SnapshotFilter {
  epoch: number;
  filter: MemberFilter;
}

/**
 * SnapshotExpectation: what a puller may install now (Engine.snapshotExpectation, checked by
 * engine/snapshot-install.ts right before the swap): the full state, or a filtered one of `epoch` (0: any
 * epoch, as it is wiping toward a filtered log and has not yet heard which) cut by `filter` (null: not known
 * to it yet).
 */
export type SnapshotExpectation =
  { filtered: false } | { filtered: true; epoch: number; filter: MemberFilter | null; newerEpoch: number };

/** RestoredState is what a (re)starting node recovered from its storage. */
export interface RestoredState {
  hardState: HardState;
  /** snapshot is the newest installed or staged snapshot, null = none. */
  snapshot: SnapshotMeta | null;
  /** snapshotHeader is that artifact's manifest (needed=true), so a restarted leader can serve it. */
  snapshotHeader: SnapshotHeader | null;
  /** entries follow the snapshot contiguously (entries[0].seq = snapshot.seq + 1). */
  entries: Entry[];
  /** appliedSeq is where the node's state machine already is (>= snapshot seq). */
  appliedSeq: number;
}

/** Compat lets the simulator model older peers: fields their binary predates stay zero. */
export interface Compat {
  /** sendsLeaderLastSeq false = heartbeats carry leader_last_seq 0 (the status-poll path). */
  sendsLeaderLastSeq: boolean;
  /** capabilities this binary reports (0 = cannot fold kind-4 records). */
  capabilities: number;
  /** buildVersion reported in heartbeats, '' = from before the field. */
  buildVersion: string;
}

/** EngineConfig holds every tunable, each with a name and a default (engine/limits.ts). */
export interface EngineConfig {
  /** name is this node's member name; joins are idempotent by name. */
  name: string;
  grpcAddr: string;
  httpAddr: string;
  /** bootstrapRoster is the founding configuration; null for a joiner. */
  bootstrapRoster: Roster | null;
  /** seeds are gRPC addresses a joiner dials with JoinCluster (any member). */
  seeds: string[];
  /** randomSeed seeds the engine's own PRNG (election jitter). */
  randomSeed: number;
  compat: Compat;
  limits: EngineLimits;
  /**
   * communityOf reads an event batch's key and tenant, for the community-overlay filter (a leader ships
   * a filtered member only its communities' batches). Absent: no batch belongs to any community.
   */
  communityOf?: CommunityReader;
}

export interface EngineLimits {
  /** heartbeatIntervalTicks paces a leader's heartbeats to each member. */
  heartbeatIntervalTicks: number;
  /** electionTimeoutTicks: a follower that hears no leader for a random time in [this, twice this) stands for election. */
  electionTimeoutTicks: number;
  /** segmentEntryCountMax bounds entries per ShipSegment and per stream chunk. */
  segmentEntryCountMax: number;
  /** segmentPayloadBytesMax bounds one segment payload. */
  segmentPayloadBytesMax: number;
  /** inflightSegmentCountMax bounds unacknowledged ships per follower. */
  inflightSegmentCountMax: number;
  /** shipRetryTicks is how long a ship may go unanswered before it is sent again. */
  shipRetryTicks: number;
  /** streamChunkCountMax bounds the chunks one StreamSegments call serves. */
  streamChunkCountMax: number;
  /** streamPayloadBytesMax bounds the payload bytes one StreamSegments call serves (its burst). */
  streamPayloadBytesMax: number;
  /** pullTimeoutTicks bounds how long a pull (stream or snapshot) may run before it is retried. */
  pullTimeoutTicks: number;
  /**
   * liveStreamTicksMax: how long a leader keeps a caught-up follower's StreamSegments call open and pushes
   * that follower's segments onto it instead of a ShipSegment call each (docs/protocol.md, "Live streams");
   * then it ends the call and the follower opens another. 0 = never keep one open. Kept below
   * pullTimeoutTicks (the follower gives up a silent pull) and below the transport's stream deadline.
   */
  liveStreamTicksMax: number;
  /** snapshotEntryCountThreshold stages a snapshot once this many applied entries follow the last one (and see the next two). */
  snapshotEntryCountThreshold: number;
  /**
   * snapshotLogBytesPercentMin: past the threshold, a snapshot waits until the data of the entries applied since
   * the last one adds up to this percent of the last one's bytes, so a large store is not rewritten every
   * threshold entries (engine/snapshot-staging.ts). 0 = the threshold alone.
   */
  snapshotLogBytesPercentMin: number;
  /** snapshotEntryCountMax stages a snapshot once this many applied entries follow the last one, whatever their bytes: it bounds the log a snapshot waits with. */
  snapshotEntryCountMax: number;
  /** compactionRetainEntryCount keeps this many entries below a snapshot for slow followers. */
  compactionRetainEntryCount: number;
  /** proposalQueueCountMax bounds uncommitted proposals a leader accepts. */
  proposalQueueCountMax: number;
  /** joinRetryTicks is how long a joiner waits for a JoinCluster answer before dialling again. */
  joinRetryTicks: number;
  /** statusPollIntervalTicks paces the status-poll readiness path. */
  statusPollIntervalTicks: number;
  /** transferTimeoutTicks bounds a leadership transfer. */
  transferTimeoutTicks: number;
  /** clusterMemberCountMax bounds the roster. */
  clusterMemberCountMax: number;
  /** replicationLagRegionCountMax bounds the replication_lag map accepted in a heartbeat. */
  replicationLagRegionCountMax: number;
  /** rosterProbeIntervalTicks paces roster probes (asking a known member who the members are). */
  rosterProbeIntervalTicks: number;
  /** readIndexPendingCountMax bounds reads a leader holds while it confirms its leadership. */
  readIndexPendingCountMax: number;
  /**
   * readLeaseEnabled: 1 = answer reads without a heartbeat round while a recent round's lease holds
   * (engine/read-index.ts says when that is safe); 0 = every read waits for a round (the default).
   */
  readLeaseEnabled: number;
  /** clockDriftPercentMax: how far a node's tick rate may stray from nominal, in percent; shortens the read lease. */
  clockDriftPercentMax: number;
  /** autopilotEnabled: 1 = the leader promotes caught-up, stable learners by itself (engine/autopilot.ts); 0 = never. */
  autopilotEnabled: number;
  /** autopilotLagSeqMax: how many entries behind the leader's log end a learner may be and still count as caught up. */
  autopilotLagSeqMax: number;
  /** autopilotStableTicks: how many leader ticks in a row a learner must be caught up and heard before it is promoted. */
  autopilotStableTicks: number;
  /** autopilotFailureTolerance: a leave that would leave fewer than 2f + 1 voters is refused (f = this). */
  autopilotFailureTolerance: number;
}

/** NodeStats are the driver's measurements that heartbeats carry (engine/ measures nothing itself). */
export interface NodeStats {
  entityCount: number;
  signalThroughputEps: number;
  diskBytes: number;
  /** nowNs is the wall-clock time in nanoseconds since the epoch, as a decimal string. */
  nowNs: string;
}

/** AdminOp is an operator's membership or leadership command, served by the leader. */
export type AdminOp =
  | { op: 'promote'; memberId: number }
  | { op: 'remove'; memberId: number }
  | { op: 'transfer'; memberId: number }
  /** leave: a member removes itself; refused below autopilotFailureTolerance (engine/autopilot.ts), never the leader. */
  | { op: 'leave'; memberId: number }
  /** filter: set (or, with null, remove) a learner's community-overlay filter (docs/protocol.md, "Filtered members"). */
  | { op: 'filter'; memberId: number; filter: MemberFilter | null };

/** Proposal is one client command handed to the leader; proposalId names its proposalResult. */
export interface Proposal {
  proposalId: number;
  data: Uint8Array;
}

/** Input is everything that can happen to an engine. */
export type Input =
  /**
   * start: the driver's first input after constructing the engine. The step itself does nothing; its
   * effects are what recovery queued in the constructor (applying the committed entries found on
   * disk, a reseed latch), so they are carried out before any peer's message and are never
   * attributed to one.
   */
  | { type: 'start' }
  | { type: 'tick' }
  | { type: 'stats'; stats: NodeStats }
  /**
   * request: a peer called us; answer through a reply/replyError/stream effect with the same callId.
   * callerId, on StreamSegments and FetchSnapshot only: the member id of the caller's certificate (the
   * transport's peer gate authenticated it); 0 or absent = not known (plaintext, or a name not in the roster):
   * never kept live. A filtered member's pull is refused by it (refusePullByFiltered).
   */
  | { type: 'request'; callId: number; request: RpcRequest; callerId?: number }
  /** response: a unary call we made (send effect `requestId`) answered OK. */
  | { type: 'response'; requestId: number; response: RpcResponse }
  /** callFailed: a call we made ended with a non-OK status (including transport failures, as UNAVAILABLE). */
  | { type: 'callFailed'; requestId: number; status: RpcStatus }
  /** streamChunk: one message of a StreamSegments call we made. */
  | { type: 'streamChunk'; requestId: number; chunk: ShipSegmentRequest }
  /** streamEnded: our StreamSegments call ended OK (a failure arrives as callFailed). */
  | { type: 'streamEnded'; requestId: number }
  | { type: 'propose'; proposalId: number; data: Uint8Array }
  /**
   * proposeBatch: several client commands at once, in order. One step appends them all and ships
   * them in one segment per follower, so a driver under load pays one step, one WAL append and one
   * ShipSegment per follower for the batch instead of per command.
   */
  | { type: 'proposeBatch'; proposals: Proposal[] }
  /**
   * entriesPersisted: the append effects up to (lastSeq, lastTerm) are durable. generation: the newest such
   * append's (absent = 0); a notice of an older generation than the engine's is ignored (a wipe came after it).
   */
  | { type: 'entriesPersisted'; lastSeq: number; lastTerm: number; generation?: number }
  /** snapshotStaged: a stageSnapshot effect finished; its artifact is ready to serve. */
  | { type: 'snapshotStaged'; meta: SnapshotMeta; header: SnapshotHeader }
  /** snapshotInstalled: a fetchSnapshot effect fetched, verified and swapped in the artifact durably. */
  | { type: 'snapshotInstalled'; requestId: number; meta: SnapshotMeta; header: SnapshotHeader }
  /** snapshotFailed: a fetchSnapshot effect did not install; `code` says why, `reason` is the detail for people. */
  | { type: 'snapshotFailed'; requestId: number; code: SnapshotFailureCode; reason: string }
  /** statusPolled: the leader's status endpoint answered (status-poll readiness path). */
  | { type: 'statusPolled'; leaderLastSeq: number }
  | { type: 'admin'; adminId: number; op: AdminOp }
  /**
   * readIndex: a client wants a linearizable read; readId names its readIndexResult. Only the leader
   * answers with an index; a follower refuses with a leader hint (its driver asks the leader). asker: the
   * member that forwarded these reads (engine/read-index.ts, "The asker's ack"); absent for any other read.
   */
  | { type: 'readIndex'; readId: number; asker?: ReadIndexAsker };

/**
 * ReadIndexAsker is the member that forwarded a read-index request to this leader, as its driver vouches:
 * `id` is the member its peer certificate names (never a field of the request), `term` the term the
 * request says the member held when it sent it. The input must hold only reads that began before that
 * request was sent (the asker's own batch). A voter of the leader's term counts as one ack of the reads'
 * confirmation round (engine/read-index.ts).
 */
export interface ReadIndexAsker {
  id: number;
  term: number;
}

/**
 * ReadIndexRefusal says why a read got no index: `not-leader` (ask leaderHint, if any),
 * `stepped-down` (leadership was lost before the read was confirmed; retry at the new leader),
 * `queue-full` (readIndexPendingCountMax reads are already waiting).
 */
export type ReadIndexRefusal = 'not-leader' | 'stepped-down' | 'queue-full';

/** Effect is everything an engine asks its driver to do, in order. */
export type Effect =
  /** saveHardState must be durable before any later effect of the same step is carried out. */
  | { type: 'saveHardState'; hardState: HardState }
  /**
   * append truncates the log at fromSeq (dropping fromSeq and after), then appends entries; report durability
   * with entriesPersisted, echoing `generation` (absent = 0): it rises each time the engine wipes its log, so a
   * sync notice from before a wipe never covers the same (seq, term) written again after it.
   */
  | { type: 'append'; fromSeq: number; entries: Entry[]; generation?: number }
  | { type: 'send'; requestId: number; to: string; toId: number; request: RpcRequest }
  | { type: 'reply'; callId: number; response: RpcResponse }
  | { type: 'replyError'; callId: number; status: RpcStatus }
  /** streamChunk sends one message on a StreamSegments call we serve. */
  | { type: 'streamChunk'; callId: number; chunk: ShipSegmentRequest }
  /** streamEnd closes a StreamSegments call we serve, OK. */
  | { type: 'streamEnd'; callId: number }
  /**
   * serveSnapshot answers a FetchSnapshot call: the header, then (needed=true) the artifact's files in manifest order.
   * With `filter` (the caller is a filtered member), the driver serves the artifact cut to that filter's
   * communities instead — its own files, meta (with `filter`) and manifest, hashed once — never the full one.
   */
  | { type: 'serveSnapshot'; callId: number; header: SnapshotHeader; filter?: SnapshotFilter }
  /**
   * fetchSnapshot runs a FetchSnapshot call, verifies every file, installs durably; answer with snapshotInstalled/snapshotFailed.
   * A snapshot whose seq is not above the state machine's applied seqno (checked together with the swap) is not installed:
   * answer snapshotFailed `stale: …` (the follower caught up another way while the fetch ran; installing would take it back).
   */
  | { type: 'fetchSnapshot'; requestId: number; to: string; toId: number; request: SnapshotRequest }
  /** apply hands committed entries to the state machine, in order. */
  | { type: 'apply'; entries: Entry[] }
  /** resetStateMachine drops all applied state (reseed), before a snapshot is installed. */
  | { type: 'resetStateMachine' }
  /** stageSnapshot captures the state machine at appliedSeq = meta.seq; answer with snapshotStaged. */
  | { type: 'stageSnapshot'; meta: SnapshotMeta }
  /** compact may delete log entries up to throughSeq (a staged snapshot covers them). */
  | { type: 'compact'; throughSeq: number }
  /** proposalResult answers a proposal: ok = committed at `seq`; otherwise `code` says why not (reason: detail for people). */
  | {
      type: 'proposalResult';
      proposalId: number;
      ok: boolean;
      code: ProposalResultCode;
      seq: number;
      reason: string;
      leaderHint: string;
    }
  /** adminResult answers an admin op: `code` says what happened (reason: detail for people). */
  | { type: 'adminResult'; adminId: number; ok: boolean; code: AdminResultCode; reason: string }
  /**
   * readIndexResult answers a readIndex: serve the read once the state machine has applied `index`
   * (refusal null), or do not serve it (index 0).
   */
  | { type: 'readIndexResult'; readId: number; index: number; refusal: ReadIndexRefusal | null; leaderHint: string }
  /** pollStatus asks the driver to read the leader's status endpoint (answer with statusPolled). */
  | { type: 'pollStatus'; leaderHttpAddr: string }
  | { type: 'readiness'; ready: boolean; reason: ReadinessReason }
  | { type: 'roleChanged'; role: Role; term: number; leaderId: number }
  | { type: 'warning'; code: WarningCode; message: string };

export type Role = 'joiner' | 'follower' | 'precandidate' | 'candidate' | 'leader' | 'removed';

export type WarningCode =
  | 'version-major-mismatch'
  | 'receiver-halted'
  | 'reseed-latched'
  | 'storage-divergence'
  | 'bad-request'
  /** not-a-member: a WalShipping message from a sender our rosters do not list; refused, nothing changed. */
  | 'not-a-member'
  /** removed-member: a message from a member our committed roster lists as Removed; refused. */
  | 'removed-member'
  /** commit-contradiction: a leader's claim would truncate at or below our commit seqno; refused. */
  | 'commit-contradiction'
  /** conflicting-leader: a second leader claimed a term whose leader we already follow; refused. */
  | 'conflicting-leader'
  /** timeout-now-refused: TimeoutNow not from the leader of our current term; ignored. */
  | 'timeout-now-refused'
  /** term-space-exhausted: our term has no room for another election (values.ts). */
  | 'term-space-exhausted';

/**
 * EngineLeadership is the part of EngineStatus a watcher compares after every step (the node's /cluster event
 * ring): read without building the whole status document.
 */
export interface EngineLeadership {
  role: Role;
  term: number;
  leaderId: number;
  membershipVersion: number;
}

/** Readiness is the engine's readiness-latch state as a driver reads it. */
export interface EngineStatus {
  id: number;
  name: string;
  role: Role;
  term: number;
  leaderId: number;
  lastSeq: number;
  lastTerm: number;
  commitSeq: number;
  appliedSeq: number;
  durableSeq: number;
  matchedSeq: number;
  snapshotSeq: number;
  ready: boolean;
  halted: string;
  reseed: boolean;
  removed: boolean;
  /** lagGaugeByShard: per source shard, the monotonic high-water leader_last_seq seen. */
  lagGaugeByShard: Record<number, number>;
  /** filter: this member's community-overlay filter in its newest roster; absent = unfiltered. */
  filter?: MemberFilter;
  /** filteredData: what this node holds was shipped filtered (HardState.filteredData); absent = the full log. */
  filteredData?: true;
  /**
   * dataFilter: the filter what this node holds was cut by (the roster at its filter epoch), when its log
   * reaches that record; it serves reads only while it equals `filter` (a newer filter means it is about to refill).
   */
  dataFilter?: MemberFilter;
  roster: Roster;
  versionsSeen: Record<number, string>;
}

/**
 * SnapshotFailureCode says why a fetched snapshot was not installed: not-needed = the leader's log
 * still holds what we miss (pull instead); stale = the state machine got past it meanwhile;
 * wrong-filter = a filtered snapshot for a puller that expects the full state or another filter (or the
 * other way round: snapshot-install.ts snapshotFilterProblem); failed = anything else (unreachable,
 * deadline, a bad artifact).
 */
export type SnapshotFailureCode = 'not-needed' | 'stale' | 'wrong-filter' | 'failed';

/**
 * ProposalResultCode: committed (ok), or why a proposal was refused: not-leader (retry at
 * leaderHint), transfer-in-progress, queue-full (definite refusals: nothing was appended), or
 * leadership-lost (appended, then the leader lost its term: the outcome is unknown).
 */
export type ProposalResultCode = 'committed' | 'not-leader' | 'transfer-in-progress' | 'queue-full' | 'leadership-lost';

/**
 * ConfChangeRefusalCode: why a leader will not append a membership change now (engine/membership.ts,
 * confChangeRefusal): the kind-4 gate, one change at a time, a commit of its own term first.
 */
export type ConfChangeRefusalCode =
  | 'term-not-committed'
  | 'change-in-flight'
  | 'transfer-in-progress'
  | 'leader-lacks-kind4'
  | 'member-lacks-kind4'
  | 'member-limit';

/** AdminResultCode: what became of an admin op (ok: done, already-leader, leadership-moved). */
export type AdminResultCode =
  | 'done'
  | 'already-leader'
  | 'leadership-moved'
  | 'not-leader'
  | 'no-such-member'
  | 'not-a-voter'
  | 'not-a-learner'
  | 'removes-leader'
  | 'learner-behind'
  | 'leadership-lost'
  | 'transfer-timed-out'
  | 'transfer-refused'
  | 'transfer-failed'
  | 'below-fault-tolerance'
  /** member-filtered: promotion refused, the member holds only its communities (remove its filter first). */
  | 'member-filtered'
  /** not-full-log: promotion refused, the member's filter was removed but it has not shown it holds the full log yet. */
  | 'not-full-log'
  /** bad-filter: the filter is malformed or beyond its limits (engine/communities.ts). */
  | 'bad-filter'
  | ConfChangeRefusalCode;

/** ReadinessReason names what flipped the readiness latch (engine/readiness.ts, the spec's Readiness rules). */
export type ReadinessReason =
  | 'caught-up-to-heartbeat-frontier'
  | 'caught-up-to-polled-status'
  | 'won-leadership'
  | 'removed'
  | 'halted'
  | 'reseed'
  | 'refilling';
