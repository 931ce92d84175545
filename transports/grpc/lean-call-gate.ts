// What both lean unary clients (lean-unary.ts over node:http2, transports/h2/unary-client.ts over our framing)
// decide before a call leaves: a closed client, a request above messageBytesMax (refused as grpc-js's client
// refuses above grpc.max_send_message_length), an address backing off after a failed connection attempt (the
// calls of the next initialReconnectBackoffMs, doubling to maxReconnectBackoffMs while attempts keep failing,
// fail at once, as a grpc-js channel in TRANSIENT_FAILURE does, instead of dialling again on every heartbeat).
import { StatusCode, type RpcStatus } from '../../engine/rpc.js';
import type { GrpcLimits } from './limits.js';
import { rpcStatus } from './status.js';

export class LeanCallGate {
  /** Per address, the end of the back-off after a failed connection attempt, and its length. */
  private readonly refused = new Map<string, { untilMs: number; backoffMs: number }>();
  closed = false;

  constructor(
    private readonly limits: Pick<
      GrpcLimits,
      'messageBytesMax' | 'initialReconnectBackoffMs' | 'maxReconnectBackoffMs'
    >,
  ) {}

  /** refusal: why a call to `to` with `request` cannot leave, or null when it may. */
  refusal(to: string, request: Buffer): RpcStatus | null {
    if (this.closed) return rpcStatus(StatusCode.UNAVAILABLE, 'peer pool is closed');
    const { messageBytesMax } = this.limits;
    if (request.length > messageBytesMax)
      return rpcStatus(
        StatusCode.RESOURCE_EXHAUSTED,
        `request of ${request.length} bytes above messageBytesMax (${messageBytesMax})`,
      );
    const refused = this.refused.get(to);
    if (refused && Date.now() < refused.untilMs)
      return rpcStatus(StatusCode.UNAVAILABLE, `connection to ${to} failed; next attempt after back-off`);
    return null;
  }

  /** connected: an attempt to `to` succeeded; its back-off starts over. */
  connected(to: string): void {
    this.refused.delete(to);
  }

  /** failed: an attempt to `to` failed; calls fail at once for the next back-off. */
  failed(to: string): void {
    const { initialReconnectBackoffMs, maxReconnectBackoffMs } = this.limits;
    const previous = this.refused.get(to);
    const backoffMs = previous ? Math.min(previous.backoffMs * 2, maxReconnectBackoffMs) : initialReconnectBackoffMs;
    this.refused.set(to, { untilMs: Date.now() + backoffMs, backoffMs });
  }
}
