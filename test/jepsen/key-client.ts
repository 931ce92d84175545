// The API-key workload, over the developer HTTP API: an admin creates a developer key, users present it to
// every node while it lives, the admin revokes it, the users keep presenting it for a while, then the next
// key. The API promises a revoked key is refused at once everywhere: that is linearizability of each key's
// state, so each key is a register in the same history as the store's registers (`apikey/<n>`):
//   create  = put "active"     (POST /keys; 201)
//   revoke  = put "revoked"    (POST /keys/{id}/revoke; 200)
//   use     = get              (GET /keys/{id} with the key itself: 200 -> "active", 401 KEY_REVOKED ->
//                               "revoked", 401 UNAUTHORIZED -> absent; anything else says nothing)
// An admin call that gets no answer is indeterminate, as a store write is.
import type { Prng } from '../../sim/prng.js';
import type { KvOperation } from '../../sim/linearizability/index.js';
import { ClientIdentity, type History } from './history.js';

export interface KeyTiming {
  /** requestTimeoutMs bounds one HTTP request. */
  requestTimeoutMs: number;
  /** activeMs and revokedMs: how long users present a key before it is revoked, and after. */
  activeMs: number;
  revokedMs: number;
  /** useGapMsMax: a user waits up to this long between uses. */
  useGapMsMax: number;
  failurePauseMs: number;
}

export interface KeyWorkloadOptions {
  /** httpUrls are every node's API base URL; user i presents keys at httpUrls[i]. */
  httpUrls: readonly string[];
  adminKey: string;
  history: History;
  prng: Prng;
  timing: KeyTiming;
}

export interface KeyWorkloadStats {
  keysCreated: number;
  keysRevoked: number;
  adminCallsIndeterminate: number;
  /** adminCallsRefused names each admin call a node refused (4xx), e.g. a revoke answered 404 by a node that read stale. */
  adminCallsRefused: string[];
  usesUnanswered: number;
}

interface LiveKey {
  register: string;
  id: string;
  secret: string;
}

interface AnswerBody {
  code?: string;
  key?: string;
  record?: { id?: string };
}
type Answer = { status: number; body: AnswerBody } | null;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class KeyWorkload {
  readonly stats: KeyWorkloadStats = {
    keysCreated: 0,
    keysRevoked: 0,
    adminCallsIndeterminate: 0,
    adminCallsRefused: [],
    usesUnanswered: 0,
  };
  private current: LiveKey | null = null;
  private readonly admin = new ClientIdentity('admin');
  /** adminAt is the node the admin calls; it moves on after a failure. */
  private adminAt = 0;

  constructor(private readonly options: KeyWorkloadOptions) {}

  /** run drives the admin loop and one user per node until stopped() holds. */
  async run(stopped: () => boolean): Promise<void> {
    await Promise.all([
      this.adminLoop(stopped),
      ...this.options.httpUrls.map((url, i) => this.userLoop(i, url, stopped)),
    ]);
  }

  private async adminLoop(stopped: () => boolean): Promise<void> {
    const { history, timing } = this.options;
    // Bounded by stopped(): each pass waits activeMs + revokedMs, or failurePauseMs after a failure.
    for (let n = 1; !stopped(); n++) {
      const register = `apikey/${n}`;
      const create = history.invoke(this.admin.id, { kind: 'put', key: register, value: 'active' });
      const created = await this.call('POST', '/keys', this.options.adminKey, {
        name: `jepsen-${n}`,
        role: 'developer',
      });
      if (
        created?.status !== 201 ||
        typeof created.body.key !== 'string' ||
        typeof created.body.record?.id !== 'string'
      ) {
        this.adminFailed(create, created);
        await sleep(timing.failurePauseMs);
        continue;
      }
      history.complete(create, { kind: 'put' });
      this.stats.keysCreated++;
      const key: LiveKey = { register, id: created.body.record.id, secret: created.body.key };
      this.current = key;
      await sleep(timing.activeMs);
      const revoke = history.invoke(this.admin.id, { kind: 'put', key: register, value: 'revoked' });
      const revoked = await this.call('POST', `/keys/${encodeURIComponent(key.id)}/revoke`, this.options.adminKey);
      if (revoked?.status === 200) {
        history.complete(revoke, { kind: 'put' });
        this.stats.keysRevoked++;
      } else {
        this.adminFailed(revoke, revoked);
      }
      await sleep(timing.revokedMs);
      this.current = null;
    }
  }

  /**
   * adminFailed settles an admin call without a success: a refusal the API gives before writing (4xx) never
   * took effect and leaves the history; no answer or a 5xx may have, so the operation stays open and the admin
   * continues as a new client. Either way the admin moves to the next node.
   */
  private adminFailed(op: KvOperation, answer: Answer): void {
    if (answer !== null && answer.status >= 400 && answer.status < 500) {
      this.options.history.drop(op);
      this.stats.adminCallsRefused.push(
        `${op.input.key} ${op.input.kind === 'put' ? op.input.value : ''}: ${answer.status} ${answer.body.code ?? ''}`,
      );
    } else {
      this.stats.adminCallsIndeterminate++;
      this.admin.retire();
    }
    this.adminAt = (this.adminAt + 1) % this.options.httpUrls.length;
  }

  private async userLoop(index: number, url: string, stopped: () => boolean): Promise<void> {
    const { history, prng, timing } = this.options;
    const user = new ClientIdentity(`user${index}`);
    // Bounded by stopped(); a pass without a key waits, as does a failed use.
    while (!stopped()) {
      const key = this.current;
      if (!key) {
        await sleep(timing.useGapMsMax);
        continue;
      }
      const op = history.invoke(user.id, { kind: 'get', key: key.register });
      const answer = await this.request(url, 'GET', `/keys/${encodeURIComponent(key.id)}`, key.secret);
      const value =
        answer === null
          ? undefined
          : answer.status === 200
            ? 'active'
            : answer.status === 401 && answer.body.code === 'KEY_REVOKED'
              ? 'revoked'
              : answer.status === 401 && answer.body.code === 'UNAUTHORIZED'
                ? null
                : undefined;
      if (value === undefined) {
        // No answer, or one that says nothing about the key (503 when the node cannot confirm): not a read.
        history.drop(op);
        this.stats.usesUnanswered++;
        await sleep(timing.failurePauseMs);
        continue;
      }
      history.complete(op, { kind: 'get', value });
      await sleep(prng.uniform(0, timing.useGapMsMax));
    }
  }

  private call(method: string, path: string, apiKey: string, body?: unknown): Promise<Answer> {
    return this.request(this.options.httpUrls[this.adminAt]!, method, path, apiKey, body);
  }

  private async request(base: string, method: string, path: string, apiKey: string, body?: unknown): Promise<Answer> {
    try {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { 'x-api-key': apiKey, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.options.timing.requestTimeoutMs),
      });
      const text = await response.text();
      let parsed: AnswerBody = {};
      try {
        parsed = JSON.parse(text) as AnswerBody;
      } catch {
        // not JSON: only the status says anything
      }
      return { status: response.status, body: parsed };
    } catch {
      return null;
    }
  }
}
