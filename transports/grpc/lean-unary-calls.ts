// UnaryChannels' call() over the lean HTTP/2 client (lean-unary.ts) instead of grpc-js's: the same bytes in and
// out, the same deadline, and a failure turned into the pool's error from the status as the server sent it
// (its code unmapped, its x-svc-leader hint and x-svc-code refusal code read from the trailers). Why: a grpc-js
// unary call cost its caller about twice the CPU of a lean one and added 100-150 µs to its round trip
// (lean-unary.ts has the figures); a client's one-call write or read pays that on every call.
import { status } from '@grpc/grpc-js';
import { H2UnaryClient, type H2Dial } from '../h2/unary-client.js';
import { LeanUnaryClient, type LeanDial } from './lean-unary.js';
import { resolveGrpcLimits, type GrpcLimits } from './limits.js';
import { TRAILER_LEADER, TRAILER_REFUSAL_CODE, type CallErrorOf } from './unary-call.js';

/** UnaryCaller makes one byte-in, byte-out unary call under a deadline; it rejects with the pool's error. */
export interface UnaryCaller {
  call(to: string, path: string, request: Buffer, deadlineAt: number): Promise<Buffer>;
  close(): void;
}

/** LeanDialOptions is what a pool needs to make its unary calls on the lean client. */
export interface LeanDialOptions {
  /** dial opens a session with the same security as the pool's ChannelCredentials (tls.ts peerHttp2Dial). */
  dial: LeanDial;
  /**
   * h2Dial, when set, sends the calls over transports/h2's H2UnaryClient (our own HTTP/2 framing) instead of
   * node:http2's client, with a socket dial of the same security (tls.ts peerSocketDial). Unset: node:http2.
   */
  h2Dial?: H2Dial;
  /** headers go on every call: what the channel options' interceptors would add (the cluster id). */
  headers?: Readonly<Record<string, string>>;
  /**
   * limits: messageBytesMax bounds a request and an answer (grpc.max_send/receive_message_length), plus the
   * keepalive, connect timeout and reconnect back-off of the sessions. Defaults: DEFAULT_GRPC_LIMITS.
   */
  limits?: Partial<GrpcLimits>;
}

export interface LeanUnaryCallsOptions extends LeanDialOptions {
  /** poolName names the pool in the error a call after close() gets ("store client pool"). */
  poolName: string;
  errorOf: CallErrorOf;
}

export class LeanUnaryCalls implements UnaryCaller {
  private readonly client: LeanUnaryClient | H2UnaryClient;
  private closed = false;
  /** callsSent counts the calls handed to the lean client (tests and benches check which path carried them). */
  callsSent = 0;

  constructor(private readonly options: LeanUnaryCallsOptions) {
    const headers = options.headers ?? {};
    const limits = resolveGrpcLimits(options.limits);
    this.client = options.h2Dial
      ? new H2UnaryClient({ dial: options.h2Dial, headers, limits })
      : new LeanUnaryClient({ dial: options.dial, headers, limits });
  }

  /** framing names the HTTP/2 client under the calls: node:http2's, or transports/h2's. */
  get framing(): 'node-http2' | 'h2' {
    return this.client instanceof H2UnaryClient ? 'h2' : 'node-http2';
  }

  call(to: string, path: string, request: Buffer, deadlineAt: number): Promise<Buffer> {
    const { errorOf, poolName } = this.options;
    if (this.closed) return Promise.reject(errorOf(status.UNAVAILABLE, `${poolName} is closed`, ''));
    if (to.trim() === '') return Promise.reject(errorOf(status.UNAVAILABLE, 'no address to call', ''));
    this.callsSent++;
    return new Promise<Buffer>((resolve, reject) => {
      this.client.call(to, path, request, deadlineAt - Date.now(), (outcome) => {
        if (outcome.ok) {
          resolve(outcome.message);
          return;
        }
        const { trailers } = outcome.status;
        reject(
          errorOf(
            outcome.wire.code,
            outcome.wire.details,
            trailers[TRAILER_LEADER] ?? '',
            trailers[TRAILER_REFUSAL_CODE] ?? '',
          ),
        );
      });
    });
  }

  close(): void {
    this.closed = true;
    this.client.close();
  }
}
