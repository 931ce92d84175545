// One register client of the workload: a loop of get / put / compare-and-set over a handful of keys, through
// the store's gRPC API (svc.store.v1) from the hub namespace. Gets go to the client's home node (any member
// answers Get linearizably: the point of the test is to check that); writes go to the leader, wherever the
// client last learnt it is (a refusal names it; a silent or failed node sends the client to the next one).
//
// A write is one command with one request id for all its attempts (the state machine applies a request id
// once), so retrying it on another node is safe; it is recorded once, from its first call to its answer.
// A write that ends without an answer after any attempt that may have reached a leader is indeterminate.
//
// Compare-and-set: the store's CAS is on versions, the checker's on values. Every value written is unique
// (client id and counter), and a key's version is the seqno of the entry that wrote its value, so "the key
// holds value x" and "the key's version is the seqno that wrote x" are the same statement: the client sends
// the version it last saw with the value it last saw (from its own gets and puts), and records a CAS on that
// value.
import { status as grpcStatus } from '@grpc/grpc-js';
import { encodeCommand, resultFromMessage, type StoreCommand } from '../../store/command.js';
import { StoreCallError, type StoreClientPool } from '../../transports/store-rpc/store-service.js';
import type { Prng } from '../../sim/prng.js';
import type { KvOperation } from '../../sim/linearizability/index.js';
import { ClientIdentity, type History } from './history.js';

export interface KvTiming {
  /** getDeadlineMs bounds one Get. */
  getDeadlineMs: number;
  /** attemptDeadlineMs bounds one write attempt at one node. */
  attemptDeadlineMs: number;
  /** writeDeadlineMs bounds a write over all its attempts; past it, the write is indeterminate (or failed). */
  writeDeadlineMs: number;
  /** thinkMsMax: a client waits up to this long (uniformly) between operations, bounding the history's size. */
  thinkMsMax: number;
  /** failurePauseMs: the wait after a failed operation, so a dead node is not hammered. */
  failurePauseMs: number;
}

export interface KvClientOptions {
  index: number;
  /** home is the gRPC address this client reads at. */
  home: string;
  /** members are every node's gRPC address, in a fixed order (the next one to try after a failure). */
  members: readonly string[];
  keys: readonly string[];
  pool: StoreClientPool;
  history: History;
  prng: Prng;
  runTag: string;
  timing: KvTiming;
}

/** KvClientStats counts what the client saw beyond the history (failed gets are not in it). */
export interface KvClientStats {
  getsFailed: number;
  writesFailed: number;
  writesIndeterminate: number;
}

/** The op mix: gets, puts, then CAS with the rest. */
const GET_SHARE = 0.5;
const PUT_SHARE = 0.3;

/** Codes that say a write was not proposed where it was sent: safe to retry, and no trace if every attempt ends so. */
const NOT_PROPOSED = new Set<number>([grpcStatus.FAILED_PRECONDITION, grpcStatus.RESOURCE_EXHAUSTED]);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class KvClient {
  readonly stats: KvClientStats = { getsFailed: 0, writesFailed: 0, writesIndeterminate: 0 };
  private readonly identity: ClientIdentity;
  private leaderGuess: string;
  private writeCount = 0;
  /** seen maps a key to the value and version this client last saw there (for its CAS). */
  private readonly seen = new Map<string, { value: string | null; version: number }>();

  constructor(private readonly options: KvClientOptions) {
    this.identity = new ClientIdentity(`c${options.index}`);
    this.leaderGuess = options.home;
  }

  /** run issues operations one after another until stopped() holds (checked before each operation). */
  async run(stopped: () => boolean): Promise<void> {
    const { prng, keys, timing } = this.options;
    // Bounded by stopped(): the workload's duration.
    while (!stopped()) {
      const key = keys[prng.int(keys.length)]!;
      const draw = prng.next();
      const ok =
        draw < GET_SHARE
          ? await this.get(key)
          : draw < GET_SHARE + PUT_SHARE
            ? await this.put(key)
            : await this.cas(key);
      await sleep(ok ? prng.uniform(0, timing.thinkMsMax) : timing.failurePauseMs);
    }
  }

  private async get(key: string): Promise<boolean> {
    const { history, pool, home, timing } = this.options;
    const op = history.invoke(this.identity.id, { kind: 'get', key });
    try {
      const answer = await pool.get(home, key, Date.now() + timing.getDeadlineMs);
      const value = answer.found ? valueOf(answer.valueJson) : null;
      history.complete(op, { kind: 'get', value });
      this.seen.set(key, { value, version: answer.found ? answer.version : 0 });
      return true;
    } catch (err) {
      if (!(err instanceof StoreCallError)) throw err;
      // A failed read changed nothing and says nothing: it leaves the history.
      history.drop(op);
      this.stats.getsFailed++;
      return false;
    }
  }

  private async put(key: string): Promise<boolean> {
    const value = this.nextValue();
    const op = this.options.history.invoke(this.identity.id, { kind: 'put', key, value });
    const outcome = await this.write(op, { op: 'put', key, value: { v: value }, requestId: this.requestId() });
    if (outcome === null) return false;
    if (outcome.outcome !== 'applied') throw new Error(`a put without expectedVersion answered ${outcome.outcome}`);
    this.options.history.complete(op, { kind: 'put' });
    this.seen.set(key, { value, version: outcome.version });
    return true;
  }

  private async cas(key: string): Promise<boolean> {
    const expected = this.seen.get(key) ?? { value: null, version: 0 };
    const value = this.nextValue();
    const op = this.options.history.invoke(this.identity.id, { kind: 'cas', key, expected: expected.value, value });
    const outcome = await this.write(op, {
      op: 'put',
      key,
      value: { v: value },
      expectedVersion: expected.version,
      requestId: this.requestId(),
    });
    if (outcome === null) return false;
    const swapped = outcome.outcome === 'applied';
    this.options.history.complete(op, { kind: 'cas', swapped });
    if (outcome.outcome === 'applied') this.seen.set(key, { value, version: outcome.version });
    return true;
  }

  /**
   * write sends one command to the leader until one attempt answers or writeDeadlineMs passes. It resolves
   * with the command's outcome, or null when there is none: the operation is then dropped (no attempt can
   * have been proposed) or left indeterminate (this client is retired).
   */
  private async write(
    op: KvOperation,
    command: StoreCommand,
  ): Promise<{ outcome: 'applied'; version: number } | { outcome: 'conflict' } | null> {
    const { pool, members, timing, history } = this.options;
    const bytes = encodeCommand(command);
    const deadlineAt = Date.now() + timing.writeDeadlineMs;
    let mayHaveApplied = false;
    // Bounded by deadlineAt: every attempt is bounded by it, and a failed one waits before the next.
    while (Date.now() < deadlineAt) {
      const to = this.leaderGuess;
      try {
        const answer = await pool.propose(to, bytes, Math.min(deadlineAt, Date.now() + timing.attemptDeadlineMs));
        const result = resultFromMessage(answer.result);
        if (result.outcome === 'rejected')
          throw new Error(`the store rejected ${command.op} ${command.key}: ${result.reason}`);
        return result.outcome === 'applied' ? { outcome: 'applied', version: result.version } : { outcome: 'conflict' };
      } catch (err) {
        if (!(err instanceof StoreCallError)) throw err;
        if (err.code === grpcStatus.INVALID_ARGUMENT) throw err;
        if (!NOT_PROPOSED.has(err.code)) mayHaveApplied = true;
        // Follow a hint to another node at once; otherwise try the next member after a pause.
        if (err.leaderHint !== '' && err.leaderHint !== to) {
          this.leaderGuess = err.leaderHint;
          continue;
        }
        this.leaderGuess = members[(members.indexOf(to) + 1) % members.length]!;
        await sleep(timing.failurePauseMs);
      }
    }
    if (mayHaveApplied) {
      this.stats.writesIndeterminate++;
      // The operation stays open in the history; this client goes on under a new id.
      this.identity.retire();
    } else {
      this.stats.writesFailed++;
      history.drop(op);
    }
    return null;
  }

  private nextValue(): string {
    return `${this.identity.id}-${++this.writeCount}`;
  }

  private requestId(): string {
    return `jepsen-${this.options.runTag}-c${this.options.index}-${this.writeCount}`;
  }
}

function valueOf(json: string): string {
  const parsed = JSON.parse(json) as { v?: unknown };
  if (typeof parsed.v !== 'string') throw new Error(`a register holds ${json}, not {"v": string}`);
  return parsed.v;
}
