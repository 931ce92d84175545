// The store's errors: plain classes that name what happened, with no transport's status codes. The node
// (cli/node/store-link.ts) maps a StoreRefusal to a gRPC status on the wire and back.

/** StoreUnavailableError: the cluster could not commit or confirm in time (no leader, node removed, partition). */
export class StoreUnavailableError extends Error {
  readonly code = 'STORE_UNAVAILABLE';
  constructor(message: string) {
    super(message);
    this.name = 'StoreUnavailableError';
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
