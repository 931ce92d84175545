// The store's errors: plain classes that name what happened, with no transport's status codes. The node
// (cli/node/store-link.ts) maps a StoreRefusal to a gRPC status on the wire and back.

/**
 * OutsideCommunitiesError: this node is a filtered member (docs/protocol.md, "Filtered members") and the read
 * names keys outside its communities, which it does not hold; read them at an unfiltered member.
 */
export class OutsideCommunitiesError extends Error {
  readonly code = 'OUTSIDE_COMMUNITIES';
  constructor(message: string) {
    super(message);
    this.name = 'OutsideCommunitiesError';
  }
}

/** StoreUnavailableError: the cluster could not commit or confirm in time (no leader, node removed, partition). */
export class StoreUnavailableError extends Error {
  readonly code = 'STORE_UNAVAILABLE';
  constructor(message: string) {
    super(message);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * CATCH_UP_RETRY_AFTER_SECONDS is the Retry-After a catching-up refusal suggests: HTTP's unit is whole seconds,
 * and one is the least that is not "at once".
 */
export const CATCH_UP_RETRY_AFTER_SECONDS = 1;

/**
 * StoreCatchingUpError: this node has not applied up to the read's read index within catchUpWaitMs (it is
 * catching up: restarted, or fallen behind). Nothing was written by the read; it may be retried at once
 * elsewhere, or here after retryAfterSeconds. Still STORE_UNAVAILABLE to callers that only know that code.
 */
export class StoreCatchingUpError extends StoreUnavailableError {
  readonly catchingUp = true;
  readonly retryAfterSeconds = CATCH_UP_RETRY_AFTER_SECONDS;
  constructor(
    message: string,
    /** appliedSeq and readIndex: how far behind this node was when it refused. */
    readonly appliedSeq: number,
    readonly readIndex: number,
  ) {
    super(message);
    this.name = 'StoreCatchingUpError';
  }
}

/**
 * RefusalKind says why the leader (or this node, asked as the leader) did not commit a command or take a read
 * index: `not-leader` (the refusal may name the leader), `leadership-changed` while it waited, `unavailable`
 * (overloaded, stopping, unreachable), `timeout` (outcome unknown), `overloaded` (too many requests open),
 * `invalid` (a malformed command), `internal` (anything else).
 */
export type RefusalKind =
  'not-leader' | 'leadership-changed' | 'unavailable' | 'timeout' | 'overloaded' | 'invalid' | 'internal';

/**
 * RETRYABLE_REFUSALS are worth another attempt: the leader moved, is electing, or did not answer. A retry
 * reuses the request id, so the state machine settles the outcome of an attempt that did commit.
 */
export const RETRYABLE_REFUSALS: ReadonlySet<RefusalKind> = new Set<RefusalKind>([
  'not-leader',
  'leadership-changed',
  'unavailable',
  'timeout',
  'overloaded',
]);

/** StoreRefusal: one attempt at the leader failed, of `kind`; leaderHint is the leader's address when known. */
export class StoreRefusal extends Error {
  constructor(
    readonly kind: RefusalKind,
    message: string,
    readonly leaderHint = '',
  ) {
    super(message);
    this.name = 'StoreRefusal';
  }
}
