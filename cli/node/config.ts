// NodeConfig is everything a node is started with: a plain object, checked once by
// resolveNodeConfig, which names the first problem instead of failing later. See README.md.
import { isRedisUrl } from '../../api/redis/redis-target.js';
import { recordingConfigProblem, type NodeRecordingConfig } from './recording.js';
import type { Compat, EngineLimits } from '../../engine/types.js';
import type { GrpcLimits } from '../../transports/grpc/limits.js';
import { hostPortProblem, httpBaseProblem } from '../../transports/grpc/join-fields.js';
import { CLUSTER_ID } from '../../transports/grpc/peer-identity.js';
import type { StorageLimits } from '../../transports/storage/limits.js';
import type { StoreLimits } from '../../store/limits.js';
import { nodeLimits, type NodeLimits } from '../../transports/node/limits.js';
import type { LogLevel } from '../../transports/node/logger.js';

/** BootstrapMember is one founder of a new cluster, as every founder lists it. */
export interface BootstrapMember {
  name: string;
  /** grpcAddr is the address peers dial, host:port. */
  grpcAddr: string;
  /** httpAddr is the node's HTTP base, scheme://host:port (the status-poll path reads `${httpAddr}/status`). */
  httpAddr: string;
}

/** NodeTls: mutual TLS from PEM files, or plaintext only when asked for by name. */
export type NodeTls =
  | {
      mode: 'mtls';
      caFile: string;
      certFile: string;
      keyFile: string;
      /** serverNameOverride checks peers' certificates against this name instead of the dialled host. */
      serverNameOverride?: string;
    }
  | { mode: 'insecure' };

/**
 * NodeHttpTls: how the HTTP port (httpListen) is served. 'https' with this server certificate and key (PEM);
 * caFile is what this node trusts when it reads a peer's HTTP port (the status poll), default tls.caFile.
 * 'insecure' is plaintext, only when asked for by name (a warning is logged at start).
 */
export type NodeHttpTls = { mode: 'https'; certFile: string; keyFile: string; caFile?: string } | { mode: 'insecure' };

export type { LogLevel };

/**
 * NodeApiConfig turns on the developer HTTP API (api/) on the node's HTTP port, over the node's replicated
 * store. Unset fields fall back to the environment variables the API documents (api/README.md), then to the
 * API's defaults. Every node of a cluster should get the same redisUrl: queues, run events and the rate limit
 * are shared through it.
 */
export interface NodeApiConfig {
  /**
   * redisUrl (redis:// or rediss://) is the Redis for queues, run events and the cluster-wide rate limit.
   * Default REDIS_URL; without either, a redis-server of this node alone under dataDir/api-redis when one is
   * on the PATH (and localRedis is not false), else none: queue endpoints answer 503 QUEUE_UNAVAILABLE.
   */
  redisUrl?: string;
  /** localRedis false never starts a node-local redis-server (default true). */
  localRedis?: boolean;
  /** secretKeyFile holds the 32-byte credential key (64 hex digits or base64); default SVC_SECRET_KEY_FILE, else SVC_SECRET_KEY. */
  secretKeyFile?: string;
  /** rateLimitPerSecond is the request rate per API key (cluster-wide through a shared Redis); default SVC_RATE_LIMIT_RPS, else 50. */
  rateLimitPerSecond?: number;
  /** runWorker false leaves agent runs to other processes (default: SVC_RUN_WORKER, else true). */
  runWorker?: boolean;
  /** albumWorker false leaves album jobs to other processes (default: SVC_ALBUM_WORKER, else true). */
  albumWorker?: boolean;
  /** trustedProxies are IPs/CIDRs whose X-Forwarded-For is believed (default SVC_TRUSTED_PROXIES). */
  trustedProxies?: string[];
  /** workspaceRoot confines project workspaces (default SVC_WORKSPACE_ROOT). */
  workspaceRoot?: string;
  /** accessLog logs one line per answer (default SVC_ACCESS_LOG=1). */
  accessLog?: boolean;
  /**
   * The rest are the API's other settings, each also a variable (api/env-settings.ts declares them, with their
   * kinds, defaults and docs; `svc node` checks them against it): the node hands them to the API as those variables.
   */
  secretKey?: string;
  runBackend?: string;
  runEgressAllow?: string[];
  runEgressDeny?: string[];
  images?: {
    generator?: string;
    apiUrl?: string;
    apiKeyFile?: string;
    apiKey?: string;
    service?: string;
    model?: string;
    editModel?: string;
    quality?: string;
    timeoutMs?: number;
  };
  kubernetes?: {
    runImage?: string;
    namespace?: string;
    workspaceClaim?: string;
    runCpu?: string;
    runUid?: number;
    runGid?: number;
    runTmpBytes?: number;
    serviceAccount?: string;
  };
}

export interface NodeConfig {
  /** name is the node's permanent member name; a join is idempotent by name. */
  name: string;
  /** dataDir holds hard-state.json, wal/ and snapshots/ (created when missing). */
  dataDir: string;
  /** grpcListen is where the peer server binds, host:port (port 0 picks a free one). */
  grpcListen: string;
  /** grpcAdvertise is the address peers dial; default: grpcListen with the bound port. */
  grpcAdvertise?: string;
  /** httpListen is where /health, /ready, /status and the developer API are served, host:port. */
  httpListen: string;
  /**
   * httpAdvertise is the HTTP base peers use, scheme://host:port; default: https://httpListen with the bound port
   * (http:// when the HTTP port is plaintext).
   */
  httpAdvertise?: string;
  /**
   * httpTls says how the HTTP port is served. Default: HTTPS with the node's peer certificate (tls.certFile and
   * tls.keyFile: it names localhost, 127.0.0.1 and the pods) under mutual TLS; plaintext when tls.mode is
   * 'insecure' (the whole node is then in its plaintext test mode). Plain HTTP to an HTTPS port is answered 400.
   */
  httpTls?: NodeHttpTls;
  /**
   * metricsListen is where /metrics (and /status, /health, /ready) are served in plaintext, host:port, apart from
   * the API's port; default 127.0.0.1:0 (loopback, a port the kernel picks: Node.metricsAddress, the start log).
   */
  metricsListen?: string;
  /** bootstrap is the founding roster (the same list on every founder, itself included). */
  bootstrap?: BootstrapMember[];
  /** seeds are gRPC addresses of any members, for a node joining an existing cluster. */
  seeds?: string[];
  /**
   * clusterId names the cluster this node belongs to (a DNS label; `svc certs cluster-id` makes one). Every
   * peer call carries it and a call naming another is refused (docs/protocol.md, "Identity and trust").
   * Default: the cluster id in the node's own peer certificate (mutual TLS), else the one its data
   * directory recorded at the first start; a plaintext node with neither checks none.
   */
  clusterId?: string;
  tls: NodeTls;
  /** tickMs overrides nodeLimits.tickMs: the engine's unit of time. */
  tickMs?: number;
  engineLimits?: Partial<EngineLimits>;
  grpcLimits?: Partial<GrpcLimits>;
  storageLimits?: Partial<StorageLimits>;
  storeLimits?: Partial<StoreLimits>;
  nodeLimits?: Partial<NodeLimits>;
  logLevel?: LogLevel;
  /** logDestination receives one JSON log line per write; default stdout. */
  logDestination?: { write(line: string): unknown };
  /** buildVersion overrides package.json's version in heartbeats (tests of version spread). */
  buildVersion?: string;
  /**
   * engineCompat makes this node speak like an older binary (tests of mixed versions only), e.g.
   * `{sendsLeaderLastSeq: false}`: its heartbeats carry leader_last_seq 0, so followers fall back to
   * the status-poll readiness path.
   */
  engineCompat?: Partial<Omit<Compat, 'buildVersion'>>;
  /**
   * apiMountHold (tests only) is awaited after the engine runs and before the developer API is mounted, so a test
   * sees the window a real start has there (the API's modules loading, its app being built) for as long as it
   * needs: the HTTP port answers meanwhile, API paths with 503 NOT_READY.
   */
  apiMountHold?: () => Promise<void>;
  /** processMetrics adds prom-client's process metrics (CPU, memory, event loop) to /metrics; default true. */
  processMetrics?: boolean;
  /** recording configures the flight recorder (cli/node/recording.ts): on by default. */
  recording?: NodeRecordingConfig;
  /** grpc chooses the peer clients' implementation (the limits are grpcLimits). */
  grpc?: NodeGrpcConfig;
  /** writeTraceDir: `svc node` records its write-timeline stamps in <writeTraceDir>/<name>.jsonl (SVC_WRITE_TRACE_DIR). */
  writeTraceDir?: string;
  /** api serves the developer HTTP API on httpListen beside /health, /ready, /metrics and /status (absent: no API). */
  api?: NodeApiConfig;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** HostPort is a parsed host:port; host may be a name, an IPv4 address or a bracketed IPv6 address. */
export interface HostPort {
  host: string;
  port: number;
}

export function parseHostPort(value: unknown, what: string): HostPort {
  if (typeof value !== 'string') throw new ConfigError(`${what} must be a host:port string`);
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(value);
  if (!match) throw new ConfigError(`${what} ${JSON.stringify(value)} is not host:port`);
  const port = Number(match[2]);
  if (port > 65_535) throw new ConfigError(`${what} ${JSON.stringify(value)} has a port above 65535`);
  return { host: match[1]!, port };
}

function checkHttpBase(value: unknown, what: string): string {
  if (typeof value !== 'string' || !/^https?:\/\/[^/\s]+$/.test(value))
    throw new ConfigError(`${what} ${JSON.stringify(value)} is not scheme://host:port`);
  // The address travels in JoinCluster and rosters: held to the form peers check it against (join-fields.ts).
  const problem = httpBaseProblem(value);
  if (problem !== null) throw new ConfigError(`${what} ${JSON.stringify(value)}: ${problem}`);
  return value;
}

/** checkAdvertisedHostPort: an address peers are told to dial must pass the JoinCluster check (join-fields.ts). */
function checkAdvertisedHostPort(value: unknown, what: string): void {
  parseHostPort(value, what);
  const problem = hostPortProblem(value as string);
  if (problem !== null) throw new ConfigError(`${what} ${JSON.stringify(value)}: ${problem}`);
}

function checkFile(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new ConfigError(`${what} must name a file`);
  return value;
}

export interface ResolvedNodeConfig extends NodeConfig {
  limits: NodeLimits;
  grpcListenAt: HostPort;
  httpListenAt: HostPort;
  metricsListenAt: HostPort;
}

/** METRICS_LISTEN_DEFAULT: loopback, a port the kernel picks (several nodes share a host in tests and `svc cluster`). */
export const METRICS_LISTEN_DEFAULT = '127.0.0.1:0';

/** httpIsPlaintext: the HTTP port speaks plain HTTP (asked for by name, or the whole node is plaintext). */
export function httpIsPlaintext(config: Pick<NodeConfig, 'tls' | 'httpTls'>): boolean {
  return config.httpTls ? config.httpTls.mode === 'insecure' : config.tls.mode === 'insecure';
}

/** resolveNodeConfig checks a NodeConfig and fills the node limits; it throws ConfigError naming the problem. */
export function resolveNodeConfig(config: NodeConfig): ResolvedNodeConfig {
  if (typeof config !== 'object' || config === null) throw new ConfigError('node config must be an object');
  if (typeof config.name !== 'string' || !NAME.test(config.name)) {
    throw new ConfigError(
      `name ${JSON.stringify(config.name)} must be 1-253 characters of letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  }
  if (typeof config.dataDir !== 'string' || config.dataDir.trim() === '')
    throw new ConfigError('dataDir must name a directory');
  const grpcListenAt = parseHostPort(config.grpcListen, 'grpcListen');
  const httpListenAt = parseHostPort(config.httpListen, 'httpListen');
  const metricsListenAt = parseHostPort(config.metricsListen ?? METRICS_LISTEN_DEFAULT, 'metricsListen');
  if (config.grpcAdvertise !== undefined) checkAdvertisedHostPort(config.grpcAdvertise, 'grpcAdvertise');
  if (config.httpAdvertise !== undefined) checkHttpBase(config.httpAdvertise, 'httpAdvertise');
  const wildcard = (host: string): boolean => host === '0.0.0.0' || host === '[::]';
  if (config.grpcAdvertise === undefined && wildcard(grpcListenAt.host))
    throw new ConfigError('grpcAdvertise is required when grpcListen binds every interface');
  if (config.httpAdvertise === undefined && wildcard(httpListenAt.host))
    throw new ConfigError('httpAdvertise is required when httpListen binds every interface');

  const bootstrap = config.bootstrap ?? [];
  const seeds = config.seeds ?? [];
  if (!Array.isArray(bootstrap) || !Array.isArray(seeds)) throw new ConfigError('bootstrap and seeds must be arrays');
  if (bootstrap.length === 0 && seeds.length === 0)
    throw new ConfigError('give bootstrap (founding a cluster) or seeds (joining one)');
  const names = new Set<string>();
  for (const [i, member] of bootstrap.entries()) {
    if (typeof member !== 'object' || member === null || typeof member.name !== 'string' || !NAME.test(member.name))
      throw new ConfigError(`bootstrap[${i}] needs a valid name`);
    if (names.has(member.name)) throw new ConfigError(`bootstrap lists ${member.name} twice`);
    names.add(member.name);
    checkAdvertisedHostPort(member.grpcAddr, `bootstrap[${i}].grpcAddr`);
    checkHttpBase(member.httpAddr, `bootstrap[${i}].httpAddr`);
  }
  // A node the founders' list leaves out joins through its seeds: every pod of a stateful set gets one
  // template, so the founders and the pods added later by scaling share the same flags (deploy/kubernetes).
  const joinsThroughSeeds = bootstrap.length > 0 && !names.has(config.name);
  if (joinsThroughSeeds && seeds.length === 0)
    throw new ConfigError(
      `bootstrap does not list this node (${config.name}) and no seeds are given; every founder passes the same list, itself included, and a node left out of it joins through seeds`,
    );
  for (const [i, seed] of seeds.entries()) parseHostPort(seed, `seeds[${i}]`);

  if (config.clusterId !== undefined && (typeof config.clusterId !== 'string' || !CLUSTER_ID.test(config.clusterId))) {
    throw new ConfigError(
      `clusterId ${JSON.stringify(config.clusterId)} must be a DNS label: 1-63 of a-z 0-9 -, not starting or ending with -`,
    );
  }

  const tls = config.tls;
  if (typeof tls !== 'object' || tls === null)
    throw new ConfigError("tls must be {mode: 'mtls', caFile, certFile, keyFile} or {mode: 'insecure'}");
  if (tls.mode === 'mtls') {
    checkFile(tls.caFile, 'tls.caFile');
    checkFile(tls.certFile, 'tls.certFile');
    checkFile(tls.keyFile, 'tls.keyFile');
  } else if (tls.mode !== 'insecure') {
    throw new ConfigError(
      `tls.mode must be 'mtls' or 'insecure', got ${JSON.stringify((tls as { mode: unknown }).mode)}`,
    );
  }
  checkHttpTls(config.httpTls);
  if (config.logLevel !== undefined && !LOG_LEVELS.includes(config.logLevel))
    throw new ConfigError(`logLevel must be one of ${LOG_LEVELS.join(', ')}`);

  if (config.api !== undefined) checkApiConfig(config.api);
  const recordingProblem = recordingConfigProblem(config.recording);
  if (recordingProblem !== null) throw new ConfigError(recordingProblem);
  checkGrpcConfig(config.grpc);

  let limits: NodeLimits;
  try {
    limits = nodeLimits({ ...config.nodeLimits, ...(config.tickMs === undefined ? {} : { tickMs: config.tickMs }) });
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return {
    ...config,
    bootstrap: joinsThroughSeeds ? [] : bootstrap,
    seeds,
    limits,
    grpcListenAt,
    httpListenAt,
    metricsListenAt,
  };
}

/** NodeGrpcConfig is the `grpc` section: which client carries which peer calls. */
export interface NodeGrpcConfig {
  /**
   * leanUnaryClient (default true) sends the unary peer calls a write or a read waits on (Heartbeat, ShipSegment,
   * ReportApplied, RequestVote, TimeoutNow) and the Store client pool's unary calls (Propose, ProposeBatch, ReadIndex,
   * Get) over the lean HTTP/2 client (transports/grpc/lean-unary.ts); false sends them over grpc-js's client, as
   * every other peer call goes. The server side is the same either way.
   */
  leanUnaryClient?: boolean;
  /**
   * heartbeatStream (default true) sends a leader's Heartbeats as messages on one open HeartbeatStream call per
   * member (transports/grpc/heartbeat-stream.ts); false sends them as unary calls. The server serves both.
   */
  heartbeatStream?: boolean;
  /**
   * leanUnaryServer (default true) serves the unary peer and store calls (WalShipping's unary methods; svc.store.v1
   * Propose, ProposeBatch, ReadIndex, Get) on the HTTP/2 stream directly (transports/grpc/lean-serve.ts), with the
   * same checks and handlers; false serves every call through grpc-js's server. Callers cannot tell them apart.
   */
  leanUnaryServer?: boolean;
  /**
   * leanConnectionServer (default true, with leanUnaryServer) serves the unary calls of a client that marks its
   * connection (lean-unary.ts's dial does) on transports/h2's framing (transports/grpc/lean-connections.ts), with
   * the same checks and handlers; false answers them on node:http2 streams. Callers cannot tell them apart.
   */
  leanConnectionServer?: boolean;
  /**
   * reportStream (default true) sends a follower's ReportApplied calls as messages on one open ReportStream call
   * to its leader (transports/grpc/report-stream.ts); false sends them as unary calls. The server serves both.
   * A switch of its own (not one for both streams) so each carriage can be measured and turned off alone.
   */
  reportStream?: boolean;
}

function checkGrpcConfig(grpc: unknown): void {
  if (grpc === undefined) return;
  if (typeof grpc !== 'object' || grpc === null || Array.isArray(grpc))
    throw new ConfigError('grpc must be an object, e.g. {"leanUnaryClient": false}');
  for (const key of [
    'leanUnaryClient',
    'leanUnaryServer',
    'leanConnectionServer',
    'heartbeatStream',
    'reportStream',
  ] as const) {
    const value = (grpc as NodeGrpcConfig)[key];
    if (value !== undefined && typeof value !== 'boolean') throw new ConfigError(`grpc.${key} must be true or false`);
  }
}

function checkHttpTls(httpTls: NodeHttpTls | undefined): void {
  if (httpTls === undefined) return;
  if (typeof httpTls !== 'object' || httpTls === null)
    throw new ConfigError("httpTls must be {mode: 'https', certFile, keyFile} or {mode: 'insecure'}");
  if (httpTls.mode === 'https') {
    checkFile(httpTls.certFile, 'httpTls.certFile');
    checkFile(httpTls.keyFile, 'httpTls.keyFile');
    if (httpTls.caFile !== undefined) checkFile(httpTls.caFile, 'httpTls.caFile');
  } else if (httpTls.mode !== 'insecure') {
    throw new ConfigError(
      `httpTls.mode must be 'https' or 'insecure', got ${JSON.stringify((httpTls as { mode: unknown }).mode)}`,
    );
  }
}

const RATE_LIMIT_PER_SECOND_MAX = 1_000_000;

function checkApiConfig(api: NodeApiConfig): void {
  if (typeof api !== 'object' || api === null || Array.isArray(api))
    throw new ConfigError('api must be an object (use {} for the defaults)');
  if (api.redisUrl !== undefined && (typeof api.redisUrl !== 'string' || !isRedisUrl(api.redisUrl))) {
    throw new ConfigError(
      'api.redisUrl must be a redis://, rediss:// or redis+sentinel://host:port[,host:port…]/<primary name> URL',
    );
  }
  if (api.secretKeyFile !== undefined) checkFile(api.secretKeyFile, 'api.secretKeyFile');
  if (api.workspaceRoot !== undefined) checkFile(api.workspaceRoot, 'api.workspaceRoot');
  const rate = api.rateLimitPerSecond;
  if (rate !== undefined && (!Number.isSafeInteger(rate) || rate < 1 || rate > RATE_LIMIT_PER_SECOND_MAX)) {
    throw new ConfigError(`api.rateLimitPerSecond must be an integer from 1 to ${RATE_LIMIT_PER_SECOND_MAX}`);
  }
  for (const flag of ['localRedis', 'runWorker', 'albumWorker', 'accessLog'] as const) {
    if (api[flag] !== undefined && typeof api[flag] !== 'boolean')
      throw new ConfigError(`api.${flag} must be true or false`);
  }
  if (
    api.trustedProxies !== undefined &&
    (!Array.isArray(api.trustedProxies) || api.trustedProxies.some((item) => typeof item !== 'string' || item === ''))
  ) {
    throw new ConfigError('api.trustedProxies must be a list of IP addresses or CIDRs');
  }
}
