// The one harness for a cluster node in a child process, both ends of its IPC channel. A test forks an entry
// file (node-child.ts for the bare store, ../cluster-api/api-node-child.ts for the developer API) with
// serveNodeChild, which starts the Node from argv[2] (its NodeConfig as JSON) and answers requests
// {id, op, ...} with {id, ok, result | error}; the parent drives it through NodeChildProcess, which can also
// kill -9 it. Each entry adds its own ops to the common ones (status, put, get, dump, entries, stop).
import { fork, type ChildProcess } from 'node:child_process';
import type { JsonObject } from '../../store/document-store.js';
import type { NodeConfig } from '../../cli/node/config.js';
import type { Node } from '../../cli/node/node.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';

/** CHILD_START_TIMEOUT_MS bounds a child's start (tsx compiles on the fly; two cores are shared). */
export const CHILD_START_TIMEOUT_MS = 45_000;
/** CHILD_REQUEST_TIMEOUT_MS bounds one IPC request (a store write waits up to its writeTimeoutMs). */
export const CHILD_REQUEST_TIMEOUT_MS = 20_000;
/** CHILD_EXIT_GRACE_MS bounds the wait for a child to exit after it answered stop. */
export const CHILD_EXIT_GRACE_MS = 10_000;

export interface ChildRequest {
  id: number;
  op: string;
  [field: string]: unknown;
}

/** ChildOp answers one request in the child; what it returns (or throws) is sent back. */
export type ChildOp = (request: ChildRequest) => unknown;

interface Answer {
  id?: number;
  type?: string;
  ok?: boolean;
  result?: unknown;
  error?: string;
  status?: NodeStatusDocument;
}

// ---- child side ----

const send = (message: unknown): void => {
  process.send?.(message);
};

/** commonOps are what every node child answers: its status, store reads and writes, its local replica. */
function commonOps(node: Node): Record<string, ChildOp> {
  return {
    status: () => node.status(),
    put: (request) => node.store.put(request.key as string, request.value as JsonObject),
    get: (request) => node.store.get(request.key as string),
    // dump and entries are this node's local replica, without a read barrier: what it has applied.
    dump: () => ({
      appliedSeq: node.stateMachine.appliedSeq,
      entries: node.stateMachine.list('', Number.MAX_SAFE_INTEGER).entries,
    }),
    entries: (request) =>
      node.stateMachine
        .list((request.prefix as string | undefined) ?? '', Number.MAX_SAFE_INTEGER)
        .entries.map((entry) => entry.key),
  };
}

/**
 * serveNodeChild is an entry file's main: it starts the node (via start, which may prepare around it) and
 * serves the common ops plus the entry's own. `stop` runs the entry's own stop first (a worker it started),
 * then the node's, answers, and exits.
 */
export function serveNodeChild(
  start: (config: NodeConfig) => Promise<{ node: Node; ops?: Record<string, ChildOp>; stop?: () => Promise<void> }>,
): void {
  void (async () => {
    const config = JSON.parse(process.argv[2] ?? '{}') as NodeConfig;
    const { node, ops = {}, stop } = await start(config);
    void node.failed.then((err) => send({ type: 'failed', error: err.message }));
    const handlers: Record<string, ChildOp> = { ...commonOps(node), ...ops };
    process.on('message', (request: ChildRequest) => {
      void (async () => {
        try {
          if (request.op === 'stop') {
            await stop?.();
            await node.stop();
            send({ id: request.id, ok: true, result: null });
            process.exit(0);
          }
          const handler = handlers[request.op];
          if (!handler) throw new Error(`unknown op ${String(request.op)}`);
          send({ id: request.id, ok: true, result: await handler(request) });
        } catch (err) {
          send({
            id: request.id,
            ok: false,
            error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
          });
        }
      })();
    });
    process.on('disconnect', () => process.exit(0));
    send({ type: 'started', grpc: node.grpcAddress, http: node.httpAddress, status: node.status() });
  })().catch((err: unknown) => {
    send({ type: 'start-failed', error: String(err) });
    process.exit(1);
  });
}

// ---- parent side ----

export interface ForkOptions {
  /** args follow the NodeConfig on the child's command line (an entry's own options). */
  args?: string[];
  /** execArgv adds Node options (bench/api-cluster.ts passes --cpu-prof). */
  execArgv?: string[];
  /**
   * wrapper is a command the node runs under, which must exec it in place (the pid stays the node's), e.g.
   * `['ip', 'netns', 'exec', 'ns1']` for a node in its own network namespace (test/jepsen/).
   */
  wrapper?: string[];
}

/** NodeChildProcess is one node in its own process, spoken to over IPC. */
export class NodeChildProcess {
  private nextId = 1;
  private readonly pending = new Map<
    number,
    { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();
  readonly exited: Promise<void>;
  /** startStatus is the node's status right after start: what it recovered from disk. */
  startStatus: NodeStatusDocument | null = null;

  private constructor(
    readonly config: NodeConfig,
    private readonly proc: ChildProcess,
  ) {
    this.exited = new Promise((resolve) =>
      proc.once('exit', () => {
        for (const p of this.pending.values()) {
          clearTimeout(p.timer);
          p.reject(new Error(`${config.name} exited`));
        }
        this.pending.clear();
        resolve();
      }),
    );
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

  /** fork starts entry (a file calling serveNodeChild) with config and resolves once the node has started. */
  static async fork(entry: string, config: NodeConfig, options: ForkOptions = {}): Promise<NodeChildProcess> {
    const nodeArgv = ['--import', 'tsx', ...(options.execArgv ?? [])];
    const [wrapperCommand, ...wrapperArgs] = options.wrapper ?? [];
    const proc = fork(entry, [JSON.stringify(config), ...(options.args ?? [])], {
      // fork runs execPath with execArgv before the entry; a wrapper goes there, with node after it.
      ...(wrapperCommand === undefined
        ? { execArgv: nodeArgv }
        : { execPath: wrapperCommand, execArgv: [...wrapperArgs, process.execPath, ...nodeArgv] }),
      stdio: ['ignore', process.env.SVC_TEST_LOG_LEVEL ? 'inherit' : 'ignore', 'inherit', 'ipc'],
    });
    const child = new NodeChildProcess(config, proc);
    const started = await new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new Error(`${config.name} did not start within ${CHILD_START_TIMEOUT_MS} ms`));
      }, CHILD_START_TIMEOUT_MS);
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

  get name(): string {
    return this.config.name;
  }

  get pid(): number {
    return this.proc.pid ?? 0;
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** kill9 ends the process with SIGKILL: no flush, no goodbye. */
  async kill9(): Promise<void> {
    if (!this.running) return;
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** pause stops the process with SIGSTOP (it keeps its sockets, answers nothing) until resume(). */
  pause(): void {
    if (this.running) this.proc.kill('SIGSTOP');
  }

  /** resume continues a paused process with SIGCONT. */
  resume(): void {
    if (this.running) this.proc.kill('SIGCONT');
  }

  /** stop shuts the node down cleanly; a child that does not exit within CHILD_EXIT_GRACE_MS is killed. */
  async stop(): Promise<void> {
    if (!this.running) return;
    await this.request({ op: 'stop' }).catch(() => undefined);
    // The child answers, then exits (writing a CPU profile first when asked to): give it a bounded moment.
    await Promise.race([this.exited, new Promise((resolve) => setTimeout(resolve, CHILD_EXIT_GRACE_MS).unref())]);
    if (this.running) this.proc.kill('SIGKILL');
    await this.exited;
  }

  request(body: { op: string; [field: string]: unknown }): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (!this.proc.connected) {
        reject(new Error(`${this.config.name} is not running`));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.config.name}: ${body.op} got no answer within ${CHILD_REQUEST_TIMEOUT_MS} ms`));
      }, CHILD_REQUEST_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      this.proc.send({ id, ...body });
    });
  }
}
