// The call plumbing the Store and Admin client pools share: one channel per address, each unary call
// under a deadline, raw bytes both ways (decoding is the caller's), and a failure turned into the
// pool's own error type with the leader hint a refusing member put in the trailers.
import * as grpc from '@grpc/grpc-js';
import { grpcTarget } from './peer-resolver.js';

/** TRAILER_LEADER names the leader's gRPC address on a refusal from a member that is not the leader. */
export const TRAILER_LEADER = 'x-svc-leader';

/**
 * TRAILER_REFUSAL_CODE carries a refusal's typed code (an admin op's AdminResultCode, say), so a
 * caller decides what to do from the code, never by reading the details text.
 */
export const TRAILER_REFUSAL_CODE = 'x-svc-code';

/**
 * UnaryCallError is a failed call: a grpc status code, its details, and the leader hint when known. Each
 * pool subclasses it, so a handler can tell whose call failed.
 */
export class UnaryCallError extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
    readonly leaderHint = '',
    /** refusalCode: the refusal's typed code from TRAILER_REFUSAL_CODE, '' when it sent none */
    readonly refusalCode = '',
  ) {
    super(`${grpc.status[code] ?? code}: ${details}`);
    this.name = new.target.name;
  }
}

/** CallErrorOf builds a pool's typed error from a failed call's status code, details, leader hint and refusal code. */
export type CallErrorOf = (code: grpc.status, details: string, leaderHint: string, refusalCode?: string) => Error;

export interface UnaryChannelsOptions {
  credentials: grpc.ChannelCredentials;
  channelOptions?: grpc.ChannelOptions;
  /** poolName names the pool in the error a call after close() gets ("store client pool"). */
  poolName: string;
  errorOf: CallErrorOf;
}

const identity = (bytes: Buffer): Buffer => bytes;

/** UnaryChannels keeps one grpc-js channel per address and makes byte-in, byte-out unary calls on them. */
export class UnaryChannels {
  private readonly clients = new Map<string, grpc.Client>();
  private closed = false;

  constructor(private readonly options: UnaryChannelsOptions) {}

  /** call resolves the response bytes, or rejects with the pool's error (UNAVAILABLE when it cannot dial). */
  call(to: string, path: string, request: Buffer, deadlineAt: number): Promise<Buffer> {
    const { errorOf } = this.options;
    if (this.closed) return Promise.reject(errorOf(grpc.status.UNAVAILABLE, `${this.options.poolName} is closed`, ''));
    let channel: grpc.Client;
    try {
      channel = this.clientFor(to);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<Buffer>((resolve, reject) => {
      channel.makeUnaryRequest<Buffer, Buffer>(
        path,
        identity,
        identity,
        request,
        new grpc.Metadata(),
        { deadline: deadlineAt },
        (err, value) => {
          if (err) {
            const hint = err.metadata?.get(TRAILER_LEADER)[0];
            const refusalCode = err.metadata?.get(TRAILER_REFUSAL_CODE)[0];
            reject(
              errorOf(
                err.code,
                err.details,
                typeof hint === 'string' ? hint : '',
                typeof refusalCode === 'string' ? refusalCode : '',
              ),
            );
            return;
          }
          resolve(value ?? Buffer.alloc(0));
        },
      );
    });
  }

  /** openStream starts a bidi-streaming call of raw bytes on the channel to `to` (no deadline: the caller bounds its requests). */
  openStream(to: string, path: string): grpc.ClientDuplexStream<Buffer, Buffer> {
    if (this.closed) throw this.options.errorOf(grpc.status.UNAVAILABLE, `${this.options.poolName} is closed`, '');
    return this.clientFor(to).makeBidiStreamRequest<Buffer, Buffer>(path, identity, identity, new grpc.Metadata());
  }

  /**
   * openServerStream starts a server-streaming call of raw bytes under a deadline. Reading it throws grpc-js's
   * ServiceError on failure: callErrorOf turns that into the pool's error.
   */
  openServerStream(to: string, path: string, request: Buffer, deadlineAt: number): grpc.ClientReadableStream<Buffer> {
    if (this.closed) throw this.options.errorOf(grpc.status.UNAVAILABLE, `${this.options.poolName} is closed`, '');
    return this.clientFor(to).makeServerStreamRequest<Buffer, Buffer>(
      path,
      identity,
      identity,
      request,
      new grpc.Metadata(),
      { deadline: deadlineAt },
    );
  }

  /** callErrorOf turns what a call threw (a grpc-js ServiceError) into the pool's error, leader hint included. */
  callErrorOf(err: unknown): Error {
    const e = err as Partial<grpc.ServiceError>;
    if (typeof e?.code !== 'number') return this.options.errorOf(grpc.status.UNKNOWN, String(err), '');
    const hint = e.metadata?.get(TRAILER_LEADER)[0];
    const refusalCode = e.metadata?.get(TRAILER_REFUSAL_CODE)[0];
    return this.options.errorOf(
      e.code,
      e.details ?? '',
      typeof hint === 'string' ? hint : '',
      typeof refusalCode === 'string' ? refusalCode : '',
    );
  }

  /** clientFor is the channel to `to`, dialled at first use (UNAVAILABLE, as the pool's error, when the address is bad). */
  private clientFor(to: string): grpc.Client {
    let client = this.clients.get(to);
    if (!client) {
      try {
        client = new grpc.Client(
          grpcTarget(to, this.options.channelOptions),
          this.options.credentials,
          this.options.channelOptions,
        );
      } catch (err) {
        throw this.options.errorOf(grpc.status.UNAVAILABLE, `cannot dial ${JSON.stringify(to)}: ${String(err)}`, '');
      }
      this.clients.set(to, client);
    }
    return client;
  }

  /** close closes every channel; later calls reject with UNAVAILABLE. */
  close(): void {
    this.closed = true;
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}
