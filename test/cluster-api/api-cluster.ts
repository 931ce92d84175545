// ApiCluster: three (or more) nodes in child processes over mutual TLS, each serving the developer API on its
// HTTP port over the replicated store, all sharing one real redis-server that the harness starts on a free
// loopback port. The HTTP ports serve HTTPS with the nodes' peer certificates (a node's default under mutual
// TLS); the harness's fetch and SDK clients trust the test CA (an undici Agent); /metrics is on metricsUrl. Temp dirs for data, certificates, the credential key file and an agent workspace; everything
// is removed by stop(). Tests talk to the nodes through the SDK (client()).
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent } from 'undici';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeConfig, NodeTls } from '../../cli/node/config.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';
import type { LeaseStats } from '../../api/rate-limit/leased-limiter.js';
import type { ReadIndexBatchStats } from '../../store/read-index-batch.js';
import { makePki, nodeConfig, planNodes, removeDir, tempDir, waitFor, type PlannedNode } from '../node/harness.js';
import { startTestRedis, testSecretKey, type TestRedis } from '../api/harness.js';
import { SvcClient, type SvcClientOptions } from '../../sdk/src/index.js';
import { NodeChildProcess } from '../node/child-harness.js';

/** CLUSTER_TICK_MS is the engine tick: elections in well under a second, without spurious ones on a busy machine. */
export const CLUSTER_TICK_MS = 50;
/** CLUSTER_RATE_LIMIT_PER_SECOND is each key's rate, high enough for the tests' own traffic. */
export const CLUSTER_RATE_LIMIT_PER_SECOND = 500;
/** READY_TIMEOUT_MS bounds waiting for every node's /ready after start, and for a new leader after a kill. */
export const READY_TIMEOUT_MS = 30_000;

const entry = fileURLToPath(new URL('./api-node-child.ts', import.meta.url));

/**
 * AlbumWorkerKnobs replace a node's own album worker by one the child harness starts with these settings
 * (api-node-child.ts): test knobs, so that a kill lands while shots are generating and a killed worker's
 * jobs come back in test time rather than after BullMQ's production lock.
 */
export interface AlbumWorkerKnobs {
  /** shotDelayMs holds back every shot in the generator before it is drawn. */
  shotDelayMs: number;
  /** concurrency is the worker's jobs at once (startAlbumWorker's). */
  concurrency?: number;
  /** lockDurationMs and stalledIntervalMs are BullMQ's, passed to startAlbumWorker. */
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** backoffMs is the first retry delay. */
  backoffMs?: number;
}

/** ApiChildOptions is the child's second argument (JSON). */
export interface ApiChildOptions {
  albumWorker?: AlbumWorkerKnobs;
}

/** AlbumActivity is what a node's held-back generator has done (the `album-activity` op). */
export interface AlbumActivity {
  shotsInFlight: number;
  shotsGenerated: number;
  anchorsGenerated: number;
  /** youngestShotAgeMs: how long ago the most recent shot still under way began (null: none is). */
  youngestShotAgeMs: number | null;
}

/** ApiNodeProcess is one node with the API in its own process (the shared child harness). */
export class ApiNodeProcess {
  private constructor(
    private readonly child: NodeChildProcess,
    readonly httpUrl: string,
    /** metricsUrl is the metrics listener's base (/metrics, /status), plaintext on loopback. */
    readonly metricsUrl: string,
  ) {}

  /** start forks the node; execArgv adds Node options (bench/api-cluster.ts passes --cpu-prof). */
  static async start(
    config: NodeConfig,
    execArgv: string[] = [],
    options: ApiChildOptions = {},
  ): Promise<ApiNodeProcess> {
    const child = await NodeChildProcess.fork(entry, config, { execArgv, args: [JSON.stringify(options)] });
    const scheme = config.httpTls?.mode === 'insecure' || config.tls.mode === 'insecure' ? 'http' : 'https';
    return new ApiNodeProcess(child, `${scheme}://${config.httpListen}`, `http://${config.metricsListen}`);
  }

  get name(): string {
    return this.child.name;
  }

  get config(): NodeConfig {
    return this.child.config;
  }

  get running(): boolean {
    return this.child.running;
  }

  get pid(): number {
    return this.child.pid;
  }

  get exited(): Promise<void> {
    return this.child.exited;
  }

  bootstrapAdmin(name: string): Promise<{ key: string; keyId: string; userId: string }> {
    return this.child.request({ op: 'bootstrap-admin', name }) as Promise<{
      key: string;
      keyId: string;
      userId: string;
    }>;
  }

  /** bare serves `payload` at GET /projects from a bare Express app in this process; it resolves with its URL. */
  bare(payload: unknown): Promise<string> {
    return this.child.request({ op: 'bare', payload }) as Promise<string>;
  }

  /** readIndexStats is this node's read-index calls and readers so far (ReplicatedStore.readIndexStats). */
  readIndexStats(): Promise<ReadIndexBatchStats> {
    return this.child.request({ op: 'read-index-stats' }) as Promise<ReadIndexBatchStats>;
  }

  /** rateLeaseStats is this node's rate-limit leases and the requests that waited for one so far (leased-limiter.ts). */
  rateLeaseStats(): Promise<LeaseStats> {
    return this.child.request({ op: 'rate-lease-stats' }) as Promise<LeaseStats>;
  }

  /** cpuUsage is this node process's CPU time so far (process.cpuUsage(), µs of user and system time). */
  cpuUsage(): Promise<NodeJS.CpuUsage> {
    return this.child.request({ op: 'cpu-usage' }) as Promise<NodeJS.CpuUsage>;
  }

  status(): Promise<NodeStatusDocument> {
    return this.child.request({ op: 'status' }) as Promise<NodeStatusDocument>;
  }

  /** localKeys lists the store keys under prefix that this node has applied (no read barrier). */
  localKeys(prefix: string): Promise<string[]> {
    return this.child.request({ op: 'entries', prefix }) as Promise<string[]>;
  }

  /** albumActivity is what this node's held-back album generator has done (only with AlbumWorkerKnobs). */
  albumActivity(): Promise<AlbumActivity> {
    return this.child.request({ op: 'album-activity' }) as Promise<AlbumActivity>;
  }

  /** kill9 ends the process with SIGKILL: no flush, no goodbye. */
  kill9(): Promise<void> {
    return this.child.kill9();
  }

  stop(): Promise<void> {
    return this.child.stop();
  }
}

export interface ApiClusterOptions {
  names?: string[];
  /** api overrides fields of every node's api section. */
  api?: NodeConfig['api'];
  /** tickMs overrides CLUSTER_TICK_MS. */
  tickMs?: number;
  /** execArgv adds Node options to every node process. */
  execArgv?: string[];
  /** albumWorker replaces each node's album worker by a held-back one (AlbumWorkerKnobs). */
  albumWorker?: AlbumWorkerKnobs;
  /** plaintextHttp serves the HTTP ports in plain HTTP (httpTls insecure) instead of HTTPS. */
  plaintextHttp?: boolean;
  /** nodeConfig adds fields to every node's config (grpcLimits, engineLimits, storeLimits…). */
  nodeConfig?: Partial<NodeConfig>;
  /** joiners get certificates and ports at start but are not founders: startJoiner starts one later. */
  joiners?: string[];
}

/** The agent script every project of the tests runs: prints its prompt, fails on `fail`, waits on `pause`. */
const agentScript = [
  '#!/bin/sh',
  'echo "prompt: $1"',
  'case "$1" in',
  '  fail*) exit 3 ;;',
  '  pause*) sleep 0.3 ;;',
  'esac',
  'echo done',
].join('\n');

export class ApiCluster {
  readonly nodes = new Map<string, ApiNodeProcess>();
  plans: PlannedNode[] = [];
  dir = '';
  workspace = '';
  redis: TestRedis | null = null;
  admin = { key: '', keyId: '', userId: '' };
  private startOptions: ApiClusterOptions = {};
  private pki: Awaited<ReturnType<typeof makePki>> | null = null;
  private apiSection: NodeConfig['api'] | undefined;
  /** ca trusts the test CA, which the nodes' HTTPS certificates chain to (null until start, or plaintext). */
  private ca: Agent | null = null;
  /** caPem is the test CA (PEM), for clients other than fetch (node:https); null when plaintext. */
  caPem: Buffer | null = null;

  /** fetch is globalThis.fetch trusting the test CA (Node's fetch is undici: it takes undici's Agent). */
  readonly fetch: typeof fetch = (input, init) =>
    fetch(input, this.ca ? ({ ...init, dispatcher: this.ca } as unknown as RequestInit) : init);

  async start(options: ApiClusterOptions = {}): Promise<void> {
    const names = options.names ?? ['a', 'b', 'c'];
    this.startOptions = options;
    this.dir = await tempDir('cluster-api');
    this.redis = await startTestRedis();
    const joiners = options.joiners ?? [];
    const pki = await makePki(this.dir, [...names, ...joiners]);
    this.pki = pki;
    if (options.plaintextHttp !== true) {
      this.caPem = readFileSync(join(pki.dir, 'ca.crt'));
      this.ca = new Agent({ connect: { ca: this.caPem } });
    }
    this.plans = await planNodes([...names, ...joiners]);
    const founders = this.plans.filter((plan) => names.includes(plan.name));
    const secretKeyFile = join(this.dir, 'secret.key');
    writeFileSync(secretKeyFile, testSecretKey.toString('hex'), { mode: 0o600 });
    // A run's own uid must be able to search every directory above its workspace (WORKSPACE_NOT_REACHABLE).
    chmodSync(this.dir, 0o711);
    this.workspace = join(this.dir, 'workspace');
    mkdirSync(this.workspace);
    writeFileSync(join(this.workspace, 'agent.sh'), `${agentScript}\n`);
    chmodSync(join(this.workspace, 'agent.sh'), 0o755);
    // The roster advertises each member's HTTP port as it is served (HTTPS unless plaintext), as `svc cluster`'s
    // plan does: members read each other's /status there (the status poll, the /cluster view).
    const bootstrap = founders.map((plan) =>
      options.plaintextHttp === true
        ? plan.member
        : { ...plan.member, httpAddr: plan.member.httpAddr.replace(/^http:\/\//, 'https://') },
    );
    const api = {
      redisUrl: this.redis.url,
      localRedis: false,
      secretKeyFile,
      rateLimitPerSecond: CLUSTER_RATE_LIMIT_PER_SECOND,
      ...options.api,
    };
    this.apiSection = api;
    const started = await Promise.allSettled(
      founders.map((plan) =>
        ApiNodeProcess.start(
          nodeConfig(
            plan,
            join(this.dir, plan.name),
            pki.tls(plan.name),
            { bootstrap },
            {
              ...options.nodeConfig,
              tickMs: options.tickMs ?? CLUSTER_TICK_MS,
              api,
              // HTTPS with the peer certificate: the node's default under mutual TLS (the harness's is plaintext).
              httpTls: options.plaintextHttp === true ? { mode: 'insecure' } : undefined,
            },
          ),
          options.execArgv,
          this.childOptions(),
        ),
      ),
    );
    for (const result of started) if (result.status === 'fulfilled') this.nodes.set(result.value.name, result.value);
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    await this.waitAllReady();
    this.admin = await this.node(names[0]!).bootstrapAdmin('cluster-admin');
  }

  /**
   * startJoiner starts a joiner named at start (options.joiners) on its own data directory, joining through the
   * `seeds` (members' names: any member, a follower too), and waits for its API to answer /health at all.
   */
  async startJoiner(name: string, seeds: string[]): Promise<ApiNodeProcess> {
    const plan = this.plans.find((p) => p.name === name);
    if (!plan || !this.pki) throw new Error(`${name} is not a joiner of this cluster`);
    const seedAddrs = seeds.map((seed) => this.node(seed).config.grpcListen);
    const options = this.startOptions;
    const node = await ApiNodeProcess.start(
      nodeConfig(
        plan,
        join(this.dir, plan.name),
        this.pki.tls(plan.name),
        { seeds: seedAddrs },
        {
          ...options.nodeConfig,
          tickMs: options.tickMs ?? CLUSTER_TICK_MS,
          api: this.apiSection,
          httpTls: options.plaintextHttp === true ? { mode: 'insecure' } : undefined,
        },
      ),
      options.execArgv,
      this.childOptions(),
    );
    this.nodes.set(name, node);
    return node;
  }

  /** adminTls is the admin certificate (what `svc members …` holds). */
  adminTls(): NodeTls {
    if (!this.pki) throw new Error('not started');
    return this.pki.adminTls();
  }

  /** restart starts a stopped or killed node again, on its data directory and ports, and waits for /ready. */
  async restart(name: string): Promise<ApiNodeProcess> {
    const old = this.node(name);
    if (old.running) throw new Error(`${name} is still running`);
    const node = await ApiNodeProcess.start(old.config, this.startOptions.execArgv, this.childOptions());
    this.nodes.set(name, node);
    await this.waitAllReady();
    return node;
  }

  private childOptions(): ApiChildOptions {
    return this.startOptions.albumWorker ? { albumWorker: this.startOptions.albumWorker } : {};
  }

  node(name: string): ApiNodeProcess {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  running(): ApiNodeProcess[] {
    return [...this.nodes.values()].filter((node) => node.running);
  }

  /** client is an SDK client for one node's API (the admin key unless another is given). */
  client(name: string, apiKey = this.admin.key, fetchImpl?: typeof fetch): SvcClient {
    return new SvcClient({
      baseUrl: this.node(name).httpUrl,
      apiKey,
      env: {},
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
      ...(this.ca ? { dispatcher: this.ca } : {}),
    });
  }

  /** clientAt is an SDK client for an API URL (a node's, known before it starts again), with SvcClient options. */
  clientAt(baseUrl: string, options: Partial<SvcClientOptions> = {}): SvcClient {
    return new SvcClient({
      baseUrl,
      apiKey: this.admin.key,
      env: {},
      ...(this.ca ? { dispatcher: this.ca } : {}),
      ...options,
    });
  }

  async statusOf(name: string): Promise<NodeStatusDocument | null> {
    try {
      const response = await this.fetch(`${this.node(name).httpUrl}/status`, { signal: AbortSignal.timeout(2_000) });
      return response.status === 200 ? ((await response.json()) as NodeStatusDocument) : null;
    } catch {
      return null;
    }
  }

  /** leaderName is the running node that leads the highest term, as the nodes' /status say. */
  async leaderName(): Promise<string | null> {
    let best: NodeStatusDocument | null = null;
    for (const node of this.running()) {
      const status = await this.statusOf(node.name);
      if (status?.role === 'leader' && (!best || status.term > best.term)) best = status;
    }
    return best?.name ?? null;
  }

  async waitAllReady(timeoutMs = READY_TIMEOUT_MS): Promise<void> {
    await waitFor(
      async () => {
        for (const node of this.running()) {
          const response = await this.fetch(`${node.httpUrl}/ready`, { signal: AbortSignal.timeout(2_000) });
          if (response.status !== 200) return false;
        }
        return true;
      },
      'every running node to answer /ready 200',
      timeoutMs,
    );
  }

  async stop(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((node) => node.stop().catch(() => node.kill9())));
    await this.redis?.stop();
    await this.ca?.close();
    if (this.dir !== '') await removeDir(this.dir);
  }
}
