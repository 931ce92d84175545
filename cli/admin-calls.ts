// Calling a running cluster's Admin service: try each known member in turn (the leader first once
// one names it), retry what retrying can help (no reachable member, no leader yet, a change the
// leader asks to retry) until the command's deadline, and give up at once on everything else.
import { status as grpcStatus } from '@grpc/grpc-js';
import { AdminCallError, AdminClientPool, RETRYABLE_ADMIN_CODES } from '../transports/admin/admin-client.js';
import type { AdminTarget } from './admin-target.js';
import { ADMIN_RETRY_DELAY_MS } from './limits.js';

export function adminPool(target: AdminTarget): AdminClientPool {
  return new AdminClientPool({ credentials: target.credentials, channelOptions: target.channelOptions });
}

/** retryableAdminError: nobody answered, no leader is known, or the refusal's code is one retrying can cure. */
export function retryableAdminError(err: unknown): boolean {
  if (!(err instanceof AdminCallError)) return false;
  if (err.code === grpcStatus.UNAVAILABLE) return true;
  return err.code === grpcStatus.FAILED_PRECONDITION && RETRYABLE_ADMIN_CODES.has(err.refusalCode);
}

/**
 * callAnyMember runs call against the target's members until one answers, within target.deadlineAt.
 * attemptMs bounds one attempt, so a member that hangs does not use up the whole budget.
 */
export async function callAnyMember<T>(
  target: AdminTarget,
  attemptMs: number,
  call: (address: string, deadlineAt: number) => Promise<T>,
): Promise<{ value: T; address: string }> {
  let order = [...target.addresses];
  let lastError: unknown = null;
  // Bounded by the deadline: each round either returns, throws, or waits ADMIN_RETRY_DELAY_MS.
  for (;;) {
    for (const address of order) {
      if (Date.now() >= target.deadlineAt) break;
      try {
        const value = await call(address, Math.min(target.deadlineAt, Date.now() + attemptMs));
        return { value, address };
      } catch (err) {
        lastError = err;
        if (
          !retryableAdminError(err) &&
          !(
            err instanceof AdminCallError &&
            err.code === grpcStatus.DEADLINE_EXCEEDED &&
            Date.now() < target.deadlineAt
          )
        )
          throw err;
        if (err instanceof AdminCallError && err.leaderHint !== '' && err.leaderHint !== address) {
          order = [err.leaderHint, ...order.filter((a) => a !== err.leaderHint)];
          break;
        }
      }
    }
    const left = target.deadlineAt - Date.now();
    if (left <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(ADMIN_RETRY_DELAY_MS, left)));
  }
  const why = lastError instanceof Error ? lastError.message : 'no attempt was made';
  throw new AdminCallError(
    grpcStatus.DEADLINE_EXCEEDED,
    `no member of [${target.addresses.join(', ')}] could answer before the deadline (last: ${why})`,
  );
}
