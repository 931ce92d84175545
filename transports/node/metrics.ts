// NodeMetrics is the node's /metrics in Prometheus text format (prom-client), on a registry of its
// own so several nodes can share a process (tests). Gauges read the engine's status at scrape time.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineStatus, Role } from '../../engine/types.js';

const ROLES: readonly Role[] = ['joiner', 'follower', 'precandidate', 'candidate', 'leader', 'removed'];

export interface MetricsSource {
  status(): EngineStatus;
  healthy(): boolean;
  buildVersion: string;
  entityCount(): number;
  diskBytes(): number;
  throughputEps(): number;
  inputQueueLength(): number;
  /** ticks is how many ticks the engine has stepped. */
  ticks(): number;
  /** memberLag is the per-member lag (events) the leader put in its last heartbeat. */
  memberLag(): Record<number, number>;
  /** storeCalls counts this node's svc.store.v1 requests to the leader, by kind (StoreClientPool). */
  storeCalls(): StoreCallCounts;
  /** readIndexBatch counts the read-index calls this node's reads shared, and the reads (ReadIndexBatch). */
  readIndexBatch(): { calls: number; readers: number };
  /** storeStreamsServed is the ReadIndexStream and ProposeStream calls other members hold open on this node now. */
  storeStreamsServed(): number;
  /** peerCallsRefused counts the calls the peer gate refused, by reason (transports/grpc/peer-gate.ts). */
  peerCallsRefused(): Record<string, number>;
}

/** StoreCallCounts: what a node sent the leader over svc.store.v1, as counters. */
export interface StoreCallCounts {
  propose: number;
  proposeBatch: number;
  proposeStream: number;
  /** readIndex counts read-index requests, by either transport; readIndexUnary those sent as unary calls. */
  readIndex: number;
  readIndexUnary: number;
  /** streamsOpened counts the ReadIndexStream and ProposeStream calls opened. */
  streamsOpened: number;
}

type Registers = Registry[];

/** PushedMetrics are the families the node itself observes or increments (the rest read `MetricsSource` at scrape). */
interface PushedMetrics {
  walSyncSeconds: Histogram;
  hardStateSaveSeconds: Histogram;
  proposalBatchSize: Histogram;
  requestsSent: Counter<'method'>;
  proposals: Counter<'outcome'>;
  engineReadIndexes: Counter<'outcome'>;
  appliedEvents: Counter;
  snapshots: Counter<'event'>;
  warnings: Counter<'code'>;
  statusPolls: Counter<'outcome'>;
}

/**
 * NodeMetrics registers its families in groups, in this order (the order /metrics lists them): process
 * (optional), identity and Raft state, replication lag, versions, store and engine load, store calls, then
 * the families the node pushes to (histograms and counters).
 */
export class NodeMetrics implements PushedMetrics {
  readonly registry = new Registry();
  readonly walSyncSeconds: Histogram;
  readonly hardStateSaveSeconds: Histogram;
  readonly proposalBatchSize: Histogram;
  readonly requestsSent: Counter<'method'>;
  readonly proposals: Counter<'outcome'>;
  readonly engineReadIndexes: Counter<'outcome'>;
  readonly appliedEvents: Counter;
  readonly snapshots: Counter<'event'>;
  readonly warnings: Counter<'code'>;
  readonly statusPolls: Counter<'outcome'>;

  constructor(source: MetricsSource, name: string, processMetrics: boolean) {
    const registers = [this.registry];
    if (processMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'svc_process_' });
    registerIdentity(registers, source, name);
    registerRaftState(registers, source);
    registerReplicationLag(registers, source);
    registerVersions(registers, source);
    registerStoreLoad(registers, source);
    registerStoreCalls(registers, source);
    const pushed = registerPushed(registers);
    this.walSyncSeconds = pushed.walSyncSeconds;
    this.proposalBatchSize = pushed.proposalBatchSize;
    this.hardStateSaveSeconds = pushed.hardStateSaveSeconds;
    this.requestsSent = pushed.requestsSent;
    this.proposals = pushed.proposals;
    this.engineReadIndexes = pushed.engineReadIndexes;
    this.appliedEvents = pushed.appliedEvents;
    this.snapshots = pushed.snapshots;
    this.statusPolls = pushed.statusPolls;
    this.warnings = pushed.warnings;
  }
}

/** gauge registers an unlabelled gauge set from `read` at each scrape. */
function gauge(registers: Registers, metricName: string, help: string, read: () => number): void {
  new Gauge({
    name: metricName,
    help,
    registers,
    collect() {
      this.set(read());
    },
  });
}

/** counter registers an unlabelled counter that reports `read` (a running total kept elsewhere) at each scrape. */
function counter(registers: Registers, metricName: string, help: string, read: () => number): void {
  new Counter({
    name: metricName,
    help,
    registers,
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

function registerIdentity(registers: Registers, source: MetricsSource, name: string): void {
  new Gauge({
    name: 'svc_node_info',
    help: 'Constant 1, labelled with the node name and build version.',
    labelNames: ['node', 'version'],
    registers,
    collect() {
      this.reset();
      this.set({ node: name, version: source.buildVersion }, 1);
    },
  });
}

/** registerRaftState: the engine's status, one gauge per field (term, role, positions, latches). */
function registerRaftState(registers: Registers, source: MetricsSource): void {
  gauge(registers, 'svc_term', 'Current Raft term.', () => source.status().term);
  new Gauge({
    name: 'svc_role',
    help: '1 for the role this node has now, 0 for the others.',
    labelNames: ['role'],
    registers,
    collect() {
      const role = source.status().role;
      for (const r of ROLES) this.set({ role: r }, r === role ? 1 : 0);
    },
  });
  gauge(
    registers,
    'svc_leader_id',
    'Member id of the leader this node follows (0 = none known).',
    () => source.status().leaderId,
  );
  gauge(registers, 'svc_member_id', "This node's permanent member id (0 while joining).", () => source.status().id);
  gauge(registers, 'svc_last_seq', "Last seqno in this node's log.", () => source.status().lastSeq);
  gauge(registers, 'svc_durable_seq', "Last seqno synced to this node's WAL.", () => source.status().durableSeq);
  gauge(registers, 'svc_commit_seq', 'Commit seqno known to this node.', () => source.status().commitSeq);
  gauge(registers, 'svc_applied_seq', 'Last seqno applied to the state machine.', () => source.status().appliedSeq);
  gauge(
    registers,
    'svc_snapshot_seq',
    'Seqno of the newest staged or installed snapshot.',
    () => source.status().snapshotSeq,
  );
  gauge(registers, 'svc_ready', 'Readiness latch: 1 once converged.', () => (source.status().ready ? 1 : 0));
  gauge(registers, 'svc_healthy', '1 when /health answers 200.', () => (source.healthy() ? 1 : 0));
  gauge(registers, 'svc_removed', '1 once this node learned it was removed.', () => (source.status().removed ? 1 : 0));
  gauge(registers, 'svc_halted', '1 when the segment receiver halted for good.', () =>
    source.status().halted !== '' ? 1 : 0,
  );
  gauge(registers, 'svc_reseed', '1 while the reseed marker is latched.', () => (source.status().reseed ? 1 : 0));
  gauge(
    registers,
    'svc_membership_version',
    'Membership version of the newest roster in the log.',
    () => source.status().roster.membershipVersion,
  );
}

/** registerReplicationLag: how far behind this node is, per source shard, and (on the leader) each member. */
function registerReplicationLag(registers: Registers, source: MetricsSource): void {
  new Gauge({
    name: 'svc_replication_lag_high_water_seq',
    help: 'Per source shard: the highest leader_last_seq seen (monotonic).',
    labelNames: ['shard'],
    registers,
    collect() {
      this.reset();
      for (const [shard, seq] of Object.entries(source.status().lagGaugeByShard)) this.set({ shard }, seq);
    },
  });
  new Gauge({
    name: 'svc_replication_lag_events',
    help: "Per source shard: events between the high-water leader frontier and this node's applied seqno.",
    labelNames: ['shard'],
    registers,
    collect() {
      this.reset();
      const s = source.status();
      for (const [shard, seq] of Object.entries(s.lagGaugeByShard))
        this.set({ shard }, Math.max(0, seq - s.appliedSeq));
    },
  });
  new Gauge({
    name: 'svc_member_replication_lag_events',
    help: 'On the leader: per member, its lag in events as sent in the last heartbeat.',
    labelNames: ['member'],
    registers,
    collect() {
      this.reset();
      for (const [member, lag] of Object.entries(source.memberLag())) this.set({ member }, lag);
    },
  });
}

/** registerVersions: the build versions of the peers this node has seen, and how far apart their majors are. */
function registerVersions(registers: Registers, source: MetricsSource): void {
  new Gauge({
    name: 'svc_peer_build_info',
    help: 'Constant 1 per peer whose build_version this node has seen.',
    labelNames: ['member', 'version'],
    registers,
    collect() {
      this.reset();
      for (const [member, version] of Object.entries(source.status().versionsSeen)) this.set({ member, version }, 1);
    },
  });
  gauge(
    registers,
    'svc_version_major_spread',
    'Largest difference between the major versions seen (own included); 2 or more is the loud signal.',
    () => majorSpread(source),
  );
}

/** registerStoreLoad: the store's size and pace (as the heartbeat carries them) and the engine's input and clock. */
function registerStoreLoad(registers: Registers, source: MetricsSource): void {
  gauge(registers, 'svc_entity_count', 'Documents in the store (heartbeat entity_count).', () => source.entityCount());
  gauge(registers, 'svc_disk_bytes', 'Bytes of WAL and snapshots on disk (heartbeat disk_bytes).', () =>
    source.diskBytes(),
  );
  gauge(
    registers,
    'svc_signal_throughput_eps',
    'Store commands applied per second (heartbeat signal_throughput_eps).',
    () => source.throughputEps(),
  );
  gauge(registers, 'svc_input_queue_length', 'Inputs waiting for the engine.', () => source.inputQueueLength());
  counter(registers, 'svc_engine_ticks_total', 'Ticks the engine has stepped (its clock).', () => source.ticks());
}

/** registerStoreCalls: svc.store.v1 traffic this node sent and serves, and the peer calls its gate refused. */
function registerStoreCalls(registers: Registers, source: MetricsSource): void {
  new Counter({
    name: 'svc_store_requests_sent_total',
    help: 'svc.store.v1 requests this node sent the leader, by kind (propose, propose_batch: unary calls; propose_stream: stream messages; read_index: by either transport, read_index_unary: of those, unary calls).',
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset();
      const calls = source.storeCalls();
      this.inc({ kind: 'propose' }, calls.propose);
      this.inc({ kind: 'propose_batch' }, calls.proposeBatch);
      this.inc({ kind: 'propose_stream' }, calls.proposeStream);
      this.inc({ kind: 'read_index' }, calls.readIndex);
      this.inc({ kind: 'read_index_unary' }, calls.readIndexUnary);
    },
  });
  counter(
    registers,
    'svc_store_streams_opened_total',
    'ReadIndexStream and ProposeStream calls this node opened to a leader.',
    () => source.storeCalls().streamsOpened,
  );
  counter(
    registers,
    'svc_store_read_index_calls_total',
    'Read indexes this node took for its reads (each shared by the reads gathered for it).',
    () => source.readIndexBatch().calls,
  );
  counter(
    registers,
    'svc_store_read_index_readers_total',
    'Reads that waited for a read index (readers / calls = reads per read index).',
    () => source.readIndexBatch().readers,
  );
  new Counter({
    name: 'svc_peer_calls_refused_total',
    help: 'Calls on the peer port refused before the engine saw them, by reason: no-role, wrong-role (a certificate of the other kind), cluster-mismatch, cluster-missing, claim-mismatch (a message naming another member as its sender), not-member, bad-value (a term or seqno with no room to increment), bad-join (JoinCluster names or addresses).',
    labelNames: ['reason'],
    registers,
    collect() {
      this.reset();
      for (const [reason, count] of Object.entries(source.peerCallsRefused())) this.inc({ reason }, count);
    },
  });
  gauge(
    registers,
    'svc_store_streams_served',
    'ReadIndexStream and ProposeStream calls other members hold open on this node.',
    () => source.storeStreamsServed(),
  );
}

/**
 * registerPushed: the families the node observes (WAL, hard state, batches) and increments (peers, store,
 * engine). The properties register in the order written, which is the order /metrics lists them.
 */
function registerPushed(registers: Registers): PushedMetrics {
  const labelled = <L extends string>(metricName: string, help: string, label: L): Counter<L> =>
    new Counter({ name: metricName, help, labelNames: [label], registers });
  return {
    walSyncSeconds: new Histogram({
      name: 'svc_wal_sync_seconds',
      help: 'From a WAL append to its fdatasync completing (group commit wait included).',
      registers,
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1],
    }),
    proposalBatchSize: new Histogram({
      name: 'svc_proposal_batch_size',
      help: "Proposals handed to the engine in one step (one event-loop turn's worth, up to proposeBatchCountMax).",
      registers,
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    }),
    hardStateSaveSeconds: new Histogram({
      name: 'svc_hard_state_save_seconds',
      help: 'Atomic hard-state writes (temp file, fsync, rename, fsync dir).',
      registers,
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1],
    }),
    requestsSent: labelled('svc_peer_requests_sent_total', 'Peer calls this node started, by method.', 'method'),
    proposals: labelled('svc_proposals_total', 'Local proposals, by outcome.', 'outcome'),
    engineReadIndexes: labelled(
      'svc_engine_read_indexes_total',
      "Read indexes asked of this node's engine (its own reads and other members' as the leader; one loop turn's requests share one readIndex input), by outcome: answered, not-leader, stepped-down, queue-full (per input), timeout (per request).",
      'outcome',
    ),
    appliedEvents: new Counter({ name: 'svc_applied_events_total', help: 'Store commands applied.', registers }),
    snapshots: labelled('svc_snapshot_events_total', 'Snapshot stagings and installs, by event.', 'event'),
    statusPolls: labelled(
      'svc_status_polls_total',
      "GETs of the leader's /status on the status-poll readiness path, by outcome.",
      'outcome',
    ),
    warnings: labelled('svc_engine_warnings_total', 'Engine warnings, by code.', 'code'),
  };
}

function majorSpread(source: MetricsSource): number {
  const majors = [source.buildVersion, ...Object.values(source.status().versionsSeen)]
    .map((v) => /^(\d+)\./.exec(v)?.[1])
    .filter((m): m is string => m !== undefined)
    .map(Number);
  return majors.length === 0 ? 0 : Math.max(...majors) - Math.min(...majors);
}
