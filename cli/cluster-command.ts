// `svc cluster` (and `make cluster`): a local cluster of three nodes on 127.0.0.1, in the
// foreground. It makes certificates on the first run, starts each node as a child process, writes
// cluster.json, says when every /health answers 200, and on Ctrl-C (SIGINT) or SIGTERM stops the
// children: SIGTERM, then SIGKILL after CHILD_STOP_GRACE_MS. Layout: cluster-plan.ts.
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { LogLevel } from './node/config.js';
import { adminTarget } from './admin-target.js';
import { CLUSTER_FILE_NAME, readClusterFile, writeClusterFile, type ClusterFile } from './cluster-file.js';
import { clusterFetch, type ClusterFetch } from './cluster-fetch.js';
import {
  type ClusterOptions,
  busyPorts,
  ensureCertificates,
  ensureSecretKey,
  nodeConfigFor,
  planCluster,
  writeNodeConfig,
} from './cluster-plan.js';
import { DEFAULT_LIMITS } from '../engine/limits.js';
import { intFlag, limitOverrides, listFlag, parseFlags, stringFlag } from './flags.js';
import type { Io } from './io.js';
import {
  ADMIN_KEY_NAME_DEFAULT,
  CHILD_STOP_GRACE_MS,
  CLUSTER_DIR_DEFAULT,
  CLUSTER_HEALTH_POLL_MS,
  CLUSTER_HEALTHY_TIMEOUT_MS,
  CLUSTER_HTTP_TIMEOUT_MS,
  CLUSTER_NODE_COUNT_DEFAULT,
  CLUSTER_NODE_COUNT_MAX,
  CLUSTER_TICK_MS_DEFAULT,
  EXIT_FAILED,
  EXIT_OK,
} from './limits.js';
import { SupervisedNode, type ChildExit } from './supervisor.js';
import { CLUSTER_USAGE, UsageError } from './usage.js';

/** KILL_WAIT_MS bounds the wait for a SIGKILLed child to be reaped. */
const KILL_WAIT_MS = 5_000;
const TICK_MS_MAX = 10_000;
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** ClusterCommandOptions are `svc cluster`'s flags, checked: the plan's options and what the nodes are started with. */
interface ClusterCommandOptions extends ClusterOptions {
  engineLimits: Record<string, number>;
  nodeOptions: string[];
  /** recording false starts the nodes without their flight recorder (--no-recording). */
  recording: boolean;
  /** recordingEffectTexts false: the recorders write effect digests only (--no-recording-effect-texts). */
  recordingEffectTexts: boolean;
}

/** parseClusterOptions reads and checks the flags; null when --help was asked (and answered). */
function parseClusterOptions(args: string[], io: Io): ClusterCommandOptions | null {
  const { values } = parseFlags(args, {
    dir: { type: 'string' },
    nodes: { type: 'string' },
    'tick-ms': { type: 'string' },
    'base-port': { type: 'string' },
    insecure: { type: 'boolean' },
    api: { type: 'boolean' },
    'no-api': { type: 'boolean' },
    'log-level': { type: 'string' },
    'node-option': { type: 'string', multiple: true },
    'engine-limit': { type: 'string', multiple: true },
    'no-recording': { type: 'boolean' },
    'no-recording-effect-texts': { type: 'boolean' },
    help: { type: 'boolean' },
  });
  if (values.help === true) {
    io.out.write(`${CLUSTER_USAGE}\n`);
    return null;
  }
  if (values.api === true && values['no-api'] === true)
    throw new UsageError('--api and --no-api contradict each other');
  const logLevel = (stringFlag(values, 'log-level') ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}`);
  const engineLimits = limitOverrides(values, 'engine-limit');
  for (const name of Object.keys(engineLimits)) {
    if (!(name in DEFAULT_LIMITS))
      throw new UsageError(
        `--engine-limit: unknown limit ${JSON.stringify(name)} (known: ${Object.keys(DEFAULT_LIMITS).join(', ')})`,
      );
  }
  const nodeOptions = listFlag(values, 'node-option');
  for (const option of nodeOptions) {
    if (!/^--[a-z][a-z0-9-]*(=.*)?$/.test(option))
      throw new UsageError(
        `--node-option takes one node flag such as --cpu-prof or --max-old-space-size=512, got ${JSON.stringify(option)}`,
      );
  }
  return {
    dir: resolve(stringFlag(values, 'dir') ?? CLUSTER_DIR_DEFAULT),
    nodeCount: intFlag(values, 'nodes', 1, CLUSTER_NODE_COUNT_MAX) ?? CLUSTER_NODE_COUNT_DEFAULT,
    tickMs: intFlag(values, 'tick-ms', 1, TICK_MS_MAX) ?? CLUSTER_TICK_MS_DEFAULT,
    basePort: intFlag(values, 'base-port', 1024, 65_535) ?? null,
    insecure: values.insecure === true,
    api: values['no-api'] !== true,
    logLevel,
    engineLimits,
    nodeOptions,
    recording: values['no-recording'] !== true,
    recordingEffectTexts: values['no-recording-effect-texts'] !== true,
  };
}

export async function runClusterCommand(args: string[], io: Io): Promise<number> {
  const options = parseClusterOptions(args, io);
  if (options === null) return EXIT_OK;
  const { dir } = options;
  const say = (line: string): void => {
    io.out.write(`svc cluster: ${line}\n`);
  };

  await mkdir(dir, { recursive: true, mode: 0o700 });
  const filePath = join(dir, CLUSTER_FILE_NAME);
  const existing = existsSync(filePath) ? await readClusterFile(filePath) : null;
  if (existing && options.basePort !== null) say(`--base-port ignored: ${filePath} already fixes the ports`);
  const cluster = await planCluster(options, existing);
  const busy = await busyPorts(cluster);
  if (busy.length > 0) {
    io.err.write(
      `svc cluster: ports already in use: ${busy.join(', ')} (is another \`svc cluster\` running on ${dir}?)\n`,
    );
    return EXIT_FAILED;
  }
  const made = await ensureCertificates(cluster);
  if (made.length > 0) say(`made certificates (${made.join(', ')}) in ${join(dir, 'certs')}`);

  const stopSignal = signalLatch();
  const redis = cluster.api ? await startSharedRedis(cluster, say) : null;
  const children = new Map<string, SupervisedNode>();
  try {
    await startNodes(cluster, options, redis, children, say);
    await writeClusterFile(filePath, cluster);
    const started = await awaitHealthy(cluster, filePath, children, stopSignal, io, say);
    if (started !== null) return started;
    return await runUntilStopped(cluster, children, stopSignal, io, say);
  } finally {
    await stopChildren(children, stopSignal, say);
    for (const member of cluster.members) member.pid = 0;
    cluster.updatedAt = new Date().toISOString();
    await writeClusterFile(filePath, cluster).catch(() => undefined);
    await redis?.stop();
    stopSignal.dispose();
  }
}

/** startNodes writes each member's config and starts it as a supervised child process. */
async function startNodes(
  cluster: ClusterFile,
  options: ClusterCommandOptions,
  redis: { url: string } | null,
  children: Map<string, SupervisedNode>,
  say: (line: string) => void,
): Promise<void> {
  const { logLevel, engineLimits } = options;
  const api = cluster.api
    ? { secretKeyFile: await ensureSecretKey(cluster), ...(redis ? { redisUrl: redis.url } : {}) }
    : null;
  for (const member of cluster.members) {
    await mkdir(member.dataDir, { recursive: true });
    await writeNodeConfig(member, {
      ...nodeConfigFor(cluster, member, { logLevel, api }),
      ...(Object.keys(engineLimits).length > 0 ? { engineLimits } : {}),
      ...(!options.recording
        ? { recording: { enabled: false } }
        : options.recordingEffectTexts
          ? {}
          : { recording: { effectTexts: false } }),
    });
  }
  for (const member of cluster.members) {
    const child = SupervisedNode.start(member.name, member.configFile, member.logFile, options.nodeOptions);
    children.set(member.name, child);
    member.pid = child.pid;
    say(
      `started ${member.name} (pid ${child.pid}): gRPC ${member.grpcAddr}, HTTP ${member.httpAddr}, metrics ${member.metricsAddr ?? '-'}, log ${member.logFile}`,
    );
  }
  cluster.updatedAt = new Date().toISOString();
}

/**
 * awaitHealthy waits for every /health to answer 200, then makes the admin key on a first run and writes
 * cluster.json; it answers the exit code when the cluster did not come up (a child exited, a signal, the
 * timeout), null when it did.
 */
async function awaitHealthy(
  cluster: ClusterFile,
  filePath: string,
  children: Map<string, SupervisedNode>,
  stopSignal: SignalLatch,
  io: Io,
  say: (line: string) => void,
): Promise<number | null> {
  const firstExit = Promise.race([...children.values()].map((c) => c.exited));
  const http = await clusterFetch(cluster);
  const healthy = await Promise.race([
    waitHealthy(http, cluster, CLUSTER_HEALTHY_TIMEOUT_MS, () => stopSignal.fired !== null),
    firstExit.then((exit) => ({ exit })),
    stopSignal.promise.then((signal) => ({ signal })),
  ]).finally(() => http.close());
  if ('exit' in healthy) {
    io.err.write(
      `svc cluster: ${describeExit(healthy.exit)} before the cluster was healthy; see ${cluster.members.find((m) => m.name === healthy.exit.name)?.logFile}\n`,
    );
    return EXIT_FAILED;
  }
  if ('signal' in healthy) {
    say(`${healthy.signal} before the cluster was healthy`);
    return EXIT_OK;
  }
  if (!healthy.ok) {
    io.err.write(
      `svc cluster: not every /health answered 200 within ${CLUSTER_HEALTHY_TIMEOUT_MS} ms (${healthy.problem}); see the logs under ${cluster.dir}\n`,
    );
    return EXIT_FAILED;
  }
  for (const member of cluster.members) member.id = healthy.ids.get(member.name) ?? member.id;
  if (cluster.api && cluster.adminKey === undefined) {
    try {
      const admin = await createClusterAdminKey(filePath);
      cluster.adminKey = admin.key;
      say(`admin API key (kept in ${filePath}): ${admin.key}`);
    } catch (err) {
      io.err.write(`svc cluster: could not create the admin API key: ${(err as Error).message}\n`);
    }
  }
  cluster.updatedAt = new Date().toISOString();
  await writeClusterFile(filePath, cluster);
  say(
    `all ${cluster.members.length} nodes answer /health 200 (${cluster.members.map((m) => `${m.name} ${m.httpAddr}`).join(', ')}); ` +
      `wrote ${filePath}${cluster.tls.mode === 'mtls' ? ` (HTTPS: curl --cacert ${cluster.tls.caFile})` : ''}; Ctrl-C stops the cluster`,
  );
  return null;
}

/** runUntilStopped waits for a signal (exit 0) or for every child to be gone (exit 1). */
async function runUntilStopped(
  cluster: ClusterFile,
  children: Map<string, SupervisedNode>,
  stopSignal: SignalLatch,
  io: Io,
  say: (line: string) => void,
): Promise<number> {
  const watchers = [...children.values()].map((child) =>
    child.exited.then((exit) => {
      if (stopSignal.fired === null)
        io.err.write(
          `svc cluster: ${describeExit(exit)}; see ${cluster.members.find((m) => m.name === exit.name)?.logFile}\n`,
        );
      return exit;
    }),
  );
  const outcome = await Promise.race([
    stopSignal.promise.then((signal) => ({ signal })),
    Promise.all(watchers).then(() => ({ signal: null })),
  ]);
  if (outcome.signal === null) {
    io.err.write('svc cluster: every node has exited\n');
    return EXIT_FAILED;
  }
  say(`${outcome.signal}: stopping the nodes`);
  return EXIT_OK;
}

/** stopChildren sends SIGTERM to each running child, SIGKILL after the grace; a second signal kills at once. */
async function stopChildren(
  children: Map<string, SupervisedNode>,
  stopSignal: SignalLatch,
  say: (line: string) => void,
): Promise<void> {
  const running = [...children.values()].filter((c) => c.running);
  if (running.length === 0) return;
  const hurry = stopSignal.second.then(() => {
    say('second signal: killing the nodes');
    for (const child of running) child.signal('SIGKILL');
  });
  void hurry;
  const exits = await Promise.all(running.map((child) => child.stop(CHILD_STOP_GRACE_MS, KILL_WAIT_MS)));
  const described = exits.map((exit, i) =>
    exit ? describeExit(exit) : `${running[i]!.name} did not exit after SIGKILL`,
  );
  say(`stopped: ${described.join('; ')}`);
}

function describeExit(exit: ChildExit): string {
  return exit.signal !== null
    ? `${exit.name} was ended by ${exit.signal}`
    : `${exit.name} exited with code ${exit.code}`;
}

interface HealthOutcome {
  ok: boolean;
  problem: string;
  ids: Map<string, number>;
}

/** waitHealthy polls every member's /health until all answer 200, then reads their ids from /status. */
async function waitHealthy(
  http: ClusterFetch,
  cluster: ClusterFile,
  timeoutMs: number,
  cancelled: () => boolean,
): Promise<HealthOutcome> {
  const deadline = Date.now() + timeoutMs;
  let problem = 'no answer yet';
  while (Date.now() < deadline && !cancelled()) {
    const answers = await Promise.all(
      cluster.members.map(async (m) => ({ m, status: await httpStatus(http, `${m.httpAddr}/health`) })),
    );
    const sick = answers.filter((a) => a.status !== 200);
    if (sick.length === 0) {
      const ids = new Map<string, number>();
      for (const m of cluster.members) {
        const doc = (await httpJson(http, `${m.httpAddr}/status`)) as { id?: unknown } | null;
        if (doc && typeof doc.id === 'number') ids.set(m.name, doc.id);
      }
      return { ok: true, problem: '', ids };
    }
    problem = sick.map((a) => `${a.m.name} ${a.status === 0 ? 'no answer' : a.status}`).join(', ');
    await new Promise((r) => setTimeout(r, CLUSTER_HEALTH_POLL_MS));
  }
  return { ok: false, problem, ids: new Map() };
}

async function httpStatus(http: ClusterFetch, url: string): Promise<number> {
  try {
    const response = await http.fetch(url, { signal: AbortSignal.timeout(CLUSTER_HTTP_TIMEOUT_MS) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

async function httpJson(http: ClusterFetch, url: string): Promise<unknown> {
  try {
    const response = await http.fetch(url, { signal: AbortSignal.timeout(CLUSTER_HTTP_TIMEOUT_MS) });
    return response.ok ? await response.json() : null;
  } catch {
    return null;
  }
}

async function createClusterAdminKey(filePath: string): Promise<{ key: string }> {
  const { createAdminKey } = await import('./keys-command.js');
  const target = await adminTarget({ 'cluster-file': filePath });
  return createAdminKey(target, ADMIN_KEY_NAME_DEFAULT);
}

/** startSharedRedis gives every node one Redis (rate limits and queues are cluster-wide): REDIS_URL, else a local redis-server. */
async function startSharedRedis(
  cluster: ClusterFile,
  say: (line: string) => void,
): Promise<{ url: string; stop(): Promise<void> } | null> {
  if (process.env.REDIS_URL) {
    say(`the nodes share REDIS_URL ${process.env.REDIS_URL.replace(/\/\/[^@/]*@/, '//***@')}`);
    return null;
  }
  const { redactRedisUrl, redisServerAvailable, startLocalRedis } = await import('../api/redis/local-redis.js');
  if (!redisServerAvailable()) {
    say('no REDIS_URL and no redis-server on the PATH: queue endpoints will answer 503');
    return null;
  }
  const redis = await startLocalRedis(join(cluster.dir, 'redis'));
  // Loopback only, with a password generated for this run of the cluster (in the nodes' 0600 config files).
  say(`the nodes share a local redis-server at ${redactRedisUrl(redis.url)} (password required)`);
  return redis;
}

interface SignalLatch {
  promise: Promise<NodeJS.Signals>;
  /** second resolves on the signal after the first. */
  second: Promise<void>;
  fired: NodeJS.Signals | null;
  dispose(): void;
}

function signalLatch(): SignalLatch {
  let first: (signal: NodeJS.Signals) => void = () => undefined;
  let again: () => void = () => undefined;
  const latch: SignalLatch = {
    promise: new Promise((resolve) => {
      first = resolve;
    }),
    second: new Promise((resolve) => {
      again = resolve;
    }),
    fired: null,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (latch.fired === null) {
      latch.fired = signal;
      first(signal);
    } else {
      again();
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return latch;
}
