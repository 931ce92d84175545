// Where the store meets svc.store.v1: the store (store/) speaks in StoreRefusal kinds, the Store service
// and client pool (transports/store-rpc/) in gRPC status codes. This file maps one to the other, both ways:
// leaderLink is the store's LeaderLink over the client pool, storeServiceHandler the service's handler over
// the store's StoreRouter. Every kind round-trips to the code it left as.
import { status } from '@grpc/grpc-js';
import { decodeCommand, resultToMessage } from '../../store/command.js';
import { StoreRefusal, StoreUnavailableError, type RefusalKind } from '../../store/errors.js';
import type { LeaderLink } from '../../store/host.js';
import type { StoreRouter } from '../../store/store-router.js';
import type { DocumentStore, JsonObject } from '../../store/document-store.js';
import type { CommandResult as CommandResultMessage } from '../../proto/gen/svc/store/v1/store.js';
import { stamp, tracing } from '../../transports/node/write-trace.js';
import {
  StoreCallError,
  type StoreClientPool,
  type StoreServiceHandler,
} from '../../transports/store-rpc/store-service.js';

const CODE_OF_KIND: Readonly<Record<RefusalKind, status>> = {
  'not-leader': status.FAILED_PRECONDITION,
  'leadership-changed': status.ABORTED,
  unavailable: status.UNAVAILABLE,
  timeout: status.DEADLINE_EXCEEDED,
  overloaded: status.RESOURCE_EXHAUSTED,
  invalid: status.INVALID_ARGUMENT,
  internal: status.INTERNAL,
};

/** kindOfCode reads a failed call's status; a cancelled call is as retryable as an unavailable peer. */
export function kindOfCode(code: status): RefusalKind {
  switch (code) {
    case status.FAILED_PRECONDITION:
      return 'not-leader';
    case status.ABORTED:
      return 'leadership-changed';
    case status.UNAVAILABLE:
    case status.CANCELLED:
      return 'unavailable';
    case status.DEADLINE_EXCEEDED:
      return 'timeout';
    case status.RESOURCE_EXHAUSTED:
      return 'overloaded';
    case status.INVALID_ARGUMENT:
      return 'invalid';
    default:
      return 'internal';
  }
}

export function codeOfKind(kind: RefusalKind): status {
  return CODE_OF_KIND[kind];
}

/** asRefusal turns a failed Store call into the store's refusal (its message keeps the status name); other errors pass. */
function asRefusal(err: unknown): unknown {
  return err instanceof StoreCallError ? new StoreRefusal(kindOfCode(err.code), err.message, err.leaderHint) : err;
}

/**
 * asCallError turns the store's refusal into the Store call's status, and a wait the leader gave up on (or a
 * leader not running) into UNAVAILABLE, which the caller retries; other errors pass (the service answers INTERNAL).
 */
function asCallError(err: unknown): unknown {
  if (err instanceof StoreRefusal) return new StoreCallError(codeOfKind(err.kind), err.message, err.leaderHint);
  if (err instanceof StoreUnavailableError) return new StoreCallError(status.UNAVAILABLE, err.message);
  return err;
}

/** leaderLink: the store's way to the leader, over the Store client pool. */
export function leaderLink(clients: StoreClientPool): LeaderLink {
  return {
    propose: (leader, command, deadlineAt) =>
      clients.propose(leader, command.bytes, deadlineAt, command.requestId).catch((err: unknown) => {
        throw asRefusal(err);
      }),
    readIndex: (leader, deadlineAt, term) =>
      clients.readIndex(leader, deadlineAt, term).catch((err: unknown) => {
        throw asRefusal(err);
      }),
    get: async (leader, key, deadlineAt) => {
      let answer;
      try {
        answer = await clients.get(leader, key, deadlineAt);
      } catch (err) {
        throw asRefusal(err);
      }
      if (!answer.found) return null;
      // The leader's answer is input: a value that is not a JSON object is refused, not handed on.
      let value: unknown;
      try {
        value = JSON.parse(answer.valueJson);
      } catch {
        value = null;
      }
      if (value === null || typeof value !== 'object' || Array.isArray(value) || !Number.isSafeInteger(answer.version))
        throw new StoreRefusal('internal', `malformed Get answer from ${leader}`);
      return { value: value as JsonObject, version: answer.version };
    },
  };
}

/**
 * storeServiceHandler answers Store calls with the router and store the node has while it runs: other members'
 * forwarded proposals and read indexes (the router), and clients' reads (Get, through the store's own read path).
 */
export function storeServiceHandler(router: () => StoreRouter, store: () => DocumentStore): StoreServiceHandler {
  const run = <T>(call: () => Promise<T>): Promise<T> => {
    let answer: Promise<T>;
    try {
      answer = call();
    } catch (err) {
      answer = Promise.reject(err);
    }
    return answer.catch((err: unknown) => {
      throw asCallError(err);
    });
  };
  return {
    propose: (command, deadlineAt, requestId) => {
      stamp('propose.received', 0);
      const answered = run(() => router().serveProposal(command, deadlineAt, requestId));
      // The answered stamp costs a promise turn per write: taken only while the write timeline listens.
      if (!tracing()) return answered;
      return answered.then((answer) => {
        stamp('propose.answered', answer.seq);
        return answer;
      });
    },
    readIndex: (deadlineAt, asker) => run(() => router().serveReadIndex(deadlineAt, asker)),
    // The store bounds its read by its own readTimeoutMs; the caller's deadline ends the call sooner.
    get: (key) =>
      run(async () => {
        stamp('read.received', 0);
        let found;
        try {
          found = await store().get(key);
          stamp('read.answered', found?.version ?? 0);
        } catch (err) {
          // A key the store cannot hold (empty, too long) is the caller's mistake, not the node's.
          if (err instanceof RangeError) throw new StoreRefusal('invalid', err.message);
          throw err;
        }
        return found
          ? { found: true, valueJson: JSON.stringify(found.value), version: found.version }
          : { found: false, valueJson: '', version: 0 };
      }),
  };
}

/**
 * adminProposal is the Admin service's Propose on this node: the operator's command (an admin certificate
 * reached this node; svc.store.v1 takes peer certificates only) is committed through the node's router,
 * which reaches the leader with the node's own peer certificate. Refusals leave as the Store call's codes.
 */
export function adminProposal(
  router: () => StoreRouter,
): (command: Uint8Array, deadlineAt: number) => Promise<{ seq: number; result: CommandResultMessage }> {
  return async (bytes, deadlineAt) => {
    const decoded = decodeCommand(bytes);
    if (!decoded.ok) throw new StoreCallError(status.INVALID_ARGUMENT, `bad command: ${decoded.reason}`);
    try {
      const { seq, result } = await router().commit({ requestId: decoded.command.requestId, bytes }, deadlineAt);
      return { seq, result: resultToMessage(result) };
    } catch (err) {
      throw asCallError(err);
    }
  };
}
