// Node is one member of the cluster in a real process, assembled here from the layers below: the engine
// (engine/) driven by the loop in transports/node/driver.ts over real I/O — the WAL, hard state and snapshot
// artifacts of transports/storage, the gRPC server and peer pool of transports/grpc (mutual TLS) — the
// replicated store of store/ (reached from other members over transports/store-rpc, store-link.ts), the
// node's HTTP surface (/health, /ready, /metrics, /status) and, with an `api` section, the developer API.
//
//   const node = new Node(config);   // checks the config (ConfigError)
//   await node.start();              // recovers from dataDir, binds, starts ticking
//   await node.store.put('k', {v: 1});
//   await node.stop();
//
// README.md documents the config, the HTTP surface and the recovery rules.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent } from 'undici';
import { randomBytes } from 'node:crypto';
import type { ChannelOptions, UntypedServiceImplementation } from '@grpc/grpc-js';
import { Engine } from '../../engine/engine.js';
import { CURRENT_COMPAT, DEFAULT_LIMITS } from '../../engine/limits.js';
import { bootstrapRoster, memberById, memberByName } from '../../engine/roster.js';
import type {
  AdminOp,
  EngineConfig,
  EngineLeadership,
  EngineLimits,
  RestoredState,
  Roster,
} from '../../engine/types.js';
import { NODE_ENGINE_DEFAULTS } from './engine-defaults.js';
import type { DocumentStore } from '../../store/document-store.js';
import {
  AdminRefusedError,
  ADMIN_MEMBER_METHODS,
  adminServiceDefinition,
  adminServiceImplementation,
  type SeenHeartbeat,
} from '../../transports/admin/index.js';
import { PeerPool, type TransportInput } from '../../transports/grpc/client.js';
import type { LeanDial } from '../../transports/grpc/lean-unary.js';
import {
  HEARTBEAT_STREAM_OPEN_REQUEST_COUNT_MAX,
  HEARTBEAT_STREAM_SERVICE,
  HeartbeatStreamServer,
  HeartbeatStreams,
  heartbeatStreamDefinition,
} from '../../transports/grpc/heartbeat-stream.js';
import {
  REPORT_STREAM_OPEN_REQUEST_COUNT_MAX,
  ReportStreamServer,
  ReportStreams,
  reportStreamDefinition,
} from '../../transports/grpc/report-stream.js';
import { clientChannelOptions } from '../../transports/grpc/channel-options.js';
import { resolveGrpcLimits, type GrpcLimits } from '../../transports/grpc/limits.js';
import { PeerGate, REFUSAL_REASONS, type RefusalReason } from '../../transports/grpc/peer-gate.js';
import {
  CLUSTER_ID_METADATA_KEY,
  clusterChannelOptions,
  pemIdentity,
  type CertIdentity,
} from '../../transports/grpc/peer-identity.js';
import { PeerServer } from '../../transports/grpc/server.js';
import { PEER_NAMES_OPTION } from '../../transports/grpc/peer-resolver.js';
import {
  peerClientCredentials,
  peerHttp2Dial,
  peerServerCredentials,
  type PeerSecurity,
} from '../../transports/grpc/tls.js';
import { openNodeStorage, type NodeStorage } from '../../transports/storage/node-storage.js';
import { DEFAULT_STORE_LIMITS, storeLimits, type StoreLimits } from '../../store/limits.js';
import { StoreUnavailableError } from '../../store/errors.js';
import { storeCommunityOf } from '../../store/command.js';
import { DEDUP_ENTRY_COUNT_MAX } from '../../store/limits.js';
import { ReplicatedStore } from '../../store/replicated-store.js';
import { StoreSnapshots } from '../../store/snapshot-files.js';
import { StoreStateMachine } from '../../store/state-machine.js';
import {
  StoreClientPool,
  storeService as createStoreService,
  storeServiceDefinition,
  type StoreService,
} from '../../transports/store-rpc/store-service.js';
import { BUILD_VERSION } from '../../transports/node/build-info.js';
import { captureForBackup } from './backup-capture.js';
import { settleClusterId } from './cluster-id.js';
import {
  ConfigError,
  httpIsPlaintext,
  resolveNodeConfig,
  type NodeApiConfig,
  type NodeConfig,
  type ResolvedNodeConfig,
} from './config.js';
import { Driver, type DriverPorts, type ObservedEffect } from '../../transports/node/driver.js';
import { startHttpServer, type HttpSurface, type NodeHttpServer } from '../../transports/node/http-server.js';
import type { NodeApi } from './node-api.js';
import { API_REDIS_DIR, readApiSecretKey, startLocalRedisEarly } from './api-early-start.js';
import { ApiIncomingMessage } from '../../api/request-class.js';
import { ApiServerResponse } from '../../api/response-class.js';
import type { LocalRedis } from '../../api/redis/local-redis.js';
import { LogThrottle } from '../../transports/node/log-throttle.js';
import { createLogger, stdoutDestination, type Logger } from '../../transports/node/logger.js';
import { LogRing } from '../../transports/node/log-ring.js';
import { NodeMetrics } from '../../transports/node/metrics.js';
import { DiskUsage, ThroughputMeter, wallClockNs } from '../../transports/node/node-stats.js';
import {
  isHealthy,
  statusDocument,
  unhealthyReason,
  type NodeStatusDocument,
} from '../../transports/node/node-status.js';
import { EngineReads } from '../../store/engine-reads.js';
import { Proposals } from '../../store/proposals.js';
import { ServedCalls } from '../../transports/node/served-calls.js';
import { SnapshotTransfer } from '../../transports/node/snapshot-transfer.js';
import { fetchStatusDocument, pollLeaderStatus } from '../../transports/node/status-poll.js';
import { PeerNames } from '../../transports/node/peer-names.js';
import { ClusterFeed } from '../../transports/node/cluster-feed.js';
import { rosterMembers } from '../../transports/node/cluster-events.js';
import { openCallPeers, sameLeadership } from '../../transports/node/open-call-peers.js';
import { StoreRouter } from '../../store/store-router.js';
import { Waiters } from '../../store/waiters.js';
import { adminProposal, leaderLink, storeServiceHandler } from './store-link.js';
import { tracing } from '../../transports/node/write-trace.js';
import { stampSend, stampServed } from './write-stamps.js';
import { recordingDir, startRecording } from './recording.js';
import type { FlightRecorder } from '../../transports/node/recorder.js';
import { handOffLeadership, type HandoffOutcome } from './handoff.js';
import { AUTOPILOT_ADMIN_ID } from '../../engine/autopilot.js';

type NodeState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';
/** NodeApiModule is node-api.ts, imported only by a node with an api section. */
type NodeApiModule = typeof import('./node-api.js');

interface PendingAdmin {
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export class Node {
  readonly config: ResolvedNodeConfig;
  readonly log: Logger;
  /** stateMachine is the local replica of the store (reads through `store` add the read-index barrier). */
  readonly stateMachine = new StoreStateMachine();
  /** snapshots is the state machine as snapshot staging, install and recovery see it. */
  private readonly snapshots: StoreSnapshots;
  /** failed resolves with the error that stopped the node (a WAL or hard-state write failed). */
  readonly failed: Promise<Error>;

  private state: NodeState = 'new';
  private stopping: Promise<void> | null = null;
  /** startStage is the start's bounded stage in progress, which a stop waits for before it closes what is open. */
  private startStage: Promise<unknown> = Promise.resolve();
  private failure: Error | null = null;
  private resolveFailed!: (err: Error) => void;
  private readonly buildVersion: string;
  private readonly storeLimits: StoreLimits;
  private readonly grpcLimits: GrpcLimits;
  private readonly meter: ThroughputMeter;
  private readonly disk: DiskUsage;
  private readonly waiters: Waiters;
  /** warningLogs caps the log lines of engine warnings, which peers' messages drive (log-throttle.ts). */
  private readonly warningLogs: LogThrottle;
  private readonly admins = new Map<number, PendingAdmin>();
  private nextAdminId = 1;
  private lastHeartbeatLag: Record<number, number> = {};
  /** lastHeartbeat is the last heartbeat this node sent (as the leader) or received, for Admin.Status. */
  private lastHeartbeat: SeenHeartbeat | null = null;
  /** clusterId is the cluster this node belongs to ('' on a plaintext node that knows none), settled at start. */
  private clusterIdValue = '';
  /** refusedCalls counts the peer calls the gate refused, by reason (svc_peer_calls_refused_total). */
  private readonly refusedCalls = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<
    RefusalReason,
    number
  >;
  private diskTimer: NodeJS.Timeout | null = null;

  private storage: NodeStorage | null = null;
  private peerServer: PeerServer | null = null;
  private http: NodeHttpServer | null = null;
  private metricsServer: NodeHttpServer | null = null;
  /**
   * peerNames looks up the host names this node dials (peers' gRPC and HTTP addresses) with c-ares, cancelled at
   * the stop: a getaddrinfo still running would hold the process's exit (transports/node/peer-names.ts).
   */
  private readonly peerNames: PeerNames;
  /** statusPollAgent dials members' HTTP ports for the status poll and /cluster: their CA when HTTPS, peerNames' lookup. */
  private statusPollAgent: Agent | null = null;
  private pool: PeerPool | null = null;
  /** heartbeatStreams carries this node's Heartbeats to members over open calls (heartbeat-stream.ts). */
  private heartbeatStreams: HeartbeatStreams | null = null;
  /** heartbeatStreamServer serves members' HeartbeatStream calls. */
  private heartbeatStreamServer: HeartbeatStreamServer | null = null;
  /** reportStreams carries this node's ReportApplied calls to its leader over an open call (report-stream.ts). */
  private reportStreams: ReportStreams | null = null;
  /** openCallsLeadership: the leadership retainOpenCalls last ended the open calls for (null: not yet). */
  private openCallsLeadership: EngineLeadership | null = null;
  /** reportStreamServer serves members' ReportStream calls. */
  private reportStreamServer: ReportStreamServer | null = null;
  private storeClients: StoreClientPool | null = null;
  private storeService: StoreService | null = null;
  private engine: Engine | null = null;
  private driver: Driver | null = null;
  private recorder: FlightRecorder | null = null;
  private served: ServedCalls | null = null;
  private transfer: SnapshotTransfer | null = null;
  private proposals: Proposals | null = null;
  private engineReads: EngineReads | null = null;
  private router: StoreRouter | null = null;
  private metrics: NodeMetrics | null = null;
  private replicatedStore: ReplicatedStore | null = null;
  private api: NodeApi | null = null;
  /** clusterFeed is this node's view of its cluster and ring of recent events, for the API's /cluster. */
  private clusterFeed: ClusterFeed | null = null;
  /** localRedisStarting is the node-local redis-server started early for the API, until the API takes it. */
  private localRedisStarting: Promise<LocalRedis> | null = null;
  /** apiStartStop ends the API's start when the node stops (its wait for Redis has no end of its own). */
  private readonly apiStartStop = new AbortController();
  /** apiStarting settles when the API's start has ended (closing what it opened when it was stopped). */
  private apiStarting: Promise<void> | null = null;
  /** apiServing is the API's handler from the moment it answers, before its workers have started (startApi). */
  private apiServing: NodeApi['handler'] | null = null;
  private advertised = { grpc: '', http: '' };
  private readonly logRing: LogRing;

  constructor(config: NodeConfig) {
    this.config = resolveNodeConfig(config);
    // Every line goes where it always went (stdout, or the test's destination) and into the ring the Admin
    // Logs call reads (`svc debug bundle`).
    this.logRing = new LogRing(this.config.limits.logRingBytesMax, this.config.logDestination ?? stdoutDestination());
    this.log = createLogger(this.config.name, this.config.logLevel, this.logRing);
    this.buildVersion = this.config.buildVersion ?? BUILD_VERSION;
    try {
      this.storeLimits = storeLimits({ catchUpWaitMs: this.defaultCatchUpWaitMs(), ...this.config.storeLimits });
      this.snapshots = new StoreSnapshots(this.stateMachine, this.storeLimits);
      this.grpcLimits = resolveGrpcLimits(this.config.grpcLimits);
    } catch (err) {
      throw new ConfigError((err as Error).message);
    }
    this.peerNames = new PeerNames(this.grpcLimits.nameLookupTimeoutMs);
    // A proposal's outcome is read back by its request id (store/proposals.ts): the state machine must still
    // remember every command a leader may have uncommitted.
    const proposalQueueCountMax =
      this.config.engineLimits?.proposalQueueCountMax ?? DEFAULT_LIMITS.proposalQueueCountMax;
    if (proposalQueueCountMax > DEDUP_ENTRY_COUNT_MAX) {
      throw new ConfigError(
        `engine limit proposalQueueCountMax ${proposalQueueCountMax} is above the store's DEDUP_ENTRY_COUNT_MAX (${DEDUP_ENTRY_COUNT_MAX})`,
      );
    }
    this.meter = new ThroughputMeter(this.config.limits.throughputWindowMs);
    this.disk = new DiskUsage(this.config.dataDir, this.config.limits.diskUsageFileCountMax);
    this.waiters = new Waiters(this.config.limits.waiterCountMax);
    this.warningLogs = new LogThrottle(
      this.config.limits.logLinesPerKindWindowMax,
      this.config.limits.logThrottleWindowMs,
    );
    this.failed = new Promise((resolve) => {
      this.resolveFailed = resolve;
    });
  }

  /** store is the replicated DocumentStore (after start()). */
  get store(): DocumentStore {
    if (!this.replicatedStore) throw new Error('the node has not started');
    return this.replicatedStore;
  }

  /** grpcAddress is the advertised peer address (after start()). */
  get grpcAddress(): string {
    return this.advertised.grpc;
  }

  /** httpAddress is the advertised HTTP base, scheme://host:port (after start()). */
  get httpAddress(): string {
    return this.advertised.http;
  }

  /** clusterId is the cluster this node belongs to (after start(); '' on a plaintext node that knows none). */
  get clusterId(): string {
    return this.clusterIdValue;
  }

  get grpcPort(): number {
    return this.peerServer?.port ?? 0;
  }

  get httpPort(): number {
    return this.http?.port ?? 0;
  }

  /** metricsAddress is the metrics listener's base, http://host:port (after start()). */
  get metricsAddress(): string {
    const port = this.metricsServer?.port ?? 0;
    return `http://${this.config.metricsListenAt.host}:${port}`;
  }

  /** heartbeatStreamCounts: the HeartbeatStream calls this node opened and the Heartbeats it sent on them (tests). */
  get heartbeatStreamCounts(): { callsOpened: number; streamed: number } {
    return { callsOpened: this.heartbeatStreams?.callsOpened ?? 0, streamed: this.heartbeatStreams?.streamed ?? 0 };
  }

  /** reportStreamCounts: the ReportStream calls this node opened and the reports it sent on them (tests). */
  get reportStreamCounts(): { callsOpened: number; streamed: number } {
    return { callsOpened: this.reportStreams?.callsOpened ?? 0, streamed: this.reportStreams?.streamed ?? 0 };
  }

  /** openCallsTo: the addresses this node's HeartbeatStream and ReportStream calls are open to now (tests). */
  get openCallsTo(): { heartbeat: string[]; report: string[] } {
    return { heartbeat: this.heartbeatStreams?.openTo ?? [], report: this.reportStreams?.openTo ?? [] };
  }

  /** peerUnaryClient names the client of this node's unary peer calls (grpc.leanUnaryClient; after start()). */
  get peerUnaryClient(): 'lean' | 'grpc-js' | null {
    return this.pool?.unaryClient ?? null;
  }

  /** storeUnaryClient names the client of this node's unary Store calls (grpc.leanUnaryClient; after start()). */
  get storeUnaryClient(): 'lean' | 'h2' | 'grpc-js' | null {
    return this.storeClients?.unaryClient ?? null;
  }

  /** peerUnaryServer names what serves this node's unary peer and store calls (grpc.leanUnaryServer; after start()). */
  get peerUnaryServer(): 'lean' | 'grpc-js' | null {
    return this.peerServer?.unaryServing ?? null;
  }

  /** apiRedisUrl is the Redis the developer API uses (null: none, or no API). */
  get apiRedisUrl(): string | null {
    return this.api?.redisUrl ?? null;
  }

  /** status is the document GET /status serves. */
  status(): NodeStatusDocument {
    if (!this.driver) throw new Error('the node has not started');
    return statusDocument(this.driver.status(), {
      failed: this.failure?.message ?? '',
      buildVersion: this.buildVersion,
      entityCount: this.stateMachine.size,
      compactedSeq: this.driver.compactedSeq(),
    });
  }

  /** memberId looks a member up by name in this node's roster (0 = not a member). */
  memberId(name: string): number {
    if (!this.driver) return 0;
    return memberByName(this.driver.status().roster, name)?.id ?? 0;
  }

  /**
   * admin runs a membership or leadership operation (promote, remove, transfer). Only the leader
   * serves them; elsewhere it rejects, naming the leader.
   */
  admin(op: AdminOp, timeoutMs = this.storeLimits.writeTimeoutMs): Promise<void> {
    const driver = this.driver;
    if (!driver || this.state !== 'running')
      return Promise.reject(new StoreUnavailableError('the node is not running'));
    const adminId = this.nextAdminId++;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.admins.delete(adminId);
        reject(
          new StoreUnavailableError(`admin ${op.op} of member ${op.memberId} got no answer within ${timeoutMs} ms`),
        );
      }, timeoutMs);
      this.admins.set(adminId, { resolve, reject, timer });
      driver.submit({ type: 'admin', adminId, op });
    });
  }

  /**
   * handOffLeadership: on a leader, hands leadership to its most caught-up voter before a stop, within
   * handoffTimeoutMs (handoff.ts); logs and returns what happened. `svc node` runs it on SIGTERM and SIGINT.
   */
  async handOffLeadership(): Promise<HandoffOutcome> {
    const driver = this.driver;
    if (!driver || this.state !== 'running') return { outcome: 'not-leader', role: this.state };
    const tickMs = this.config.limits.tickMs;
    const outcome = await handOffLeadership(
      {
        status: () => driver.status(),
        matchSeqs: () => driver.matchSeqs(),
        admin: (op, timeoutMs) => this.admin(op, timeoutMs),
        pause: () => new Promise((resolve) => setTimeout(resolve, tickMs)),
        now: () => Date.now(),
      },
      this.config.limits.handoffTimeoutMs,
    );
    if (outcome.outcome === 'handed') this.log.info(outcome, `handed leadership to ${outcome.to} before stopping`);
    else if (outcome.outcome === 'gave-up')
      this.log.warn(
        outcome,
        `could not hand leadership over within handoffTimeoutMs ${this.config.limits.handoffTimeoutMs}; stopping anyway (the others elect after their timeout)`,
      );
    else if (outcome.outcome === 'no-voter') this.log.info(outcome, 'no other voter to hand leadership to');
    return outcome;
  }

  /**
   * defaultCatchUpWaitMs: half the election timeout (electionTimeoutTicks × tickMs), at most the store's default,
   * so a catching-up member holds a caller less than a leader change would (store/limits.ts catchUpWaitMs).
   */
  private defaultCatchUpWaitMs(): number {
    const electionTimeoutTicks = this.config.engineLimits?.electionTimeoutTicks ?? DEFAULT_LIMITS.electionTimeoutTicks;
    const electionTimeoutMs = electionTimeoutTicks * this.config.limits.tickMs;
    return Math.max(1, Math.min(DEFAULT_STORE_LIMITS.catchUpWaitMs, Math.floor(electionTimeoutMs / 2)));
  }

  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`a Node starts once (it is ${this.state})`);
    this.state = 'starting';
    try {
      await this.startParts();
    } catch (err) {
      if (err instanceof StoppedDuringStartError) this.log.info('start ended: the node was stopped');
      else this.log.error({ err: String(err) }, 'start failed');
      await this.shutdown();
      throw err;
    }
  }

  /** stop ends ticking, lets the current step finish, closes the servers and the WAL. It is idempotent. */
  stop(): Promise<void> {
    if (this.state === 'new') {
      this.state = 'stopped';
      return Promise.resolve();
    }
    return this.shutdown();
  }

  // ---------------------------------------------------------------- start

  /**
   * startParts starts the node's parts in their order: security and the API module, storage (cluster id and
   * the engine's restored state), the peer services behind the peer server, the HTTP and metrics listeners,
   * the engine with its recorder, peer clients and driver, snapshot transfer, the store's router, the
   * metrics; then the driver ticks, the node runs, and the developer API starts on top.
   */
  private async startParts(): Promise<void> {
    const config = this.config;
    const phases = new StartPhases();
    // A node-local redis-server for the API (a child process: it comes up in parallel) starts first.
    if (config.api) this.localRedisStarting = startLocalRedisEarly(config.api, join(config.dataDir, API_REDIS_DIR));
    const security = await this.stage(this.loadSecurity());
    const secretKey = config.api ? await this.stage(readApiSecretKey(config.api)) : undefined;
    phases.mark('load');
    const { clusterId, peerChannel, restored } = await this.stage(this.openStorage(security));
    phases.mark('storage');
    this.served = this.servedCalls();
    const storeService = (this.storeService = this.createStoreService());
    await this.stage(this.listenPeers(security, clusterId, storeService, this.createAdminService()));
    // The HTTP port answers from here: /health, /ready and /status say the node is starting, an API path gets
    // 503 NOT_READY with Retry-After until the API is mounted (http-server.ts), which the SDK retries.
    await this.stage(this.listenHttp());
    phases.mark('listen');
    // The API's modules (Express, BullMQ, the OpenAPI validator: most of a node's start) start loading now, once the
    // ports answer, and are awaited only at the API's turn, after the engine runs. Loading them is CPU on this
    // event loop, so starting earlier would only put the ports' opening after it. A node without the API loads
    // none of them. A start that fails before the API's turn never awaits the import: its failure is caught here.
    const nodeApiLoading = config.api ? import('./node-api.js') : null;
    nodeApiLoading?.catch(() => undefined);
    const driver = await this.stage(this.startEngine(restored, security, peerChannel));
    this.clusterFeed = this.createClusterFeed(driver);
    this.transfer = this.snapshotTransfer(driver);
    const replicatedStore = this.startStore(driver);
    this.metrics = this.createMetrics(driver, storeService, replicatedStore);

    driver.start();
    this.diskTimer = setInterval(() => void this.disk.refresh(), config.limits.diskUsageRefreshMs);
    this.state = 'running';
    phases.mark('engine');
    let servingSinceExecMs: number | undefined;
    if (config.api && nodeApiLoading) {
      await config.apiMountHold?.();
      const nodeApi = await this.stage(nodeApiLoading.catch(rethrowAsConfigError));
      phases.mark('apiLoad');
      // The API answers once its app can (servingSinceExecMs); its workers start after that, within this await.
      // Not a stage: a stop aborts it (apiStartStop; its wait for Redis has no end of its own), then waits for it.
      const apiStarting = this.startApi(nodeApi, config.api, secretKey, () => {
        phases.mark('api');
        servingSinceExecMs = sinceExecMs();
      });
      this.apiStarting = apiStarting.catch(() => undefined);
      await apiStarting;
      phases.mark('apiWorkers');
    }
    this.logStarted(driver, clusterId, phases, servingSinceExecMs);
  }

  /**
   * stage runs one bounded stage of the start (module loads, files, listeners). A stop asked for meanwhile waits
   * for the stage, so that it closes what the stage opened, and the start then ends here (StoppedDuringStartError).
   */
  private async stage<T>(work: Promise<T>): Promise<T> {
    this.startStage = work.catch(() => undefined);
    const value = await work;
    this.throwIfStopping();
    return value;
  }

  private throwIfStopping(): void {
    if (this.stopping !== null) throw new StoppedDuringStartError();
  }

  /** openStorage opens the WAL and snapshots, settles the cluster id, and reads back the engine's state. */
  private async openStorage(
    security: PeerSecurity,
  ): Promise<{ clusterId: string; peerChannel: ChannelOptions; restored: RestoredState }> {
    const config = this.config;
    const nameOverride =
      config.tls.mode === 'mtls' && config.tls.serverNameOverride
        ? {
            'grpc.ssl_target_name_override': config.tls.serverNameOverride,
            'grpc.default_authority': config.tls.serverNameOverride,
          }
        : {};
    this.storage = await openNodeStorage(config.dataDir, config.storageLimits);
    this.storage.wal.onFailure((err) => this.onFatal(err));
    const ownIdentity = security.mode === 'mtls' ? this.ownPeerIdentity(security.material.cert) : null;
    const clusterId = (this.clusterIdValue = await settleClusterId({
      configured: config.clusterId,
      fromCertificate: ownIdentity?.clusterId,
      dataDir: config.dataDir,
    }));
    if (security.mode === 'mtls') security.clusterId = clusterId;
    // Every peer call this node makes names its cluster; every server it dials must be a peer of it (tls.ts).
    // Their host names are looked up through peerNames (grpc/peer-resolver.ts), not grpc-js's getaddrinfo.
    const peerChannel = {
      ...nameOverride,
      ...clusterChannelOptions(clusterId),
      [PEER_NAMES_OPTION]: this.peerNames,
    };
    const restored = await this.recover(this.storage);
    await this.disk.refresh();
    return { clusterId, peerChannel, restored };
  }

  /** memberIdOf is the id of the member so named in the engine's current roster, 0 when none. */
  private memberIdOf(name: string): number {
    const roster = this.driver?.status().roster;
    return roster ? (memberByName(roster, name)?.id ?? 0) : 0;
  }

  /** servedCalls hands the peer calls this node serves to the driver, refused while the node cannot take them. */
  private servedCalls(): ServedCalls {
    return new ServedCalls({
      deliver: (callId, request, callerName) => {
        const driver = this.driver;
        if (!driver || this.state !== 'running') return 'node is not running';
        if (driver.failure) return `node failed: ${driver.failure.message}`;
        if (driver.overloaded()) return 'node overloaded: input queue full';
        if (tracing()) stampServed(request);
        if (request.method === 'Heartbeat')
          this.lastHeartbeat = {
            direction: 'received',
            peerId: request.body.leaderRegion,
            body: request.body,
            seenAtMs: Date.now(),
          };
        // A puller's member id lets the leader keep its stream open (engine keepLive) and refuse a filtered
        // member's pull (refusePullByFiltered): the certificate's name in the roster, as the gate matched it;
        // unknown (0) on a plaintext node.
        const pulls = request.method === 'StreamSegments' || request.method === 'FetchSnapshot';
        const callerId = pulls && callerName !== '' ? this.memberIdOf(callerName) : 0;
        driver.submit(
          callerId > 0 ? { type: 'request', callId, request, callerId } : { type: 'request', callId, request },
        );
        return null;
      },
      snapshotFiles: (seq) => this.transfer?.files(seq) ?? 'node is not running',
      cutSnapshot: (header, cut) =>
        this.transfer?.cutFiles(header.snapshotSeq, cut, header.term, header.leaderRegion) ??
        Promise.resolve('node is not running'),
    });
  }

  /** createStoreService serves svc.store.v1 (members' forwarded writes and read indexes) from this node's router. */
  private createStoreService(): StoreService {
    return createStoreService({
      handler: storeServiceHandler(
        () => this.runningRouter(),
        () => this.runningStore(),
      ),
      commandBytesMax: this.storeLimits.commandBytesMax,
      callDeadlineMs: this.storeLimits.callDeadlineMs,
      proposeBatchCountMax: this.storeLimits.proposeBatchCountMax,
      streamOpenRequestCountMax: this.storeLimits.streamOpenRequestCountMax,
      onWarning: (message) => this.warnCapped('store', { source: 'store' }, message),
    });
  }

  /** createAdminService serves svc.admin.v1 (status, membership, handoff, backup) from this node. */
  private createAdminService(): UntypedServiceImplementation {
    const config = this.config;
    return adminServiceImplementation({
      host: {
        status: () => {
          if (this.state !== 'running') throw new Error(`the node is ${this.state}`);
          return this.status();
        },
        own: () => ({
          entityCount: this.stateMachine.size,
          signalThroughputEps: this.meter.eventsPerSecond(),
          diskBytes: this.disk.bytes,
          grpcAddr: this.advertised.grpc,
          httpAddr: this.advertised.http,
          metricsAddr: this.metricsServer ? this.metricsAddress : '',
        }),
        lastHeartbeat: () => this.lastHeartbeat,
        admin: (op, timeoutMs) => this.admin(op, timeoutMs),
        handOff: () => this.handOffLeadership(),
        propose: adminProposal(() => this.runningRouter()),
        commandBytesMax: this.storeLimits.commandBytesMax,
        backup: (deadlineAt) =>
          captureForBackup(
            {
              router: () => this.runningRouter(),
              stateMachine: this.stateMachine,
              status: () => this.status(),
              clusterId: this.clusterIdValue,
            },
            deadlineAt,
          ),
        recordingDir: config.recording?.enabled === false ? null : recordingDir(config.dataDir),
        logs: (window) => this.logRing.read(window),
      },
      onWarning: (message) => this.warnCapped('admin', { source: 'admin' }, message),
    });
  }

  /** listenPeers starts the peer server: the gate in front, the store and admin services behind it. */
  private async listenPeers(
    security: PeerSecurity,
    clusterId: string,
    storeService: StoreService,
    adminService: UntypedServiceImplementation,
  ): Promise<void> {
    const config = this.config;
    // The roster the gate matches certificates against is the engine's current one (uncommitted records included).
    const roster = (): Roster | null => this.driver?.status().roster ?? null;
    const gate = new PeerGate({
      clusterId,
      requireCertificate: security.mode === 'mtls',
      memberIdByName: (name) => {
        const r = roster();
        return r ? (memberByName(r, name)?.id ?? 0) : 0;
      },
      memberNameById: (id) => {
        const r = roster();
        return r ? memberById(r, id)?.name : undefined;
      },
    });
    assert(this.served, 'the served calls exist before the peer server listens');
    // Heartbeats on an open call: each checked as the unary Heartbeat is, and handed to the same served calls.
    const heartbeatStreamServer = (this.heartbeatStreamServer = new HeartbeatStreamServer({
      handler: this.served,
      limits: this.grpcLimits,
      gate,
      openRequestCountMax: HEARTBEAT_STREAM_OPEN_REQUEST_COUNT_MAX,
      onWarning: (message) => this.warnCapped('peer-server:heartbeat-stream', { source: 'peer-server' }, message),
      onRefused: (reason) => {
        this.refusedCalls[reason] += 1;
      },
    }));
    // ReportApplied on an open call: the mirror, a follower's reports to its leader.
    const reportStreamServer = (this.reportStreamServer = new ReportStreamServer({
      handler: this.served,
      limits: this.grpcLimits,
      gate,
      openRequestCountMax: REPORT_STREAM_OPEN_REQUEST_COUNT_MAX,
      onWarning: (message) => this.warnCapped('peer-server:report-stream', { source: 'peer-server' }, message),
      onRefused: (reason) => {
        this.refusedCalls[reason] += 1;
      },
    }));
    this.peerServer = await PeerServer.listen(`${config.grpcListenAt.host}:${config.grpcListenAt.port}`, {
      handler: this.served,
      credentials: peerServerCredentials(security),
      limits: this.grpcLimits,
      onWarning: (message, kind) => this.warnCapped(`peer-server:${kind}`, { source: 'peer-server' }, message),
      gate,
      onRefused: (reason) => {
        this.refusedCalls[reason] += 1;
      },
      leanUnary: config.grpc?.leanUnaryServer !== false,
      leanConnections: config.grpc?.leanConnectionServer !== false,
      services: [
        {
          name: 'svc.store.v1.Store',
          definition: storeServiceDefinition(),
          implementation: storeService.implementation,
          role: 'peer',
          membersOnly: true,
          leanUnary: true,
        },
        {
          name: HEARTBEAT_STREAM_SERVICE,
          definition: { ...heartbeatStreamDefinition(), ...reportStreamDefinition() },
          implementation: { ...heartbeatStreamServer.implementation(), ...reportStreamServer.implementation() },
          role: 'peer',
          membersOnly: true,
        },
        {
          name: 'svc.admin.v1.Admin',
          definition: adminServiceDefinition(),
          implementation: adminService,
          role: 'admin',
          memberMethods: ADMIN_MEMBER_METHODS,
        },
      ],
    });
  }

  /**
   * listenHttp starts the HTTP listener (health, readiness, status, the API) and the metrics one. Both answer
   * from here, before the engine runs: a path that needs the running node answers 503 with a reason, an API
   * path 503 NOT_READY with Retry-After until the API is mounted. Its port is advertised to the roster, so it
   * is known before the engine starts.
   */
  private async listenHttp(): Promise<void> {
    const config = this.config;
    const surface: HttpSurface = {
      health: () => this.healthProblem(),
      ready: () => this.readyProblem(),
      status: () => (this.driver && this.state === 'running' ? this.status() : null),
      metrics: async () =>
        this.metrics && this.state === 'running'
          ? { contentType: this.metrics.registry.contentType, body: await this.metrics.registry.metrics() }
          : null,
      ...(config.api ? { api: () => this.api?.handler ?? this.apiServing } : {}),
    };
    const onHttpError = (err: Error): void => this.log.error({ err: String(err) }, 'HTTP handler failed');
    const httpTls = await this.loadHttpTls();
    this.http = await startHttpServer({
      host: config.httpListenAt.host,
      port: config.httpListenAt.port,
      role: 'api',
      surface,
      requestTimeoutMs: config.limits.httpRequestTimeoutMs,
      onError: onHttpError,
      ...(httpTls ? { tls: httpTls.pair } : {}),
      // The API's request class: its one field per request is in the object from the constructor on.
      // Its response class: the headers every answer carries are written as one precomputed block.
      ...(config.api ? { incomingMessage: ApiIncomingMessage, serverResponse: ApiServerResponse } : {}),
    });
    this.statusPollAgent = new Agent({
      connect: { ...(httpTls ? { ca: httpTls.trust } : {}), lookup: this.peerNames.lookup },
    });
    this.metricsServer = await startHttpServer({
      host: config.metricsListenAt.host,
      port: config.metricsListenAt.port,
      role: 'metrics',
      surface,
      requestTimeoutMs: config.limits.httpRequestTimeoutMs,
      onError: onHttpError,
    });
    assert(this.peerServer, 'the peer server listens before the HTTP listeners');
    const httpPort = this.http.port;
    this.advertised = {
      grpc: config.grpcAdvertise ?? `${config.grpcListenAt.host}:${this.peerServer.port}`,
      http: config.httpAdvertise ?? `${httpTls ? 'https' : 'http'}://${config.httpListenAt.host}:${httpPort}`,
    };
  }

  /** startEngine builds the engine on the restored state, its flight recorder, the peer clients and the driver. */
  private async startEngine(
    restored: RestoredState,
    security: PeerSecurity,
    peerChannel: ChannelOptions,
  ): Promise<Driver> {
    const config = this.config;
    this.engine = new Engine(this.engineConfig(), restored);
    this.recorder = await startRecording(config, this.engine, restored, this.buildVersion, this.log);
    // Every peer call's outcome, unary or carried on an open call, reaches the engine the same way.
    const deliverPeer = (input: TransportInput): void => {
      if (input.type === 'callFailed')
        this.log.debug(
          { requestId: input.requestId, code: input.status.code, details: input.status.details },
          'peer call failed',
        );
      this.driver?.submit(input);
    };
    // The unary calls a write or a read waits on go over the lean HTTP/2 client (transports/grpc/lean-unary.ts),
    // with the same security and the cluster id the channel's interceptor adds: the peer calls, and the Store
    // client pool's unary calls (a forwarded write or read index to a leader without the streams). grpc.leanUnaryClient
    // false leaves both to grpc-js's client.
    const lean: { dial: LeanDial; headers: Readonly<Record<string, string>> } | null =
      config.grpc?.leanUnaryClient === false
        ? null
        : {
            dial: peerHttp2Dial(
              security,
              config.tls.mode === 'mtls' ? config.tls.serverNameOverride : undefined,
              this.peerNames.lookup,
            ),
            headers: this.clusterIdValue === '' ? {} : { [CLUSTER_ID_METADATA_KEY]: this.clusterIdValue },
          };
    this.pool = new PeerPool({
      credentials: peerClientCredentials(security),
      limits: this.grpcLimits,
      channelOptions: peerChannel,
      ...(lean === null ? {} : { lean }),
      deliver: deliverPeer,
      onWarning: (message) => this.log.warn({ source: 'peer-pool' }, message),
    });
    // A leader's Heartbeats (a read at the leader waits for one round trip of them) and a follower's
    // ReportApplied (the durable frontier a write's commit waits for) go as messages on one open call per peer;
    // a peer that does not serve the rpc gets the unary call. Each has its own switch.
    const openCalls = {
      credentials: peerClientCredentials(security),
      channelOptions: { ...clientChannelOptions(this.grpcLimits), ...peerChannel } as ChannelOptions,
      limits: this.grpcLimits,
      deliver: deliverPeer,
    };
    this.heartbeatStreams =
      config.grpc?.heartbeatStream === false
        ? null
        : new HeartbeatStreams({
            ...openCalls,
            fallback: (requestId, to, request) => this.pool?.send(requestId, to, request),
            onWarning: (message) => this.log.warn({ source: 'heartbeat-stream' }, message),
          });
    this.reportStreams =
      config.grpc?.reportStream === false
        ? null
        : new ReportStreams({
            ...openCalls,
            fallback: (requestId, to, request) => this.pool?.send(requestId, to, request),
            onWarning: (message) => this.log.warn({ source: 'report-stream' }, message),
          });
    this.storeClients = new StoreClientPool({
      credentials: peerClientCredentials(security),
      channelOptions: { ...clientChannelOptions(this.grpcLimits), ...peerChannel } as ChannelOptions,
      proposeBatchCountMax: this.storeLimits.proposeBatchCountMax,
      streamIdleMs: this.storeLimits.streamIdleMs,
      ...(lean === null ? {} : { lean: { ...lean, limits: this.grpcLimits } }),
    });
    const driver = new Driver(this.engine, this.ports(), {
      tickMs: config.limits.tickMs,
      inputQueueCountMax: config.limits.inputQueueCountMax,
      recorder: this.recorder,
    });
    this.driver = driver;
    return driver;
  }

  /** createClusterFeed starts the /cluster view and its event ring from the engine's state as it starts. */
  private createClusterFeed(driver: Driver): ClusterFeed {
    const feed = new ClusterFeed({
      status: () => (this.driver ? this.status() : null),
      matchSeqs: () => driver.matchSeqs(),
      fetchStatus: (httpAddr, timeoutMs, bytesMax) =>
        fetchStatusDocument(httpAddr, timeoutMs, bytesMax, this.statusPollAgent ?? undefined),
      now: () => Date.now(),
    });
    feed.started(driver.leadership(), this.config.name);
    return feed;
  }

  /** snapshotTransfer stages and installs the snapshots the engine asks for, counting and logging each. */
  private snapshotTransfer(driver: Driver): SnapshotTransfer {
    assert(this.storage && this.pool, 'storage and the peer pool open before the snapshot transfer starts');
    return new SnapshotTransfer(this.storage.snapshots, this.pool, this.snapshots, driver, {
      staged: (artifact, ms, writtenBytes) => {
        this.metrics?.snapshots.inc({ event: 'staged' });
        // files: the artifact's (a layered one's store.json and deltas, and meta.json); writtenBytes: this staging's.
        this.log.info(
          {
            seq: artifact.meta.seq,
            entryTerm: artifact.meta.entryTerm,
            ms: Math.round(ms),
            files: artifact.manifest.files.length,
            writtenBytes,
          },
          'snapshot staged',
        );
      },
      stageFailed: (meta, err, willRetry) =>
        this.log.error({ seq: meta.seq, err: err.message, willRetry }, 'snapshot staging failed'),
      installed: (artifact, ms) => {
        this.metrics?.snapshots.inc({ event: 'installed' });
        this.log.info(
          { seq: artifact.meta.seq, files: artifact.manifest.files.length, ms: Math.round(ms) },
          'snapshot installed',
        );
      },
      installFailed: (reason) => {
        this.metrics?.snapshots.inc({ event: 'install-failed' });
        this.log.warn({ reason }, 'snapshot fetch or install failed; the engine pulls again');
      },
    });
  }

  /** startStore builds the store's write and read paths on the driver: proposals, read indexes, the router. */
  private startStore(driver: Driver): ReplicatedStore {
    const config = this.config;
    assert(this.storeClients, 'the store clients start before the store');
    this.proposals = new Proposals(
      driver,
      this.stateMachine,
      (outcome) => this.metrics?.proposals.inc({ outcome }),
      config.limits.proposeBatchCountMax,
      (size) => this.metrics?.proposalBatchSize.observe(size),
    );
    this.engineReads = new EngineReads(driver, (outcome) => this.metrics?.engineReadIndexes.inc({ outcome }));
    this.router = new StoreRouter(
      driver,
      this.stateMachine,
      this.proposals,
      this.engineReads,
      leaderLink(this.storeClients),
      this.waiters,
      this.storeLimits,
    );
    this.replicatedStore = new ReplicatedStore(this.router, this.storeLimits);
    return this.replicatedStore;
  }

  /** createMetrics registers /metrics, read from the driver, the store and the peer clients at each scrape. */
  private createMetrics(driver: Driver, storeService: StoreService, replicatedStore: ReplicatedStore): NodeMetrics {
    const config = this.config;
    const storeClients = this.storeClients;
    assert(storeClients, 'the store clients start before the metrics');
    return new NodeMetrics(
      {
        status: () => driver.status(),
        healthy: () => this.healthProblem() === null,
        buildVersion: this.buildVersion,
        entityCount: () => this.stateMachine.size,
        diskBytes: () => this.disk.bytes,
        throughputEps: () => this.meter.eventsPerSecond(),
        inputQueueLength: () => driver.queueLength,
        ticks: () => driver.ticks,
        memberLag: () => (driver.status().role === 'leader' ? this.lastHeartbeatLag : {}),
        storeCalls: () => ({
          ...storeClients.callCounts,
          streamsOpened: storeClients.readIndexStreamCalls + storeClients.proposeStreamCalls,
        }),
        readIndexBatch: () => replicatedStore.readIndexStats,
        storeStreamsServed: () => storeService.openStreamCount(),
        peerCallsRefused: () => this.refusedCalls,
      },
      config.name,
      config.processMetrics ?? true,
    );
  }

  /** startApi starts the developer API on the replicated store (only with an api section). */
  private async startApi(
    nodeApi: NodeApiModule,
    apiConfig: NodeApiConfig,
    secretKey: Buffer | undefined,
    serving: () => void,
  ): Promise<void> {
    const config = this.config;
    // The API owns the early redis-server from here (its close stops it, also when its start fails).
    const localRedis = this.localRedisStarting;
    this.localRedisStarting = null;
    const api = await nodeApi
      .startNodeApi(apiConfig, {
        signal: this.apiStartStop.signal,
        store: this.store,
        dataDir: config.dataDir,
        log: this.log,
        ...(secretKey ? { secretKey } : {}),
        ...(localRedis ? { localRedis } : {}),
        ...(this.metrics ? { metricsRegistry: this.metrics.registry } : {}),
        ready: () => this.readyProblem() === null,
        ...(this.clusterFeed ? { cluster: this.clusterFeed } : {}),
        onServing: (handler) => {
          if (this.stopping === null) this.apiServing = handler;
          serving();
        },
        // Read at each networked run's start: a member added or moved since is denied from then on.
        clusterAddresses: () => [
          ...(this.driver?.status().roster.members ?? []).flatMap((member) => [member.grpcAddr, member.httpAddr]),
          ...(config.bootstrap ?? []).flatMap((member) => [member.grpcAddr, member.httpAddr]),
          ...(config.seeds ?? []),
        ],
      })
      .catch((err: unknown) => {
        // Ended by the stop's abort (it closed what it had opened): the start ends as any stopped start does.
        if (this.stopping !== null) throw new StoppedDuringStartError();
        return rethrowAsConfigError(err);
      });
    if (this.stopping !== null) {
      // Stopped as the API's start ended: the stop did not see this API, so close it here.
      await api
        .close()
        .catch((err: unknown) => this.log.warn({ err: String(err) }, 'closing the developer API failed'));
      throw new StoppedDuringStartError();
    }
    this.api = api;
  }

  private logStarted(driver: Driver, clusterId: string, phases: StartPhases, servingSinceExecMs?: number): void {
    const config = this.config;
    const s = driver.status();
    this.log.info(
      {
        id: s.id,
        term: s.term,
        lastSeq: s.lastSeq,
        snapshotSeq: s.snapshotSeq,
        grpc: this.advertised.grpc,
        http: this.advertised.http,
        metrics: this.metricsAddress,
        tls: config.tls.mode,
        peerUnaryClient: this.pool?.unaryClient,
        storeUnaryClient: this.storeClients?.unaryClient,
        peerUnaryServer: this.peerServer?.unaryServing,
        clusterId,
        version: this.buildVersion,
        // Where the start's time went (ms per phase) and the time since the process began (exec → serving).
        startMs: phases.done(),
        sinceExecMs: sinceExecMs(),
        // With the API: when its app began answering (its workers start after that, within the start).
        ...(servingSinceExecMs === undefined ? {} : { apiServingSinceExecMs: servingSinceExecMs }),
      },
      'node started',
    );
  }

  private async loadSecurity(): Promise<PeerSecurity> {
    const tls = this.config.tls;
    if (tls.mode === 'insecure') {
      this.log.warn('peer traffic is PLAINTEXT (tls.mode insecure): for tests and local development only');
      return { mode: 'insecure' };
    }
    const read = async (path: string, what: string): Promise<Buffer> => {
      try {
        return await readFile(path);
      } catch (err) {
        throw new ConfigError(`cannot read ${what} ${path}: ${(err as Error).message}`);
      }
    };
    return {
      mode: 'mtls',
      material: {
        ca: await read(tls.caFile, 'tls.caFile'),
        cert: await read(tls.certFile, 'tls.certFile'),
        key: await read(tls.keyFile, 'tls.keyFile'),
      },
    };
  }

  /**
   * loadHttpTls reads the HTTP port's certificate pair and what the status poll trusts, or answers null for a
   * plaintext HTTP port (logged as a warning: API keys would cross the network in clear).
   */
  private async loadHttpTls(): Promise<{ pair: { cert: Buffer; key: Buffer }; trust: Buffer | undefined } | null> {
    const config = this.config;
    if (httpIsPlaintext(config)) {
      this.log.warn(
        config.httpTls?.mode === 'insecure'
          ? 'the HTTP port is PLAINTEXT (httpTls.mode insecure): API keys cross the network in clear'
          : 'the HTTP port is PLAINTEXT (tls.mode insecure and no httpTls): API keys cross the network in clear',
      );
      return null;
    }
    const read = async (path: string, what: string): Promise<Buffer> => {
      try {
        return await readFile(path);
      } catch (err) {
        throw new ConfigError(`cannot read ${what} ${path}: ${(err as Error).message}`);
      }
    };
    const httpTls = config.httpTls;
    if (httpTls?.mode === 'https') {
      const caFile = httpTls.caFile ?? (config.tls.mode === 'mtls' ? config.tls.caFile : undefined);
      return {
        pair: {
          cert: await read(httpTls.certFile, 'httpTls.certFile'),
          key: await read(httpTls.keyFile, 'httpTls.keyFile'),
        },
        trust: caFile === undefined ? undefined : await read(caFile, httpTls.caFile ? 'httpTls.caFile' : 'tls.caFile'),
      };
    }
    // No httpTls under mutual TLS: the peer certificate serves HTTPS too (serverAuth; localhost, 127.0.0.1, the pods).
    assert(config.tls.mode === 'mtls');
    return {
      pair: {
        cert: await read(config.tls.certFile, 'tls.certFile'),
        key: await read(config.tls.keyFile, 'tls.keyFile'),
      },
      trust: await read(config.tls.caFile, 'tls.caFile'),
    };
  }

  /** ownPeerIdentity is the identity of this node's own certificate, which must be its peer certificate. */
  private ownPeerIdentity(cert: Buffer | string): CertIdentity {
    const file = this.config.tls.mode === 'mtls' ? this.config.tls.certFile : '';
    const identity = pemIdentity(cert);
    if (typeof identity === 'string') {
      throw new ConfigError(
        `tls.certFile ${file} is not a peer certificate: ${identity}; issue one with \`svc certs node --cluster-id ID\``,
      );
    }
    if (identity.role !== 'peer')
      throw new ConfigError(
        `tls.certFile ${file} is an ${identity.role} certificate; a node needs its peer certificate (\`svc certs node\`)`,
      );
    if (identity.name !== this.config.name) {
      throw new ConfigError(
        `tls.certFile ${file} is ${identity.name}'s peer certificate, but this node is ${this.config.name}: peers match a node's messages against the name its certificate carries`,
      );
    }
    return identity;
  }

  /**
   * recover turns what storage found into the engine's RestoredState and loads the state machine
   * from the newest snapshot. Damage the engine must not trust (a WAL corrupt before its tail, a
   * gap after the snapshot, a snapshot whose files fail their hashes) latches the reseed marker —
   * durably, before the log is reset — and the engine then reinstalls everything from the leader.
   */
  private async recover(storage: NodeStorage): Promise<RestoredState> {
    const restored = storage.restored;
    if (storage.tornTail)
      this.log.info({ ...storage.tornTail }, 'cut a torn WAL tail (an unsynced write at the crash)');
    if (storage.droppedDivergentTail)
      this.log.warn('the WAL held another history past the snapshot; that tail was dropped');
    for (const problem of storage.snapshotProblems)
      this.log.warn({ problem }, 'skipped an unreadable snapshot artifact');
    let problem = storage.corruption;
    const newest = storage.snapshots.newest();
    if (problem === null && restored.snapshot && newest) {
      const bad = await storage.snapshots.verify(newest);
      if (bad !== null) problem = `snapshot ${newest.name}: ${bad}`;
      else {
        try {
          (await this.snapshots.load(newest))();
        } catch (err) {
          problem = (err as Error).message;
        }
      }
    }
    if (problem === null) return restored;
    const hardState = { ...restored.hardState, reseed: !restored.hardState.removed };
    this.log.error(
      { problem, reseed: hardState.reseed },
      'storage is damaged: latching the reseed marker and reinstalling from the leader',
    );
    await storage.hardStateStore.save(hardState);
    await storage.wal.reset();
    this.stateMachine.reset();
    return { hardState, snapshot: null, snapshotHeader: null, entries: [], appliedSeq: 0 };
  }

  private engineConfig(): EngineConfig {
    const config = this.config;
    const limits: EngineLimits = { ...DEFAULT_LIMITS, ...NODE_ENGINE_DEFAULTS, ...config.engineLimits };
    for (const [name, value] of Object.entries(limits)) {
      if (!Number.isSafeInteger(value) || value < 0)
        throw new ConfigError(`engine limit ${name} must be a non-negative integer, got ${String(value)}`);
    }
    const roster = config.bootstrap && config.bootstrap.length > 0 ? bootstrapRoster(config.bootstrap) : null;
    return {
      name: config.name,
      grpcAddr: this.advertised.grpc,
      httpAddr: this.advertised.http,
      bootstrapRoster: roster,
      seeds: config.seeds ?? [],
      randomSeed: randomBytes(4).readUInt32BE(0),
      compat: { ...CURRENT_COMPAT, ...config.engineCompat, buildVersion: this.buildVersion },
      limits,
      // The community-overlay filter reads a store command's key and tenant (docs/protocol.md, "Filtered members").
      communityOf: storeCommunityOf,
    };
  }

  // ---------------------------------------------------------------- the driver's ports

  private ports(): DriverPorts {
    const storage = this.storage!;
    return {
      saveHardState: async (hardState) => {
        const startedAt = performance.now();
        await storage.hardStateStore.save(hardState);
        this.metrics?.hardStateSaveSeconds.observe((performance.now() - startedAt) / 1000);
      },
      resetStateMachine: () => {
        this.log.warn('state machine reset for a reseed');
        this.stateMachine.reset();
      },
      appendLog: (fromSeq, entries) => {
        const startedAt = performance.now();
        const durable = storage.wal.append(fromSeq, entries);
        durable.then(
          () => this.metrics?.walSyncSeconds.observe((performance.now() - startedAt) / 1000),
          () => undefined,
        );
        return durable;
      },
      send: (effect) => {
        this.metrics?.requestsSent.inc({ method: effect.request.method });
        if (effect.request.method === 'Heartbeat') {
          this.lastHeartbeatLag = effect.request.body.replicationLag;
          this.lastHeartbeat = {
            direction: 'sent',
            peerId: effect.toId,
            body: effect.request.body,
            seenAtMs: Date.now(),
          };
        }
        if (tracing()) stampSend(effect);
        if (effect.request.method === 'Heartbeat' && this.heartbeatStreams)
          this.heartbeatStreams.send(effect.requestId, effect.to, effect.request);
        else if (effect.request.method === 'ReportApplied' && this.reportStreams)
          this.reportStreams.send(effect.requestId, effect.to, effect.request);
        else this.pool!.send(effect.requestId, effect.to, effect.request);
      },
      answer: (effect) => this.served!.answer(effect),
      fetchSnapshot: (effect) => {
        this.log.info({ from: effect.to, fromSeq: effect.request.fromSeqno }, 'fetching a snapshot from the leader');
        this.transfer!.fetch(effect);
      },
      apply: (entries) => {
        let events = 0;
        for (const entry of entries) {
          if (this.stateMachine.apply(entry).result !== null) events++;
        }
        this.meter.add(events);
        this.metrics?.appliedEvents.inc(events);
      },
      stageSnapshot: (meta) => this.transfer!.stage(meta),
      compactLog: (throughSeq) => {
        storage.wal.compact(throughSeq).then(
          (segments) => this.log.debug({ throughSeq, segments }, 'WAL compacted'),
          (err: unknown) => this.log.warn({ throughSeq, err: String(err) }, 'WAL compaction failed'),
        );
      },
      pollStatus: (leaderHttpAddr) => {
        const limits = this.config.limits;
        void pollLeaderStatus(
          leaderHttpAddr,
          limits.statusPollTimeoutMs,
          limits.statusResponseBytesMax,
          this.statusPollAgent ?? undefined,
        ).then((seq) => {
          this.metrics?.statusPolls.inc({ outcome: seq === null ? 'failed' : 'answered' });
          if (seq !== null && seq > 0) this.driver?.submit({ type: 'statusPolled', leaderLastSeq: seq });
        });
      },
      observe: (effect) => this.observe(effect),
      stats: () => ({
        entityCount: this.stateMachine.size,
        signalThroughputEps: this.meter.eventsPerSecond(),
        diskBytes: this.disk.bytes,
        nowNs: wallClockNs(),
      }),
      stepped: () => {
        this.waiters.check();
        this.retainOpenCalls();
        if (this.clusterFeed && this.driver)
          this.clusterFeed.stepped(this.driver.leadership(), this.config.name, () =>
            rosterMembers(this.driver!.status().roster),
          );
      },
      fail: (err) => this.onFatal(err),
    };
  }

  /**
   * retainOpenCalls: when the engine's leader, role or roster changed, ends the open Heartbeat/ReportApplied calls
   * to members they no longer go to (open-call-peers.ts), at once rather than at their idle timeout. Their open
   * requests fail UNAVAILABLE, as a closed call's do, and the engine's own retry takes over.
   */
  private retainOpenCalls(): void {
    const driver = this.driver;
    if (!driver || (!this.heartbeatStreams && !this.reportStreams)) return;
    const now = driver.leadership();
    if (this.openCallsLeadership !== null && sameLeadership(this.openCallsLeadership, now)) return;
    this.openCallsLeadership = now;
    const status = driver.status();
    const keep = openCallPeers(now, status.id, status.roster);
    this.heartbeatStreams?.retain(keep.heartbeat, 'no longer a member this node leads');
    this.reportStreams?.retain(keep.report, "no longer this node's leader");
  }

  /** observe handles what the engine reports: results for the waiting callers, role and readiness changes, warnings. */
  private observe(effect: ObservedEffect): void {
    switch (effect.type) {
      case 'proposalResult':
        this.proposals!.onResult(effect);
        return;
      case 'readIndexResult':
        this.engineReads!.onResult(effect);
        return;
      case 'adminResult': {
        if (effect.adminId === AUTOPILOT_ADMIN_ID) {
          if (effect.ok) this.log.info({ code: effect.code }, 'autopilot promoted a caught-up, stable learner');
          else this.log.info({ code: effect.code, reason: effect.reason }, 'autopilot promotion not done');
          return;
        }
        const pending = this.admins.get(effect.adminId);
        if (!pending) return;
        this.admins.delete(effect.adminId);
        clearTimeout(pending.timer);
        if (effect.ok) pending.resolve();
        else pending.reject(new AdminRefusedError(effect.code, effect.reason));
        return;
      }
      case 'readiness':
        this.log.info({ ready: effect.ready, reason: effect.reason }, 'readiness changed');
        this.clusterFeed?.readiness(effect.ready, effect.reason, this.config.name);
        return;
      case 'roleChanged':
        this.log.info({ role: effect.role, term: effect.term, leaderId: effect.leaderId }, 'role changed');
        return;
      case 'warning': {
        this.metrics?.warnings.inc({ code: effect.code });
        this.warnCapped(`engine:${effect.code}`, { code: effect.code }, effect.message);
        return;
      }
      default:
        assertNever(effect);
    }
  }

  // ---------------------------------------------------------------- health, failure, stop

  private healthProblem(): string | null {
    if (this.state !== 'running' || !this.driver) return `node is ${this.state}`;
    const s = this.driver.status();
    return isHealthy(s, this.failure?.message ?? '') ? null : unhealthyReason(s, this.failure?.message ?? '');
  }

  private readyProblem(): string | null {
    const problem = this.healthProblem();
    if (problem !== null) return problem;
    return this.driver!.status().leaderId === 0 ? 'no leader known' : null;
  }

  /**
   * warnCapped logs a warning that peers' messages can drive, at most logLinesPerKindWindowMax lines of
   * one kind per window (log-throttle.ts); the first line after a capped window says how many were left out.
   */
  private warnCapped(kind: string, fields: Record<string, unknown>, message: string): void {
    const admission = this.warningLogs.admit(kind);
    if (!admission.write) return;
    this.log.warn(
      admission.suppressedBefore > 0 ? { ...fields, suppressed: admission.suppressedBefore } : fields,
      message,
    );
  }

  private runningRouter(): StoreRouter {
    if (!this.router || this.state !== 'running') throw new StoreUnavailableError('node is not running');
    return this.router;
  }

  private runningStore(): ReplicatedStore {
    if (!this.replicatedStore || this.state !== 'running') throw new StoreUnavailableError('node is not running');
    return this.replicatedStore;
  }

  private onFatal(err: Error): void {
    if (this.failure) return;
    this.failure = err;
    this.log.fatal({ err: err.message }, 'node failed and stopped its engine (fail-stop); restart the process');
    this.rejectWaiting(new StoreUnavailableError(`node failed: ${err.message}`));
    this.resolveFailed(err);
  }

  /** rejectWaiting ends every store wait, proposal and admin operation still waiting, with `reason`. */
  private rejectWaiting(reason: StoreUnavailableError): void {
    this.waiters.rejectAll(reason);
    this.proposals?.rejectAll(reason);
    this.engineReads?.rejectAll(reason);
    for (const pending of this.admins.values()) {
      clearTimeout(pending.timer);
      pending.reject(reason);
    }
    this.admins.clear();
  }

  private shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      this.state = 'stopping';
      // A stop during the start lets the start's current stage finish (bounded), so that it closes what it opened.
      // The API's start is ended instead (its wait for Redis is not bounded), and closes what it opened.
      this.apiStartStop.abort(new StoppedDuringStartError());
      await this.startStage;
      await this.apiStarting;
      if (this.diskTimer) clearInterval(this.diskTimer);
      this.clusterFeed?.close();
      // The API goes first (new requests answer 503), while the store can still finish what it started.
      const api = this.api;
      this.api = null;
      this.apiServing = null;
      await api
        ?.close()
        .catch((err: unknown) => this.log.warn({ err: String(err) }, 'closing the developer API failed'));
      // A start that failed before the API's turn leaves its early redis-server to this stop.
      const localRedis = this.localRedisStarting;
      this.localRedisStarting = null;
      await localRedis?.then(
        (redis) => redis.stop(),
        () => undefined,
      );
      await this.driver?.stop();
      await this.recorder?.close();
      await this.transfer?.stop();
      this.rejectWaiting(new StoreUnavailableError('node stopped'));
      this.pool?.close();
      this.heartbeatStreams?.close();
      this.reportStreams?.close();
      this.storeClients?.close();
      // Lookups still waiting for the DNS end now (ECANCELLED): none is left for the process's exit to wait on.
      this.peerNames.close();
      // Members' Store streams never end by themselves: end them so the server stops without waiting out its grace.
      this.storeService?.endStreams('node stopping');
      this.heartbeatStreamServer?.endAll('node stopping');
      this.reportStreamServer?.endAll('node stopping');
      await this.peerServer?.close(this.config.limits.stopGraceMs);
      await this.http?.close();
      await this.metricsServer?.close();
      await this.statusPollAgent?.close().catch(() => undefined);
      await this.storage?.close();
      this.state = 'stopped';
      this.log.info('node stopped');
    })();
    return this.stopping;
  }
}

/**
 * rethrowAsConfigError gives a ConfigError from the dynamically loaded node-api.ts this module's class, so
 * `instanceof ConfigError` holds for callers even where a loader gave that module its own copy of config.ts.
 */
function rethrowAsConfigError(err: unknown): never {
  if (err instanceof Error && err.name === 'ConfigError' && !(err instanceof ConfigError))
    throw new ConfigError(err.message);
  throw err;
}

/** StoppedDuringStartError ends a start that a stop came in the middle of. */
export class StoppedDuringStartError extends Error {
  constructor() {
    super('the node was stopped during its start');
    this.name = 'StoppedDuringStartError';
  }
}

/** sinceExecMs is the time since this process began (exec → now), for the start's log line. */
function sinceExecMs(): number {
  return Math.round(process.uptime() * 1000);
}

function assertNever(value: never): never {
  throw new Error(`unhandled effect ${JSON.stringify(value)}`);
}

/**
 * StartPhases times the phases of a node's start for its 'node started' line: `load` (security, the API's secret
 * key), `storage` (WAL and snapshot recovery), `listen` (the peer, HTTP and metrics listeners), `engine` (the
 * engine, its recorder and driver); with the API, `apiLoad` (what was left of loading its modules), `api` (its app
 * built, until it answers) and `apiWorkers` (its workers started).
 */
class StartPhases {
  private readonly ms: Record<string, number> = {};
  private last = performance.now();

  mark(phase: string): void {
    const now = performance.now();
    this.ms[phase] = Math.round(now - this.last);
    this.last = now;
  }

  done(): Record<string, number> {
    return { ...this.ms };
  }
}
