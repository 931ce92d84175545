// The node's configuration schema: every config file key, command-line flag and environment variable of
// `svc node`, each declared once here with its kind (a zod schema, api/setting-types.ts), default and doc. From
// it come the file's strict schema (unknown keys refused), the flag parser's spec, the reading of the
// environment, `svc node --help` (config-help.ts) and docs/configuration.md (`npm run docs:config`). The developer API's
// variables are declared in api/env-settings.ts and folded in under `api.`; the limit sections take their names
// and defaults from each layer's limits file and their docs from its interface (the docs script reads them).
import { z } from 'zod';
import { API_ENV_SETTINGS } from '../../api/env-settings.js';
import { list, oneOf, onOff, text, wholeNumber, type SettingKind } from '../../api/setting-types.js';
import { DEFAULT_LIMITS } from '../../engine/limits.js';
import { PAYLOAD_MODES } from '../../recording/format.js';
import { DEFAULT_GRPC_LIMITS } from '../../transports/grpc/limits.js';
import { DEFAULT_NODE_LIMITS } from '../../transports/node/limits.js';
import { DEFAULT_RECORDING_LIMITS } from '../../transports/node/recorder.js';
import { DEFAULT_STORAGE_LIMITS } from '../../transports/storage/limits.js';
import { DEFAULT_STORE_LIMITS } from '../../store/limits.js';
import { parseFounder } from '../founder.js';
import { NODE_ENGINE_DEFAULTS } from './engine-defaults.js';

/** FlagUse is how one flag sets a setting: from its value, as a fixed value, or repeated into a list. */
export type FlagUse =
  | { flag: string; metavar: string; repeat?: false }
  | { flag: string; sets: unknown; doc: string }
  | { flag: string; metavar: string; repeat: true; item?: (text: string) => unknown };

export interface NodeSetting {
  /** key is the setting's dotted path in a config file (`api.rateLimitPerSecond`). */
  key: string;
  kind: SettingKind;
  /** doc says what it does; for a limit it is read from the limits interface (docFrom) by the docs script. */
  doc: string;
  docFrom?: { file: string; iface: string };
  /** fallback is the default when it is a constant; defaultText says it in words otherwise. */
  fallback?: unknown;
  defaultText?: string;
  env?: string;
  flags?: FlagUse[];
  /** secret: never echoed in a refusal, masked by --print-config. */
  secret?: boolean;
  /** path: relative in a config file means relative to the file; in a flag or variable, to the working directory. */
  path?: boolean;
  /** required: `svc node` refuses to start without it. */
  required?: boolean;
}

/** SectionFlag sets any setting of a section by name: `--engine-limit NAME=N`. */
export interface SectionFlag {
  flag: string;
  section: string;
}

/** LIMIT_INTEGER_MAX: a limit is a safe integer (JSON and the limits hold doubles). */
const LIMIT_INTEGER_MAX = Number.MAX_SAFE_INTEGER;
/** TICK_MS_MAX: a minute per tick is already absurd. TICKS_MAX and TIMEOUT_MS_MAX bound the named timing flags. */
const TICK_MS_MAX = 60_000;
const TICKS_MAX = 1_000_000;
const TIMEOUT_MS_MAX = 3_600_000;
/** RECORDING_BYTES_MAX bounds recording.limits.recordingBytesMax (1 TiB: a ring is meant to be far smaller). */
const RECORDING_BYTES_MAX = 2 ** 40;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** founders: the bootstrap list as a file holds it (objects) and as --founder gives it (NAME,GRPC,HTTP). */
function founders(): SettingKind {
  const member = z.strictObject(
    {
      name: z.string({ error: 'must be a member name' }),
      grpcAddr: z.string({ error: 'must be host:port' }),
      httpAddr: z.string({ error: 'must be scheme://host:port' }),
    },
    { error: 'must be {name, grpcAddr, httpAddr}' },
  );
  return {
    schema: z.array(member, { error: 'must be a list of {name, grpcAddr, httpAddr}' }),
    typeText: 'list of {name, grpcAddr, httpAddr}',
    fromText: (t) => [parseFounder(t)],
    toText: (v) => JSON.stringify(v),
  };
}

/** limitSection declares every limit of one section, named and defaulted by its limits file. */
function limitSection(
  section: string,
  defaults: Readonly<Record<string, number>>,
  docFrom: { file: string; iface: string },
  minimum: number,
  special: Record<string, Partial<NodeSetting>> = {},
): NodeSetting[] {
  return Object.entries(defaults).map(([name, value]) => ({
    key: `${section}.${name}`,
    kind: wholeNumber(minimum, LIMIT_INTEGER_MAX),
    doc: '',
    docFrom,
    fallback: value,
    ...special[name],
  }));
}

/** The API's variables, under `api.` (the standalone server's own, SVC_API_HOST/PORT, are in OTHER_ENV). */
const API_SETTINGS: NodeSetting[] = API_ENV_SETTINGS.filter((s) => s.key !== undefined).map((s) => ({
  key: `api.${s.key}`,
  kind: s.kind,
  doc: s.doc,
  env: s.env,
  ...(s.fallback === undefined ? {} : { fallback: s.fallback }),
  ...(s.defaultText === undefined ? {} : { defaultText: s.defaultText }),
  ...(s.secret ? { secret: true } : {}),
  ...(s.path ? { path: true } : {}),
}));

const NO_WORKERS_DOC = 'leave agent runs and album jobs to other processes';

/** API_FLAGS: the flags of the API's settings (the variables and file keys come from api/env-settings.ts). */
const API_FLAGS: Record<string, FlagUse[]> = {
  'api.redisUrl': [{ flag: 'api-redis-url', metavar: 'URL' }],
  'api.secretKeyFile': [{ flag: 'api-secret-key-file', metavar: 'FILE' }],
  'api.rateLimitPerSecond': [{ flag: 'api-rate-limit', metavar: 'N' }],
  'api.runWorker': [{ flag: 'api-no-workers', sets: false, doc: NO_WORKERS_DOC }],
  'api.albumWorker': [{ flag: 'api-no-workers', sets: false, doc: NO_WORKERS_DOC }],
};
for (const setting of API_SETTINGS) {
  const flags = API_FLAGS[setting.key];
  if (flags) setting.flags = flags;
}

/** NODE_SETTINGS, in the order of the docs and of --help. */
export const NODE_SETTINGS: readonly NodeSetting[] = [
  {
    key: 'name',
    kind: text('a member name'),
    doc: "the node's permanent member name (1-253 of letters, digits, `.`, `_`, `-`); a join is idempotent by name",
    flags: [{ flag: 'name', metavar: 'NAME' }],
    required: true,
  },
  {
    key: 'dataDir',
    kind: text('a directory path'),
    doc: 'holds hard-state.json, wal/, snapshots/ and the recording (created when missing)',
    flags: [{ flag: 'data-dir', metavar: 'DIR' }],
    path: true,
    required: true,
  },
  {
    key: 'grpcListen',
    kind: text('host:port'),
    doc: 'where the peer server binds (port 0: a free one)',
    flags: [{ flag: 'grpc-listen', metavar: 'HOST:PORT' }],
    required: true,
  },
  {
    key: 'grpcAdvertise',
    kind: text('host:port'),
    doc: 'the address peers dial',
    defaultText: 'grpcListen with the bound port',
    flags: [{ flag: 'grpc-advertise', metavar: 'HOST:PORT' }],
  },
  {
    key: 'httpListen',
    kind: text('host:port'),
    doc: "the HTTP port's bind address: /health, /ready, /status and the developer API",
    flags: [{ flag: 'http-listen', metavar: 'HOST:PORT' }],
    required: true,
  },
  {
    key: 'httpAdvertise',
    kind: text('scheme://host:port'),
    doc: 'the HTTP base peers use for /status',
    defaultText: 'https://httpListen with the bound port (http:// when plaintext)',
    flags: [{ flag: 'http-advertise', metavar: 'URL' }],
  },
  {
    key: 'httpTls.mode',
    kind: oneOf(['https', 'insecure']),
    doc: 'how the HTTP port is served; `insecure` (plaintext) is logged as a warning: API keys cross in clear',
    defaultText: 'https with the node peer pair under mutual TLS; plaintext when tls.mode is insecure',
    flags: [
      {
        flag: 'http-insecure',
        sets: 'insecure',
        doc: 'plaintext HTTP port (logged as a warning: API keys cross in clear)',
      },
    ],
  },
  {
    key: 'httpTls.certFile',
    kind: text('a file path'),
    doc: "the HTTP port's server certificate (PEM); with keyFile, selects https",
    defaultText: 'tls.certFile',
    flags: [{ flag: 'http-tls-cert', metavar: 'FILE' }],
    path: true,
  },
  {
    key: 'httpTls.keyFile',
    kind: text('a file path'),
    doc: "the HTTP port's private key (PEM)",
    defaultText: 'tls.keyFile',
    flags: [{ flag: 'http-tls-key', metavar: 'FILE' }],
    path: true,
  },
  {
    key: 'httpTls.caFile',
    kind: text('a file path'),
    doc: "the CA peers' HTTP ports are checked against (the status poll)",
    defaultText: 'tls.caFile',
    flags: [{ flag: 'http-tls-ca', metavar: 'FILE' }],
    path: true,
  },
  {
    key: 'metricsListen',
    kind: text('host:port'),
    doc: '/metrics (and /status, /health, /ready) in plaintext, apart from the API',
    fallback: '127.0.0.1:0',
    flags: [{ flag: 'metrics-listen', metavar: 'HOST:PORT' }],
  },
  {
    key: 'bootstrap',
    kind: founders(),
    doc: 'the founding roster: the same list on every founder, itself included (a node left out joins through seeds)',
    defaultText: 'none',
    flags: [{ flag: 'founder', metavar: 'NAME,GRPC,HTTP', repeat: true, item: parseFounder }],
  },
  {
    key: 'seeds',
    kind: list('host:port', (entry) => /^\S+:\d{1,5}$/.test(entry)),
    doc: 'gRPC addresses of any members, for a node joining an existing cluster',
    defaultText: 'none',
    flags: [{ flag: 'seed', metavar: 'HOST:PORT', repeat: true }],
  },
  {
    key: 'clusterId',
    kind: text('a DNS label'),
    doc: 'the cluster this node belongs to; every peer call carries it and one naming another is refused',
    defaultText: 'the id in the peer certificate, else the one the data directory recorded',
    flags: [{ flag: 'cluster-id', metavar: 'ID' }],
  },
  {
    key: 'tls.mode',
    kind: oneOf(['mtls', 'insecure']),
    doc: 'peer traffic: mutual TLS, or `insecure` plaintext (tests and local development only; the HTTP port too)',
    defaultText: 'none: required (mtls is implied by the --tls-* flags)',
    flags: [
      {
        flag: 'insecure',
        sets: 'insecure',
        doc: 'plaintext peer traffic and HTTP port (tests and local development only)',
      },
    ],
  },
  {
    key: 'tls.caFile',
    kind: text('a file path'),
    doc: 'the cluster CA certificate (PEM)',
    flags: [{ flag: 'tls-ca', metavar: 'FILE' }],
    path: true,
  },
  {
    key: 'tls.certFile',
    kind: text('a file path'),
    doc: "this node's peer certificate (PEM)",
    flags: [{ flag: 'tls-cert', metavar: 'FILE' }],
    path: true,
  },
  {
    key: 'tls.keyFile',
    kind: text('a file path'),
    doc: "this node's private key (PEM)",
    flags: [{ flag: 'tls-key', metavar: 'FILE' }],
    path: true,
  },
  {
    key: 'tls.serverNameOverride',
    kind: text('a host name'),
    doc: "check peers' certificates against this name instead of the dialled host",
    defaultText: 'the dialled host',
    flags: [{ flag: 'tls-server-name', metavar: 'NAME' }],
  },
  {
    key: 'tickMs',
    kind: wholeNumber(1, TICK_MS_MAX),
    doc: "the engine's unit of time, ms (overrides nodeLimits.tickMs)",
    defaultText: 'nodeLimits.tickMs (100)',
    flags: [{ flag: 'tick-ms', metavar: 'N' }],
  },
  {
    key: 'logLevel',
    kind: oneOf(LOG_LEVELS),
    doc: 'the lowest level logged',
    fallback: 'info',
    flags: [{ flag: 'log-level', metavar: 'LEVEL' }],
  },
  {
    key: 'processMetrics',
    kind: onOff(),
    doc: "prom-client's process metrics (CPU, memory, event loop) on /metrics",
    fallback: true,
  },
  {
    key: 'buildVersion',
    kind: text('a version'),
    doc: "overrides package.json's version in heartbeats (tests of version spread)",
    defaultText: "package.json's version",
  },
  {
    key: 'writeTraceDir',
    kind: text('a directory path'),
    doc: "record this node's write-timeline stamps into DIR/<name>.jsonl (bench/write-timeline.ts)",
    defaultText: 'none: nothing recorded',
    env: 'SVC_WRITE_TRACE_DIR',
    path: true,
  },
  {
    key: 'grpc.leanUnaryClient',
    kind: onOff(),
    doc: "send the unary peer calls a write or a read waits on (Heartbeat, ShipSegment, ReportApplied, RequestVote, TimeoutNow) and the store client's unary calls (svc.store.v1 Propose, ProposeBatch, ReadIndex, Get) over the lean HTTP/2 client (transports/grpc/lean-unary.ts); off: over grpc-js's client, as every other peer call",
    fallback: true,
    env: 'SVC_GRPC_LEAN_UNARY_CLIENT',
    flags: [
      {
        flag: 'no-grpc-lean-unary-client',
        sets: false,
        doc: "send every peer call over grpc-js's client (a switch back should the lean client misbehave)",
      },
    ],
  },
  {
    key: 'grpc.heartbeatStream',
    kind: onOff(),
    doc: "send a leader's Heartbeats as messages on one open svc.peer.v1 HeartbeatStream call per member (transports/grpc/heartbeat-stream.ts; unary calls to a member that does not serve it); off: as unary Heartbeat calls",
    fallback: true,
    env: 'SVC_GRPC_HEARTBEAT_STREAM',
    flags: [
      {
        flag: 'no-grpc-heartbeat-stream',
        sets: false,
        doc: 'send Heartbeats as unary calls (a switch back should the stream misbehave; bench/read-timeline.ts --no-heartbeat-stream)',
      },
    ],
  },
  {
    key: 'grpc.leanUnaryServer',
    kind: onOff(),
    doc: "serve the unary peer and store calls (WalShipping's unary methods; svc.store.v1 Propose, ProposeBatch, ReadIndex, Get) on the HTTP/2 stream directly (transports/grpc/lean-serve.ts), with the same checks; off: every call through grpc-js's server",
    fallback: true,
    env: 'SVC_GRPC_LEAN_UNARY_SERVER',
    flags: [
      {
        flag: 'no-grpc-lean-unary-server',
        sets: false,
        doc: "serve every call through grpc-js's server (a switch back should the lean serving misbehave)",
      },
    ],
  },
  {
    key: 'grpc.leanConnectionServer',
    kind: onOff(),
    doc: "serve the unary calls of a client that marks its connection (this build's peers and store clients do) on the node's own HTTP/2 framing (transports/grpc/lean-connections.ts), with the same checks; off: on node:http2 streams as grpc.leanUnaryServer says. Needs grpc.leanUnaryServer",
    fallback: true,
    env: 'SVC_GRPC_LEAN_CONNECTION_SERVER',
    flags: [
      {
        flag: 'no-grpc-lean-connection-server',
        sets: false,
        doc: 'serve every unary call on node:http2 streams (a switch back should the lean connections misbehave)',
      },
    ],
  },
  {
    key: 'grpc.reportStream',
    kind: onOff(),
    doc: "send a follower's ReportApplied calls as messages on one open svc.peer.v1 ReportStream call to its leader (transports/grpc/report-stream.ts; unary calls to a leader that does not serve it); off: as unary ReportApplied calls",
    fallback: true,
    env: 'SVC_GRPC_REPORT_STREAM',
    flags: [
      {
        flag: 'no-grpc-report-stream',
        sets: false,
        doc: 'send ReportApplied as unary calls (a switch back should the stream misbehave)',
      },
    ],
  },
  {
    key: 'recording.enabled',
    kind: onOff(),
    doc: 'keep the flight recording in <dataDir>/recording/ (docs/operations.md, "Flight recorder")',
    fallback: true,
    flags: [{ flag: 'no-recording', sets: false, doc: 'do not keep the flight recording' }],
  },
  {
    key: 'recording.payloads',
    kind: oneOf(PAYLOAD_MODES),
    doc: "the store's values in the recording: `hashed` (keyed hashes) or `full` (whole: they are secrets)",
    fallback: 'hashed',
    flags: [
      {
        flag: 'record-payloads',
        sets: 'full',
        doc: "record the store's values whole, not as keyed hashes (they are secrets)",
      },
    ],
  },
  {
    key: 'recording.effectTexts',
    kind: onOff(),
    doc: "write a text of each step's effects beside its digest, shown next to the replay's own at a divergence (10-15% of the recorder's CPU on a leader: bench/recorder-step.ts)",
    fallback: true,
    flags: [
      {
        flag: 'no-recording-effect-texts',
        sets: false,
        doc: 'record effect digests only (a divergence then shows the replay effects and the recorded digest)',
      },
    ],
  },
  ...limitSection(
    'recording.limits',
    DEFAULT_RECORDING_LIMITS,
    { file: 'transports/node/recorder.ts', iface: 'RecordingLimits' },
    1,
    {
      recordingBytesMax: {
        kind: wholeNumber(1, RECORDING_BYTES_MAX),
        flags: [{ flag: 'recording-bytes-max', metavar: 'N' }],
      },
    },
  ),
  ...limitSection(
    'engineLimits',
    { ...DEFAULT_LIMITS, ...NODE_ENGINE_DEFAULTS },
    { file: 'engine/types.ts', iface: 'EngineLimits' },
    0,
    {
      electionTimeoutTicks: {
        kind: wholeNumber(1, TICKS_MAX),
        flags: [{ flag: 'election-timeout-ticks', metavar: 'N' }],
      },
      heartbeatIntervalTicks: {
        kind: wholeNumber(1, TICKS_MAX),
        flags: [{ flag: 'heartbeat-interval-ticks', metavar: 'N' }],
      },
    },
  ),
  ...limitSection('grpcLimits', DEFAULT_GRPC_LIMITS, { file: 'transports/grpc/limits.ts', iface: 'GrpcLimits' }, 1),
  ...limitSection(
    'storageLimits',
    { ...DEFAULT_STORAGE_LIMITS },
    { file: 'transports/storage/limits.ts', iface: 'StorageLimits' },
    1,
    { snapshotStageLoopSharePercent: { kind: wholeNumber(1, 100) } },
  ),
  ...limitSection('storeLimits', DEFAULT_STORE_LIMITS, { file: 'store/limits.ts', iface: 'StoreLimits' }, 1, {
    writeTimeoutMs: { kind: wholeNumber(1, TIMEOUT_MS_MAX), flags: [{ flag: 'write-timeout-ms', metavar: 'N' }] },
    readTimeoutMs: { kind: wholeNumber(1, TIMEOUT_MS_MAX), flags: [{ flag: 'read-timeout-ms', metavar: 'N' }] },
    snapshotLayerRowsPercentMax: { kind: wholeNumber(100, LIMIT_INTEGER_MAX) },
  }),
  ...limitSection('nodeLimits', DEFAULT_NODE_LIMITS, { file: 'transports/node/limits.ts', iface: 'NodeLimits' }, 1),
  ...API_SETTINGS.slice(0, 1),
  {
    key: 'api.localRedis',
    kind: onOff(),
    doc: 'without a Redis URL, start a redis-server of this node alone (false: none; queue endpoints answer 503)',
    fallback: true,
    flags: [{ flag: 'api-no-local-redis', sets: false, doc: 'never start a node-local redis-server' }],
  },
  ...API_SETTINGS.slice(1),
];

/** API_SECTION: a config file's `api` object (even `{}`) or --api turns the developer API on. */
export const API_SECTION = 'api';
export const API_ON_FLAG = 'api';

/** SECTION_FLAGS set any limit of a section by name. */
export const SECTION_FLAGS: readonly SectionFlag[] = [
  { flag: 'engine-limit', section: 'engineLimits' },
  { flag: 'grpc-limit', section: 'grpcLimits' },
  { flag: 'storage-limit', section: 'storageLimits' },
  { flag: 'store-limit', section: 'storeLimits' },
  { flag: 'node-limit', section: 'nodeLimits' },
];

/** COMMAND_FLAGS are flags of the command itself, not settings. */
export const COMMAND_FLAGS = [
  { flag: 'config', metavar: 'FILE', doc: 'a config file: JSON, or YAML when it ends in .yaml/.yml' },
  { flag: API_ON_FLAG, doc: 'serve the developer HTTP API on the HTTP port (as an `api` section in the file does)' },
  { flag: 'print-config', doc: 'print the resolved, validated config and where each value came from, then exit' },
  { flag: 'help', doc: 'this text' },
] as const;

/**
 * OTHER_ENV are the SVC_* variables other programs read: declared so that `svc node`, which refuses an unknown
 * SVC_* variable (a misspelt one would otherwise be ignored silently), lets them pass.
 */
export const OTHER_ENV: ReadonlyArray<{ env: string; doc: string }> = [
  ...API_ENV_SETTINGS.filter((s) => s.key === undefined).map((s) => ({ env: s.env, doc: s.doc })),
  {
    env: 'SVC_API_KEY',
    doc: "the SDK's and scripts/load-credentials.ts's API key (a client's; `svc node` ignores it)",
  },
  { env: 'SVC_URL', doc: "the SDK's server URL (a client's; `svc node` ignores it)" },
  { env: 'SVC_TEST_LOG_LEVEL', doc: "tests: the nodes' log level (test/node/harness.ts)" },
  { env: 'SVC_TEST_KEEP_RECORDING', doc: 'tests: keep the recordings of test/node/recording-replay.test.ts' },
  { env: 'SVC_CHECKPOINT_SEEDS', doc: 'tests: how many sim seeds test/engine/checkpoint.test.ts rebuilds engines on' },
  { env: 'SVC_FC_SEED', doc: "tests: fast-check's seed (test/fast-check-seed.ts)" },
  { env: 'SVC_PROPERTY_RUNS', doc: 'tests: runs of the random-schedule property' },
  { env: 'SVC_PROPERTY_OPS', doc: 'tests: operations per random schedule' },
  { env: 'SVC_SIM_SWEEP_SEEDS', doc: "tests: seeds in the regression test's random sweep" },
  { env: 'SVC_SIM_SWEEP_FIRST', doc: "tests: the sweep's first seed" },
  { env: 'SVC_IMAGE_TEST', doc: 'tests: 1 runs the image test (`make image-test`)' },
  { env: 'SVC_SENTINEL_TEST', doc: 'tests: 1 runs the Redis Sentinel failover test (`make sentinel-test`)' },
  { env: 'SVC_UPGRADE_TEST', doc: 'tests: 1 runs the rolling-upgrade test (`make upgrade-test`)' },
  { env: 'SVC_JEPSEN_RUNNER', doc: "tests: marks test/jepsen's runner process" },
  {
    env: 'SVC_BENCH_H2_UNARY_CLIENT',
    doc: "benches: 0 puts the bench's own Store client pools' unary calls on node:http2's client, 1 on transports/h2's (the default; bench/cluster/svc-cluster.ts)",
  },
];

/** SETTINGS_BY_KEY, SETTINGS_BY_ENV: lookups over NODE_SETTINGS. */
export const SETTINGS_BY_KEY: ReadonlyMap<string, NodeSetting> = new Map(NODE_SETTINGS.map((s) => [s.key, s]));
export const SETTINGS_BY_ENV: ReadonlyMap<string, NodeSetting> = new Map(
  NODE_SETTINGS.filter((s) => s.env !== undefined).map((s) => [s.env!, s]),
);
/** KNOWN_ENV: every variable the schema declares (the node's, the API's and OTHER_ENV). */
export const KNOWN_ENV: ReadonlySet<string> = new Set([...SETTINGS_BY_ENV.keys(), ...OTHER_ENV.map((o) => o.env)]);

/** SVC_ENV_PREFIX: the prefix of the variables that must be declared. */
export const SVC_ENV_PREFIX = 'SVC_';

type Tree = Map<string, Tree | NodeSetting>;

function settingTree(): Tree {
  const root: Tree = new Map();
  for (const setting of NODE_SETTINGS) {
    const parts = setting.key.split('.');
    let node = root;
    for (const part of parts.slice(0, -1)) {
      let next = node.get(part);
      if (next === undefined) {
        next = new Map();
        node.set(part, next);
      }
      if (!(next instanceof Map)) throw new Error(`${setting.key}: ${part} is both a setting and a section`);
      node = next;
    }
    node.set(parts.at(-1)!, setting);
  }
  return root;
}

function treeSchema(tree: Tree): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, child] of tree) {
    shape[name] = (child instanceof Map ? treeSchema(child) : child.kind.schema).optional();
  }
  return z.strictObject(shape, { error: 'must be an object' });
}

/** configFileSchema is a config file's shape: every key declared, nothing else (a strict object at every level), built once. */
let fileSchema: z.ZodType | undefined;
export function configFileSchema(): z.ZodType {
  fileSchema ??= treeSchema(settingTree());
  return fileSchema;
}

/** flagSpec: every flag a setting, a section or the command declares, for node:util parseArgs. */
export function flagSpec(): Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> {
  const spec: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {};
  for (const setting of NODE_SETTINGS) {
    for (const use of setting.flags ?? []) {
      spec[use.flag] =
        'sets' in use ? { type: 'boolean' } : use.repeat ? { type: 'string', multiple: true } : { type: 'string' };
    }
  }
  for (const { flag } of SECTION_FLAGS) spec[flag] = { type: 'string', multiple: true };
  for (const command of COMMAND_FLAGS)
    spec[command.flag] = 'metavar' in command ? { type: 'string' } : { type: 'boolean' };
  return spec;
}

/** defaultWords is a setting's default as the docs and --help say it. */
export function defaultWords(setting: NodeSetting): string {
  if (setting.defaultText !== undefined) return setting.defaultText;
  if (setting.fallback === undefined) return setting.required ? 'none: required' : 'none';
  return Array.isArray(setting.fallback) && setting.fallback.length === 0 ? 'none' : JSON.stringify(setting.fallback);
}
