// RollingCluster: members as `svc node` processes (bin/svc.js of any checkout: HEAD's or an older worktree's, so
// a test can run two versions side by side) over mutual TLS on loopback, each with its own NodeConfig file, data
// dir and fixed ports, so a member stops with SIGTERM and starts again on the same data dir and addresses, as a
// pod restarts. A Writer puts keys through svc.admin.v1 Propose (the admin certificate) and remembers the
// acknowledged ones; lostKeys reads every one back by a compare-and-set through the log that applies only where
// the key does not exist (expectedVersion 0): a conflict says it is there, `applied` that it was lost. A TermWatch polls
// every member's /status and records each term seen.
import { spawn } from 'node:child_process';
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { credentials as grpcCredentials, type ChannelCredentials } from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import type { NodeConfig } from '../../cli/node/config.js';
import { RemoteStoreWriter } from '../../cli/remote-store.js';
import type { AdminTarget } from '../../cli/admin-target.js';
import { VersionConflictError } from '../../store/document-store.js';
import { makePki, planNodes, type PlannedNode, type Pki } from '../node/harness.js';
import { LongRunning, waitFor } from './helpers.js';

/** NODE_READY_TIMEOUT_MS bounds one member's start to /ready 200 (tsx compiles on the fly; two shared cores). */
export const NODE_READY_TIMEOUT_MS = 90_000;
/** NODE_EXIT_TIMEOUT_MS bounds a SIGTERMed member's exit: its handoff (handoffTimeoutMs) and stop. */
export const NODE_EXIT_TIMEOUT_MS = 40_000;
/** WRITE_DEADLINE_MS bounds one acknowledged write (retries across an election included). */
export const WRITE_DEADLINE_MS = 20_000;
/** TERM_POLL_MS paces TermWatch. */
const TERM_POLL_MS = 50;

export interface StatusDoc {
  id: number;
  name: string;
  role: string;
  term: number;
  leaderId: number;
  buildVersion?: string;
  members: Array<{ id: number; name: string; role: string; grpcAddr: string; httpAddr: string }>;
}

export async function statusOf(httpAddr: string): Promise<StatusDoc | null> {
  try {
    const response = await fetch(`${httpAddr}/status`, { signal: AbortSignal.timeout(2_000) });
    return response.ok ? ((await response.json()) as StatusDoc) : null;
  } catch {
    return null;
  }
}

async function readyOf(httpAddr: string): Promise<boolean> {
  try {
    const response = await fetch(`${httpAddr}/ready`, { signal: AbortSignal.timeout(2_000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

export interface Member {
  plan: PlannedNode;
  configFile: string;
  proc: LongRunning | null;
  /** stderr of every run of this member, oldest first. */
  logs: string[];
}

export class RollingCluster {
  readonly members: Member[] = [];

  private constructor(
    readonly dir: string,
    readonly pki: Pki,
  ) {}

  /** create plans `founders` founders and `joiners` members that join through the founders (as a StatefulSet's later pods). */
  static async create(
    dir: string,
    founders: number,
    joiners = 0,
    extra: (name: string) => Partial<NodeConfig> = () => ({}),
  ): Promise<RollingCluster> {
    const names = Array.from({ length: founders + joiners }, (_, i) => `n${i + 1}`);
    const pki = await makePki(dir, names);
    const cluster = new RollingCluster(dir, pki);
    const plans = await planNodes(names);
    const bootstrap = plans.slice(0, founders).map((p) => p.member);
    for (const plan of plans) {
      const dataDir = join(dir, `${plan.name}-data`);
      await mkdir(dataDir, { recursive: true });
      const isFounder = bootstrap.some((m) => m.name === plan.name);
      // Every pod gets the same flags (founders find themselves in the list, later pods join through seeds).
      const config: NodeConfig = {
        name: plan.name,
        dataDir,
        grpcListen: `127.0.0.1:${plan.grpcPort}`,
        httpListen: `127.0.0.1:${plan.httpPort}`,
        bootstrap,
        ...(isFounder ? {} : { seeds: bootstrap.map((m) => m.grpcAddr) }),
        tls: pki.tls(plan.name),
        // Plain HTTP on the node's port (what is tested here is the handoff, not HTTPS; an older version
        // ignores the key), so the readiness polls need no CA.
        httpTls: { mode: 'insecure' },
        logLevel: 'info',
        processMetrics: false,
        ...extra(plan.name),
      };
      const configFile = join(dir, `${plan.name}.json`);
      await writeFile(configFile, JSON.stringify(config, null, 2));
      cluster.members.push({ plan, configFile, proc: null, logs: [] });
    }
    return cluster;
  }

  member(name: string): Member {
    const m = this.members.find((x) => x.plan.name === name);
    if (!m) throw new Error(`no member ${name}`);
    return m;
  }

  /** start runs `svc node --config` of `bin` (a bin/svc.js) for the member. */
  start(name: string, bin: string): void {
    const m = this.member(name);
    if (m.proc?.running) throw new Error(`${name} is running`);
    m.proc = new LongRunning(
      spawn(process.execPath, [bin, 'node', '--config', m.configFile], {
        cwd: this.dir,
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    m.logs.push('');
  }

  async waitReady(name: string): Promise<void> {
    const m = this.member(name);
    await waitFor(
      async () => {
        if (m.proc && !m.proc.running) throw new Error(`${name} exited: ${m.proc.stderr.slice(-2_000)}`);
        return readyOf(m.plan.member.httpAddr);
      },
      `${name} /ready 200`,
      NODE_READY_TIMEOUT_MS,
      false,
    );
  }

  /** stop sends SIGTERM and waits for a clean exit; returns that run's stderr. */
  async stop(name: string): Promise<string> {
    const m = this.member(name);
    const proc = m.proc;
    if (!proc) throw new Error(`${name} never started`);
    proc.proc.kill('SIGTERM');
    const exit = await proc.exitWithin(NODE_EXIT_TIMEOUT_MS);
    m.logs[m.logs.length - 1] = proc.stderr + proc.stdout;
    if (!exit || exit.code !== 0)
      throw new Error(`${name} did not stop cleanly (${JSON.stringify(exit)}): ${proc.stderr}`);
    return proc.stderr;
  }

  killAll(): void {
    for (const m of this.members) m.proc?.kill();
  }

  running(): Member[] {
    return this.members.filter((m) => m.proc?.running === true);
  }

  async leader(): Promise<StatusDoc | null> {
    for (const m of this.running()) {
      const s = await statusOf(m.plan.member.httpAddr);
      if (s?.role === 'leader') return s;
    }
    return null;
  }

  async waitLeader(timeoutMs = NODE_READY_TIMEOUT_MS): Promise<StatusDoc> {
    let found: StatusDoc | null = null;
    await waitFor(
      async () => {
        found = await this.leader();
        return found !== null;
      },
      'a leader',
      timeoutMs,
    );
    return found!;
  }

  adminTarget(): AdminTarget {
    const tls = this.pki.adminTls();
    if (tls.mode !== 'mtls') throw new Error('mtls expected');
    const creds: ChannelCredentials = grpcCredentials.createSsl(
      readFileSync(tls.caFile),
      readFileSync(tls.keyFile),
      readFileSync(tls.certFile),
    );
    return {
      addresses: this.members.map((m) => m.plan.member.grpcAddr),
      credentials: creds,
      channelOptions: { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' },
      deadlineAt: Date.now() + WRITE_DEADLINE_MS,
      json: false,
      cluster: null,
      clusterFilePath: null,
    };
  }
}

/** Writer puts `prefix/<i>` one after another until stopped; acked lists the keys the cluster acknowledged. */
export class Writer {
  readonly acked: string[] = [];
  failed = 0;
  private stopped = false;
  private readonly done: Promise<void>;
  private readonly target: AdminTarget;
  private readonly store: RemoteStoreWriter;

  constructor(
    cluster: RollingCluster,
    private readonly prefix: string,
    private readonly writeCountMax = 100_000,
  ) {
    this.target = cluster.adminTarget();
    this.store = new RemoteStoreWriter(this.target);
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    for (let i = 0; i < this.writeCountMax && !this.stopped; i++) {
      const key = `${this.prefix}/${i}`;
      this.target.deadlineAt = Date.now() + WRITE_DEADLINE_MS;
      try {
        await this.store.put(key, { i });
        this.acked.push(key);
      } catch {
        this.failed += 1;
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  /** checkAcknowledged returns the acknowledged keys the cluster no longer holds (compare-and-set at version 1). */
  async lostKeys(): Promise<string[]> {
    const lost: string[] = [];
    for (const key of this.acked) {
      this.target.deadlineAt = Date.now() + WRITE_DEADLINE_MS;
      try {
        // expectedVersion 0: only where the key does not exist. Applied means it was lost.
        await this.store.put(key, { recreated: true }, { expectedVersion: 0 });
        lost.push(key);
      } catch (err) {
        if (!(err instanceof VersionConflictError && err.actualVersion > 0)) throw err;
      }
    }
    return lost;
  }

  close(): void {
    this.store.close();
  }
}

/** TermWatch records every term any running member reports, from start() to stop(). */
export class TermWatch {
  readonly terms = new Set<number>();
  /** firstSeen: when each term was first seen, and by whom (for a failure's message). */
  readonly firstSeen: string[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly cluster: RollingCluster) {}

  start(): void {
    this.timer = setInterval(() => {
      for (const m of this.cluster.running())
        void statusOf(m.plan.member.httpAddr).then((s) => {
          // A joiner reports term 0 until it hears the cluster: not a term of the cluster.
          if (s && s.role !== 'joiner' && !this.terms.has(s.term)) {
            this.terms.add(s.term);
            this.firstSeen.push(`term ${s.term} at ${new Date().toISOString()} from ${s.name} (${s.role})`);
          }
        });
    }, TERM_POLL_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** changes is how many times the term moved: the highest term seen minus the lowest. */
  get changes(): number {
    const all = [...this.terms];
    return all.length === 0 ? 0 : Math.max(...all) - Math.min(...all);
  }
}
