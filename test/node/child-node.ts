// ChildNode runs node-child.ts in its own process (tsx), so a test can kill -9 a node mid-write
// and start it again on the same data directory and ports.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { JsonObject, VersionedValue } from '../../api/store/document-store.js';
import type { NodeConfig } from '../../transports/node/config.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';

/** CHILD_START_TIMEOUT_MS bounds a child's start (tsx compiles on the fly; two cores are shared). */
export const CHILD_START_TIMEOUT_MS = 30_000;
/** CHILD_REQUEST_TIMEOUT_MS bounds one IPC request (a store write waits up to its writeTimeoutMs). */
export const CHILD_REQUEST_TIMEOUT_MS = 20_000;

const entry = fileURLToPath(new URL('./node-child.ts', import.meta.url));

interface Answer {
  id?: number;
  type?: string;
  ok?: boolean;
  result?: unknown;
  error?: string;
  status?: NodeStatusDocument;
}

export class ChildNode {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private exited: Promise<void>;
  /** startStatus is the node's status right after start: what it recovered from disk. */
  startStatus: NodeStatusDocument | null = null;

  private constructor(readonly config: NodeConfig, private readonly proc: ChildProcess) {
    this.exited = new Promise((resolve) => proc.once('exit', () => {
      for (const p of this.pending.values()) {
        clearTimeout(p.timer);
        p.reject(new Error(`${config.name} exited`));
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

  static async start(config: NodeConfig): Promise<ChildNode> {
    const proc = fork(entry, [JSON.stringify(config)], { execArgv: ['--import', 'tsx'], stdio: ['ignore', process.env.SVC_TEST_LOG_LEVEL ? 'inherit' : 'ignore', 'inherit', 'ipc'] });
    const child = new ChildNode(config, proc);
    const started = await new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${config.name} did not start within ${CHILD_START_TIMEOUT_MS} ms`)), CHILD_START_TIMEOUT_MS);
      proc.on('message', (message: Answer) => {
        if (message.type !== 'started' && message.type !== 'start-failed') return;
        clearTimeout(timer);
        if (message.type === 'started') resolve(message);
        else reject(new Error(`${config.name} failed to start: ${message.error}`));
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${config.name} exited with ${code} while starting`));
      });
    });
    child.startStatus = started.status ?? null;
    return child;
  }

  get pid(): number {
    return this.proc.pid ?? 0;
  }

  put(key: string, value: JsonObject): Promise<{ version: number }> {
    return this.request({ op: 'put', key, value }) as Promise<{ version: number }>;
  }

  get(key: string): Promise<VersionedValue | null> {
    return this.request({ op: 'get', key }) as Promise<VersionedValue | null>;
  }

  status(): Promise<NodeStatusDocument> {
    return this.request({ op: 'status' }) as Promise<NodeStatusDocument>;
  }

  dump(): Promise<{ appliedSeq: number; entries: Array<{ key: string; value: JsonObject; version: number }> }> {
    return this.request({ op: 'dump' }) as Promise<{ appliedSeq: number; entries: Array<{ key: string; value: JsonObject; version: number }> }>;
  }

  /** kill9 ends the process with SIGKILL: no flush, no goodbye. */
  async kill9(): Promise<void> {
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** stop shuts the node down cleanly and waits for the process to exit. */
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    await this.request({ op: 'stop' }).catch(() => undefined);
    await this.exited;
  }

  private request(body: Record<string, unknown>): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.proc.connected) {
        reject(new Error(`${this.config.name} is not running`));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.config.name}: ${String(body.op)} got no answer within ${CHILD_REQUEST_TIMEOUT_MS} ms`));
      }, CHILD_REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      this.proc.send({ id, ...body });
    });
  }
}
