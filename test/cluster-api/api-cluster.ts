// ApiCluster: three (or more) nodes in child processes over mutual TLS, each serving the developer API on its
// HTTP port over the replicated store, all sharing one real redis-server that the harness starts on a free
// loopback port. Temp dirs for data, certificates, the credential key file and an agent workspace; everything
// is removed by stop(). Tests talk to the nodes through the SDK (client()).
import { fork, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeConfig } from '../../transports/node/config.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';
import { makePki, nodeConfig, planNodes, removeDir, tempDir, waitFor, type PlannedNode } from '../node/harness.js';
import { startTestRedis, testSecretKey, type TestRedis } from '../api/harness.js';
import { SvcClient } from '../../sdk/src/index.js';

/** CHILD_START_TIMEOUT_MS bounds one node's start (tsx compiles on the fly; two cores are shared). */
export const CHILD_START_TIMEOUT_MS = 45_000;
/** CHILD_REQUEST_TIMEOUT_MS bounds one IPC request (a store write waits up to its writeTimeoutMs). */
export const CHILD_REQUEST_TIMEOUT_MS = 20_000;
/** CHILD_EXIT_GRACE_MS bounds the wait for a child to exit after it answered stop. */
export const CHILD_EXIT_GRACE_MS = 10_000;
/** CLUSTER_TICK_MS is the engine tick: elections in well under a second, without spurious ones on a busy machine. */
export const CLUSTER_TICK_MS = 50;
/** CLUSTER_RATE_LIMIT_PER_SECOND is each key's rate, high enough for the tests' own traffic. */
export const CLUSTER_RATE_LIMIT_PER_SECOND = 500;
/** READY_TIMEOUT_MS bounds waiting for every node's /ready after start, and for a new leader after a kill. */
export const READY_TIMEOUT_MS = 30_000;

const entry = fileURLToPath(new URL('./api-node-child.ts', import.meta.url));

interface Answer {
  id?: number;
  type?: string;
  ok?: boolean;
  result?: unknown;
  error?: string;
}

/** ApiNodeProcess is one node in its own process. */
export class ApiNodeProcess {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  readonly exited: Promise<void>;

  private constructor(readonly name: string, readonly httpUrl: string, private readonly proc: ChildProcess) {
    this.exited = new Promise((resolve) => proc.once('exit', () => {
      for (const p of this.pending.values()) {
        clearTimeout(p.timer);
        p.reject(new Error(`${name} exited`));
      }
      this.pending.clear();
      resolve();
    }));
    proc.on('message', (message: Answer) => {
      if (message.id === undefined) return;
      const p = this.pending.get(message.id);
      if (!p) return;
      this.pending.delete(message.id);
      clearTimeout(p.timer);
      if (message.ok) p.resolve(message.result);
      else p.reject(new Error(message.error ?? 'request failed'));
    });
  }

  /** start forks the node; execArgv adds Node options (bench/api-cluster.ts passes --cpu-prof). */
  static async start(config: NodeConfig, execArgv: string[] = []): Promise<ApiNodeProcess> {
    const proc = fork(entry, [JSON.stringify(config)], {
      execArgv: ['--import', 'tsx', ...execArgv], stdio: ['ignore', process.env.SVC_TEST_LOG_LEVEL ? 'inherit' : 'ignore', 'inherit', 'ipc'],
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`${config.name} did not start within ${CHILD_START_TIMEOUT_MS} ms`));
      }, CHILD_START_TIMEOUT_MS);
      proc.on('message', (message: Answer) => {
        if (message.type !== 'started' && message.type !== 'start-failed') return;
        clearTimeout(timer);
        if (message.type === 'started') resolve();
        else reject(new Error(`${config.name} failed to start: ${message.error}`));
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${config.name} exited with ${code} while starting`));
      });
    });
    return new ApiNodeProcess(config.name, `http://${config.httpListen}`, proc);
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  bootstrapAdmin(name: string): Promise<{ key: string; keyId: string; userId: string }> {
    return this.request({ op: 'bootstrap-admin', name }) as Promise<{ key: string; keyId: string; userId: string }>;
  }

  /** bare serves `payload` at GET /projects from a bare Express app in this process; it resolves with its URL. */
  bare(payload: unknown): Promise<string> {
    return this.request({ op: 'bare', payload }) as Promise<string>;
  }

  status(): Promise<NodeStatusDocument> {
    return this.request({ op: 'status' }) as Promise<NodeStatusDocument>;
  }

  /** localKeys lists the store keys under prefix that this node has applied (no read barrier). */
  localKeys(prefix: string): Promise<string[]> {
    return this.request({ op: 'entries', prefix }) as Promise<string[]>;
  }

  /** kill9 ends the process with SIGKILL: no flush, no goodbye. */
  async kill9(): Promise<void> {
    if (!this.running) return;
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    await this.request({ op: 'stop' }).catch(() => undefined);
    // The child answers, then exits (writing a CPU profile first when asked to): give it a bounded moment.
    await Promise.race([this.exited, new Promise((resolve) => setTimeout(resolve, CHILD_EXIT_GRACE_MS).unref())]);
    if (this.running) this.proc.kill('SIGKILL');
    await this.exited;
  }

  private request(body: Record<string, unknown>): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.proc.connected) {
        reject(new Error(`${this.name} is not running`));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.name}: ${String(body.op)} got no answer within ${CHILD_REQUEST_TIMEOUT_MS} ms`));
      }, CHILD_REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      this.proc.send({ id, ...body });
    });
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

  async start(options: ApiClusterOptions = {}): Promise<void> {
    const names = options.names ?? ['a', 'b', 'c'];
    this.dir = await tempDir('cluster-api');
    this.redis = await startTestRedis();
    const pki = await makePki(this.dir, names);
    this.plans = await planNodes(names);
    const secretKeyFile = join(this.dir, 'secret.key');
    writeFileSync(secretKeyFile, testSecretKey.toString('hex'), { mode: 0o600 });
    this.workspace = join(this.dir, 'workspace');
    mkdirSync(this.workspace);
    writeFileSync(join(this.workspace, 'agent.sh'), `${agentScript}\n`);
    chmodSync(join(this.workspace, 'agent.sh'), 0o755);
    const bootstrap = this.plans.map((plan) => plan.member);
    const api = {
      redisUrl: this.redis.url, localRedis: false, secretKeyFile, rateLimitPerSecond: CLUSTER_RATE_LIMIT_PER_SECOND, ...options.api,
    };
    const started = await Promise.allSettled(this.plans.map((plan) => ApiNodeProcess.start(
      nodeConfig(plan, join(this.dir, plan.name), pki.tls(plan.name), { bootstrap }, { tickMs: options.tickMs ?? CLUSTER_TICK_MS, api }),
      options.execArgv)));
    for (const result of started) if (result.status === 'fulfilled') this.nodes.set(result.value.name, result.value);
    const failed = started.find((result) => result.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    await this.waitAllReady();
    this.admin = await this.node(names[0]!).bootstrapAdmin('cluster-admin');
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
    return new SvcClient({ baseUrl: this.node(name).httpUrl, apiKey, env: {}, ...(fetchImpl ? { fetch: fetchImpl } : {}) });
  }

  async statusOf(name: string): Promise<NodeStatusDocument | null> {
    try {
      const response = await fetch(`${this.node(name).httpUrl}/status`, { signal: AbortSignal.timeout(2_000) });
      return response.status === 200 ? await response.json() as NodeStatusDocument : null;
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
    await waitFor(async () => {
      for (const node of this.running()) {
        const response = await fetch(`${node.httpUrl}/ready`, { signal: AbortSignal.timeout(2_000) });
        if (response.status !== 200) return false;
      }
      return true;
    }, 'every running node to answer /ready 200', timeoutMs);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((node) => node.stop().catch(() => node.kill9())));
    await this.redis?.stop();
    if (this.dir !== '') await removeDir(this.dir);
  }
}
