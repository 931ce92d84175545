// Requests multiplexed on one long-lived bidi call, both halves: what svc.store.v1's ReadIndexStream and
// ProposeStream share. A follower asks the leader all the time (read indexes for its reads, the writes it
// forwards); as unary calls each one costs the leader's process about 1-2 ms of CPU on these machines (a new
// HTTP/2 stream, metadata, a deadline timer, status trailers, a loop wake-up), while a message on an open call
// costs a fraction of that. So each follower keeps one call open per leader and method, and sends each request
// as a message with an id and its own deadline; the leader answers each under its id, in any order, with a
// status of its own (a refusal names the leader, as the unary trailer would).
import * as grpc from '@grpc/grpc-js';
import { callerOf, type ServerCallLike } from '../grpc/peer-identity.js';
import { ServerBidiCalls, overOpenRequestLimit } from '../grpc/server-bidi-calls.js';
import { TRAILER_LEADER, UnaryCallError, type CallErrorOf } from '../grpc/unary-call.js';

/** Failure is a request's non-OK answer: a gRPC status code, details and, from a non-leader, the leader's address. */
export interface Failure {
  code: grpc.status;
  details: string;
  leaderHint: string;
}

/** Answered is a decoded answer: its request id, and the answer or the request's failure. */
export type Answered<Answer> = { requestId: number; answer: Answer } | { requestId: number; failure: Failure };

// ---------------------------------------------------------------- server half

export interface RequestStreamServerOptions<Request, Answer> {
  /** method names the call in warnings and errors ("ReadIndexStream"). */
  method: string;
  /** decode reads one request message (it throws on a malformed one, which ends the call). */
  decode(bytes: Buffer): { requestId: number; request: Request };
  /**
   * handle answers one request that arrived at arrivedAt (a UnaryCallError carries a status and a leader hint);
   * peer: the member the call's peer certificate names ('' without one: plaintext), with namesPeer only.
   */
  handle(request: Request, arrivedAt: number, peer: string): Promise<Answer>;
  /** namesPeer: hand `handle` the peer certificate's member name (read once per call: peer-identity.ts caches it). */
  namesPeer?: boolean;
  encodeAnswer(requestId: number, answer: Answer): Uint8Array;
  encodeFailure(requestId: number, failure: Failure): Uint8Array;
  /** openRequestCountMax bounds the requests one call may have open; more are answered RESOURCE_EXHAUSTED. */
  openRequestCountMax: number;
  onWarning?: (message: string) => void;
}

/** RequestStreamServer serves one streaming method and can end its calls (a stopping node must not wait on them). */
export class RequestStreamServer<Request, Answer> {
  private readonly calls = new ServerBidiCalls();

  constructor(private readonly options: RequestStreamServerOptions<Request, Answer>) {}

  get openCallCount(): number {
    return this.calls.size;
  }

  readonly serve = (call: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
    const { options } = this;
    const tracked = this.calls.track(call);
    let openRequests = 0;
    const peer = options.namesPeer === true ? peerName(call) : '';
    const send = (bytes: Uint8Array): void => {
      if (!tracked.ended) call.write(Buffer.from(bytes));
    };
    call.on('data', (bytes: Buffer) => {
      if (tracked.ended) return;
      let decoded: { requestId: number; request: Request };
      try {
        decoded = options.decode(bytes);
      } catch (err) {
        tracked.refuse(`malformed ${options.method} request: ${String(err)}`);
        return;
      }
      const { requestId, request } = decoded;
      if (openRequests >= options.openRequestCountMax) {
        send(
          options.encodeFailure(requestId, {
            code: grpc.status.RESOURCE_EXHAUSTED,
            leaderHint: '',
            details: overOpenRequestLimit(openRequests, options.openRequestCountMax, options.method),
          }),
        );
        return;
      }
      openRequests++;
      let answered: Promise<Answer>;
      try {
        answered = options.handle(request, Date.now(), peer);
      } catch (err) {
        answered = Promise.reject(err);
      }
      answered
        .then(
          (answer) => send(options.encodeAnswer(requestId, answer)),
          (err: unknown) => {
            if (err instanceof UnaryCallError) {
              send(
                options.encodeFailure(requestId, { code: err.code, details: err.details, leaderHint: err.leaderHint }),
              );
              return;
            }
            options.onWarning?.(`Store ${options.method} request failed: ${String(err)}`);
            send(
              options.encodeFailure(requestId, {
                code: grpc.status.INTERNAL,
                details: 'store handler failed',
                leaderHint: '',
              }),
            );
          },
        )
        .finally(() => {
          openRequests--;
        });
    });
  };

  /** endAll ends every open call with UNAVAILABLE (their callers reopen at the next leader). */
  endAll(details: string): void {
    this.calls.endAll(details);
  }
}

/**
 * peerName: the member name of the call's peer certificate, '' when it has none (a plaintext server) or it is
 * not a peer's. The server's gate (peer-gate.ts) has already refused a caller that is not a member.
 */
export function peerName(call: ServerCallLike): string {
  const caller = callerOf(call);
  return caller.identity?.role === 'peer' ? caller.identity.name : '';
}

// ---------------------------------------------------------------- client half

/** Pending is a request not answered yet: what a fallback needs to send it another way. */
export interface Pending<Request, Answer> {
  request: Request;
  deadlineAt: number;
  resolve: (answer: Answer) => void;
  reject: (err: Error) => void;
}

export interface RequestStreamClientOptions<Request, Answer> {
  /** open starts the call (a bidi stream of raw bytes) on the leader's channel. */
  open(): grpc.ClientDuplexStream<Buffer, Buffer>;
  /** encode writes one request message; timeoutMs is what is left of its deadline. */
  encode(requestId: number, request: Request, timeoutMs: number): Uint8Array;
  /** decode reads one answer message (it throws on a malformed one, which ends the call). */
  decode(bytes: Buffer): Answered<Answer>;
  errorOf: CallErrorOf;
  /** idleMs: a call with no open request for this long is ended (the leader may have moved on). */
  idleMs: number;
  /** onUnimplemented: the peer does not serve the method; the open requests are handed back to go another way. */
  onUnimplemented(requests: Array<Pending<Request, Answer>>): void;
}

/**
 * RequestStreamClient sends requests to one address over one open call, opened at the first request and
 * again after a failure. A request fails at its deadline (DEADLINE_EXCEEDED) even if the call lives on, and
 * with the call's status if the call ends first.
 */
export class RequestStreamClient<Request, Answer> {
  private call: grpc.ClientDuplexStream<Buffer, Buffer> | null = null;
  private readonly open = new Map<number, Pending<Request, Answer> & { timer: NodeJS.Timeout }>();
  private nextRequestId = 1;
  private idleTimer: NodeJS.Timeout | null = null;
  /** callsOpened counts the calls started (for metrics and tests: requests share calls). */
  callsOpened = 0;

  constructor(private readonly options: RequestStreamClientOptions<Request, Answer>) {}

  ask(request: Request, deadlineAt: number): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const call = this.call ?? this.start();
      if (this.idleTimer) {
        clearTimeout(this.idleTimer);
        this.idleTimer = null;
      }
      const requestId = this.nextRequestId++;
      const timeoutMs = Math.max(1, Math.ceil(deadlineAt - Date.now()));
      const timer = setTimeout(() => {
        if (!this.open.delete(requestId)) return;
        reject(this.options.errorOf(grpc.status.DEADLINE_EXCEEDED, `not answered within ${timeoutMs} ms`, ''));
        this.idleWhenDone();
      }, timeoutMs);
      this.open.set(requestId, { request, deadlineAt, resolve, reject, timer });
      call.write(Buffer.from(this.options.encode(requestId, request, timeoutMs)));
    });
  }

  /** close ends the call; open requests fail UNAVAILABLE. */
  close(details: string): void {
    const call = this.call;
    this.call = null;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.failAll({ code: grpc.status.UNAVAILABLE, details, leaderHint: '' });
    call?.cancel();
  }

  private start(): grpc.ClientDuplexStream<Buffer, Buffer> {
    const call = this.options.open();
    this.call = call;
    this.callsOpened++;
    call.on('data', (bytes: Buffer) => this.onAnswer(call, bytes));
    call.on('error', (err: grpc.ServiceError) =>
      this.onCallEnded(call, { code: err.code, details: err.details, leaderHint: leaderHintOf(err.metadata) }),
    );
    call.on('end', () =>
      this.onCallEnded(call, { code: grpc.status.UNAVAILABLE, details: 'the leader ended the stream', leaderHint: '' }),
    );
    return call;
  }

  private onAnswer(call: grpc.ClientDuplexStream<Buffer, Buffer>, bytes: Buffer): void {
    let answered: Answered<Answer>;
    try {
      answered = this.options.decode(bytes);
    } catch (err) {
      // An answer we cannot read may belong to any request: end the call, fail them all.
      if (this.call === call) this.close(`malformed answer: ${String(err)}`);
      return;
    }
    const pending = this.open.get(answered.requestId);
    if (!pending) return; // timed out already
    this.open.delete(answered.requestId);
    clearTimeout(pending.timer);
    if ('answer' in answered) pending.resolve(answered.answer);
    else
      pending.reject(
        this.options.errorOf(answered.failure.code, answered.failure.details, answered.failure.leaderHint),
      );
    this.idleWhenDone();
  }

  private onCallEnded(call: grpc.ClientDuplexStream<Buffer, Buffer>, failure: Failure): void {
    if (this.call !== call) return;
    this.call = null;
    if (failure.code === grpc.status.UNIMPLEMENTED) {
      const requests = [...this.open.values()].map(({ timer, ...pending }) => {
        clearTimeout(timer);
        return pending;
      });
      this.open.clear();
      this.options.onUnimplemented(requests);
      return;
    }
    this.failAll(failure);
  }

  private failAll(failure: Failure): void {
    for (const pending of this.open.values()) {
      clearTimeout(pending.timer);
      pending.reject(this.options.errorOf(failure.code, failure.details, failure.leaderHint));
    }
    this.open.clear();
  }

  private idleWhenDone(): void {
    if (this.open.size > 0 || !this.call || this.idleTimer) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.open.size > 0 || !this.call) return;
      const call = this.call;
      this.call = null;
      call.end();
    }, this.options.idleMs);
    this.idleTimer.unref();
  }
}

function leaderHintOf(metadata: grpc.Metadata | undefined): string {
  const hint = metadata?.get(TRAILER_LEADER)[0];
  return typeof hint === 'string' ? hint : '';
}
