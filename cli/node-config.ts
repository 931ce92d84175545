// `svc node`'s configuration: a NodeConfig (cli/node/config.ts) read from a JSON or YAML
// file, then overridden flag by flag. Paths in a file are relative to the file; paths in flags are
// relative to the working directory. Problems are UsageErrors (exit code 2); the node's own
// resolveNodeConfig then checks the whole.
import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { JSON_SCHEMA, load as loadYaml } from 'js-yaml';
import { DEFAULT_LIMITS } from '../engine/limits.js';
import { DEFAULT_GRPC_LIMITS } from '../transports/grpc/limits.js';
import type { BootstrapMember, LogLevel, NodeApiConfig, NodeConfig } from './node/config.js';
import { DEFAULT_NODE_LIMITS } from '../transports/node/limits.js';
import { DEFAULT_STORAGE_LIMITS } from '../transports/storage/limits.js';
import { DEFAULT_STORE_LIMITS } from '../store/limits.js';
import { intFlag, limitOverrides, listFlag, stringFlag, type FlagSpec, type FlagValues } from './flags.js';
import { CONFIG_FILE_BYTES_MAX } from './limits.js';
import { UsageError } from './usage.js';

export const NODE_FLAGS: FlagSpec = {
  config: { type: 'string' },
  name: { type: 'string' },
  'data-dir': { type: 'string' },
  'grpc-listen': { type: 'string' },
  'grpc-advertise': { type: 'string' },
  'http-listen': { type: 'string' },
  'http-advertise': { type: 'string' },
  'http-tls-cert': { type: 'string' },
  'http-tls-key': { type: 'string' },
  'http-tls-ca': { type: 'string' },
  'http-insecure': { type: 'boolean' },
  'metrics-listen': { type: 'string' },
  founder: { type: 'string', multiple: true },
  seed: { type: 'string', multiple: true },
  'cluster-id': { type: 'string' },
  'tls-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-server-name': { type: 'string' },
  insecure: { type: 'boolean' },
  'tick-ms': { type: 'string' },
  'election-timeout-ticks': { type: 'string' },
  'heartbeat-interval-ticks': { type: 'string' },
  'write-timeout-ms': { type: 'string' },
  'read-timeout-ms': { type: 'string' },
  'engine-limit': { type: 'string', multiple: true },
  'grpc-limit': { type: 'string', multiple: true },
  'storage-limit': { type: 'string', multiple: true },
  'store-limit': { type: 'string', multiple: true },
  'node-limit': { type: 'string', multiple: true },
  'log-level': { type: 'string' },
  api: { type: 'boolean' },
  'api-redis-url': { type: 'string' },
  'api-no-local-redis': { type: 'boolean' },
  'api-secret-key-file': { type: 'string' },
  'api-rate-limit': { type: 'string' },
  'api-no-workers': { type: 'boolean' },
  'no-recording': { type: 'boolean' },
  'record-payloads': { type: 'boolean' },
  'recording-bytes-max': { type: 'string' },
  'print-config': { type: 'boolean' },
  help: { type: 'boolean' },
};

/** TICK_MS_MAX and TIMEOUT_MS_MAX bound the timing flags (a minute per tick is already absurd). */
const TICK_MS_MAX = 60_000;
const TICKS_MAX = 1_000_000;
const TIMEOUT_MS_MAX = 3_600_000;
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** LIMIT_SECTIONS maps each limit flag to its NodeConfig field and the names it knows. */
const LIMIT_SECTIONS = {
  'engine-limit': { field: 'engineLimits', names: Object.keys(DEFAULT_LIMITS) },
  'grpc-limit': { field: 'grpcLimits', names: Object.keys(DEFAULT_GRPC_LIMITS) },
  'storage-limit': { field: 'storageLimits', names: Object.keys(DEFAULT_STORAGE_LIMITS) },
  'store-limit': { field: 'storeLimits', names: Object.keys(DEFAULT_STORE_LIMITS) },
  'node-limit': { field: 'nodeLimits', names: Object.keys(DEFAULT_NODE_LIMITS) },
} as const;

/** NodeConfigWithApi is the node's config as the CLI builds it (the api section included). */
export type NodeConfigWithApi = NodeConfig;

/** loadConfigFile reads a NodeConfig-shaped object from JSON or YAML, resolving its paths against the file. */
export async function loadConfigFile(path: string): Promise<Partial<NodeConfigWithApi>> {
  let text: string;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new Error('not a regular file');
    if (info.size > CONFIG_FILE_BYTES_MAX) throw new Error(`larger than ${CONFIG_FILE_BYTES_MAX} bytes`);
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = /\.ya?ml$/i.test(path) ? loadYaml(text, { schema: JSON_SCHEMA }) : JSON.parse(text);
  } catch (err) {
    throw new UsageError(
      `config file ${path} is not valid ${/\.ya?ml$/i.test(path) ? 'YAML' : 'JSON'}: ${firstLine((err as Error).message)}`,
    );
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError(`config file ${path} must hold an object of NodeConfig fields`);
  const config = parsed as Partial<NodeConfigWithApi> & Record<string, unknown>;
  for (const key of ['logDestination', 'engineCompat'] as const) {
    if (key in config) throw new UsageError(`config file ${path}: ${key} cannot be set from a file`);
  }
  const base = dirname(resolve(path));
  const within = (value: unknown): unknown =>
    typeof value === 'string' && value !== '' && !isAbsolute(value) ? resolve(base, value) : value;
  if (config.dataDir !== undefined) config.dataDir = within(config.dataDir) as string;
  if (config.tls && typeof config.tls === 'object' && config.tls.mode === 'mtls') {
    config.tls = {
      ...config.tls,
      caFile: within(config.tls.caFile) as string,
      certFile: within(config.tls.certFile) as string,
      keyFile: within(config.tls.keyFile) as string,
    };
  }
  if (config.httpTls && typeof config.httpTls === 'object' && config.httpTls.mode === 'https') {
    const httpTls = config.httpTls;
    config.httpTls = {
      ...httpTls,
      certFile: within(httpTls.certFile) as string,
      keyFile: within(httpTls.keyFile) as string,
      ...(httpTls.caFile === undefined ? {} : { caFile: within(httpTls.caFile) as string }),
    };
  }
  const api = config.api as Record<string, unknown> | undefined;
  if (api && typeof api === 'object') {
    for (const key of ['secretKeyFile', 'workspaceRoot']) if (key in api) api[key] = within(api[key]);
  }
  return config;
}

/** parseFounder reads NAME,GRPC_ADDR,HTTP_BASE. */
export function parseFounder(text: string): BootstrapMember {
  const parts = text.split(',');
  if (parts.length !== 3 || parts.some((p) => p.trim() === '')) {
    throw new UsageError(
      `--founder takes NAME,GRPC_HOST:PORT,HTTP_URL (e.g. n1,127.0.0.1:7001,http://127.0.0.1:8001), got ${JSON.stringify(text)}`,
    );
  }
  const [name, grpcAddr, httpAddr] = parts.map((p) => p.trim()) as [string, string, string];
  return { name, grpcAddr, httpAddr };
}

/**
 * nodeConfigFromFlags merges the config file (when --config names one) with the flags. It checks
 * flag syntax and that TLS is either complete or --insecure; the node checks the rest.
 */
export async function nodeConfigFromFlags(values: FlagValues): Promise<NodeConfigWithApi> {
  const configPath = stringFlag(values, 'config');
  const config: Partial<NodeConfigWithApi> = configPath === undefined ? {} : await loadConfigFile(configPath);
  const fromCwd = (value: string): string => resolve(value);

  const name = stringFlag(values, 'name');
  if (name !== undefined) config.name = name;
  const dataDir = stringFlag(values, 'data-dir');
  if (dataDir !== undefined) config.dataDir = fromCwd(dataDir);
  for (const [flag, field] of [
    ['grpc-listen', 'grpcListen'],
    ['grpc-advertise', 'grpcAdvertise'],
    ['http-listen', 'httpListen'],
    ['http-advertise', 'httpAdvertise'],
    ['metrics-listen', 'metricsListen'],
  ] as const) {
    const value = stringFlag(values, flag);
    if (value !== undefined) config[field] = value;
  }
  const founders = listFlag(values, 'founder');
  if (founders.length > 0) config.bootstrap = founders.map(parseFounder);
  const seeds = listFlag(values, 'seed');
  if (seeds.length > 0) config.seeds = seeds;
  const clusterId = stringFlag(values, 'cluster-id');
  if (clusterId !== undefined) config.clusterId = clusterId;

  const tlsFiles = {
    ca: stringFlag(values, 'tls-ca'),
    cert: stringFlag(values, 'tls-cert'),
    key: stringFlag(values, 'tls-key'),
  };
  const anyTlsFile = Object.values(tlsFiles).some((v) => v !== undefined);
  const serverName = stringFlag(values, 'tls-server-name');
  if (values.insecure === true) {
    if (anyTlsFile || serverName !== undefined)
      throw new UsageError('--insecure cannot be combined with --tls-* flags');
    config.tls = { mode: 'insecure' };
  } else if (anyTlsFile) {
    const missing = Object.entries(tlsFiles)
      .filter(([, v]) => v === undefined)
      .map(([k]) => `--tls-${k}`);
    if (missing.length > 0)
      throw new UsageError(`mutual TLS needs --tls-ca, --tls-cert and --tls-key (missing ${missing.join(', ')})`);
    config.tls = {
      mode: 'mtls',
      caFile: fromCwd(tlsFiles.ca!),
      certFile: fromCwd(tlsFiles.cert!),
      keyFile: fromCwd(tlsFiles.key!),
    };
  }
  if (serverName !== undefined) {
    if (config.tls?.mode !== 'mtls')
      throw new UsageError(
        '--tls-server-name needs mutual TLS (--tls-ca, --tls-cert, --tls-key or a config file tls section)',
      );
    config.tls = { ...config.tls, serverNameOverride: serverName };
  }

  applyHttpTlsFlags(config, values);

  const tickMs = intFlag(values, 'tick-ms', 1, TICK_MS_MAX);
  if (tickMs !== undefined) config.tickMs = tickMs;
  for (const [flag, section] of Object.entries(LIMIT_SECTIONS)) {
    const overrides = limitOverrides(values, flag);
    for (const limit of Object.keys(overrides)) {
      if (!(section.names as readonly string[]).includes(limit))
        throw new UsageError(`--${flag}: unknown limit ${JSON.stringify(limit)} (known: ${section.names.join(', ')})`);
    }
    if (Object.keys(overrides).length > 0)
      Object.assign(config, { [section.field]: { ...config[section.field], ...overrides } });
  }
  const electionTicks = intFlag(values, 'election-timeout-ticks', 1, TICKS_MAX);
  const heartbeatTicks = intFlag(values, 'heartbeat-interval-ticks', 1, TICKS_MAX);
  if (electionTicks !== undefined || heartbeatTicks !== undefined) {
    config.engineLimits = {
      ...config.engineLimits,
      ...(electionTicks === undefined ? {} : { electionTimeoutTicks: electionTicks }),
      ...(heartbeatTicks === undefined ? {} : { heartbeatIntervalTicks: heartbeatTicks }),
    };
  }
  const writeTimeoutMs = intFlag(values, 'write-timeout-ms', 1, TIMEOUT_MS_MAX);
  const readTimeoutMs = intFlag(values, 'read-timeout-ms', 1, TIMEOUT_MS_MAX);
  if (writeTimeoutMs !== undefined || readTimeoutMs !== undefined) {
    config.storeLimits = {
      ...config.storeLimits,
      ...(writeTimeoutMs === undefined ? {} : { writeTimeoutMs }),
      ...(readTimeoutMs === undefined ? {} : { readTimeoutMs }),
    };
  }
  const logLevel = stringFlag(values, 'log-level');
  if (logLevel !== undefined) {
    if (!LOG_LEVELS.includes(logLevel as LogLevel))
      throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
    config.logLevel = logLevel as LogLevel;
  }
  applyApiFlags(config, values);
  applyRecordingFlags(config, values);

  for (const [field, flag] of [
    ['name', '--name'],
    ['dataDir', '--data-dir'],
    ['grpcListen', '--grpc-listen'],
    ['httpListen', '--http-listen'],
  ] as const) {
    if (config[field] === undefined) throw new UsageError(`${flag} is required (or ${field} in --config)`);
  }
  if (config.tls === undefined)
    throw new UsageError(
      'say how peers talk: --tls-ca/--tls-cert/--tls-key (mutual TLS) or --insecure (plaintext), or a tls section in --config',
    );
  if ((config.bootstrap ?? []).length === 0 && (config.seeds ?? []).length === 0) {
    throw new UsageError(
      'give --founder for each founding member (a new cluster) or --seed (joining one), or bootstrap/seeds in --config',
    );
  }
  return config as NodeConfigWithApi;
}

const RATE_LIMIT_MAX = 1_000_000;
/** RECORDING_BYTES_FLAG_MAX bounds --recording-bytes-max (1 TiB: a ring is meant to be far smaller). */
const RECORDING_BYTES_FLAG_MAX = 2 ** 40;

/** applyRecordingFlags: --no-recording, --record-payloads (values whole, not hashed), --recording-bytes-max N. */
function applyRecordingFlags(config: Partial<NodeConfigWithApi>, values: FlagValues): void {
  const bytesMax = intFlag(values, 'recording-bytes-max', 1, RECORDING_BYTES_FLAG_MAX);
  if (values['no-recording'] !== true && values['record-payloads'] !== true && bytesMax === undefined) return;
  const recording = { ...config.recording };
  if (values['no-recording'] === true) recording.enabled = false;
  if (values['record-payloads'] === true) recording.payloads = 'full';
  if (bytesMax !== undefined) recording.limits = { ...recording.limits, recordingBytesMax: bytesMax };
  config.recording = recording;
}

/** applyHttpTlsFlags: --http-tls-cert/--http-tls-key[/--http-tls-ca] (HTTPS with that pair) or --http-insecure. */
function applyHttpTlsFlags(config: Partial<NodeConfigWithApi>, values: FlagValues): void {
  const cert = stringFlag(values, 'http-tls-cert');
  const key = stringFlag(values, 'http-tls-key');
  const ca = stringFlag(values, 'http-tls-ca');
  if (values['http-insecure'] === true) {
    if (cert !== undefined || key !== undefined || ca !== undefined)
      throw new UsageError('--http-insecure cannot be combined with --http-tls-* flags');
    config.httpTls = { mode: 'insecure' };
    return;
  }
  if (cert === undefined && key === undefined && ca === undefined) return;
  if (cert === undefined || key === undefined)
    throw new UsageError('HTTPS with its own certificate needs --http-tls-cert and --http-tls-key');
  config.httpTls = {
    mode: 'https',
    certFile: resolve(cert),
    keyFile: resolve(key),
    ...(ca === undefined ? {} : { caFile: resolve(ca) }),
  };
}

function applyApiFlags(config: Partial<NodeConfigWithApi>, values: FlagValues): void {
  const redisUrl = stringFlag(values, 'api-redis-url');
  const secretKeyFile = stringFlag(values, 'api-secret-key-file');
  const rate = intFlag(values, 'api-rate-limit', 1, RATE_LIMIT_MAX);
  const anyApiFlag =
    redisUrl !== undefined ||
    secretKeyFile !== undefined ||
    rate !== undefined ||
    values['api-no-local-redis'] === true ||
    values['api-no-workers'] === true;
  if (values.api !== true && !anyApiFlag) return;
  const api: NodeApiConfig = { ...config.api };
  if (redisUrl !== undefined) api.redisUrl = redisUrl;
  if (secretKeyFile !== undefined) api.secretKeyFile = resolve(secretKeyFile);
  if (rate !== undefined) api.rateLimitPerSecond = rate;
  if (values['api-no-local-redis'] === true) api.localRedis = false;
  if (values['api-no-workers'] === true) {
    api.runWorker = false;
    api.albumWorker = false;
  }
  config.api = api;
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}
