// ReadIndexStream (proto/svc/store/v1/store.proto), both halves. A follower's reads need read indexes from the
// leader all the time; as unary calls each one costs the leader's process about 1-2 ms of CPU on these machines
// (a new HTTP/2 stream, metadata, a deadline timer, status trailers, and a loop wake-up), while a message on an
// open stream costs a fraction of that. So each follower keeps one call open per leader and sends its requests
// on it, each with an id and its own deadline; the leader answers each as ReadIndex would, in any order.
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { TRAILER_LEADER, UnaryCallError, type CallErrorOf } from '../grpc/unary-call.js';

/** ReadIndexAnswer is what a leader answers a read-index request with. */
export interface ReadIndexAnswer { commitSeq: number; term: number }

/** UINT32_MAX bounds ReadIndexStreamRequest.timeout_ms. */
const UINT32_MAX = 0xffff_ffff;

// ---------------------------------------------------------------- server half

export interface ReadIndexStreamServerOptions {
  /** readIndex answers as the ReadIndex method would (a UnaryCallError carries a status and a leader hint). */
  readIndex(deadlineAt: number): Promise<ReadIndexAnswer>;
  /** callDeadlineMs bounds a request that came without its own timeout. */
  callDeadlineMs: number;
  /** openRequestCountMax bounds the requests one call may have open; more are answered RESOURCE_EXHAUSTED. */
  openRequestCountMax: number;
  onWarning?: (message: string) => void;
}

/** ReadIndexStreamServer serves ReadIndexStream calls and can end them all (a stopping node must not wait on them). */
export class ReadIndexStreamServer {
  private readonly calls = new Set<grpc.ServerDuplexStream<Buffer, Buffer>>();

  constructor(private readonly options: ReadIndexStreamServerOptions) {}

  get openCallCount(): number {
    return this.calls.size;
  }

  readonly serve = (call: grpc.ServerDuplexStream<Buffer, Buffer>): void => {
    this.calls.add(call);
    let openRequests = 0;
    let ended = false;
    const finish = (): void => {
      if (ended) return;
      ended = true;
      this.calls.delete(call);
    };
    const answer = (response: pb.ReadIndexStreamResponse): void => {
      if (!ended) call.write(Buffer.from(pb.ReadIndexStreamResponse.encode(response).finish()));
    };
    call.on('data', (bytes: Buffer) => {
      if (ended) return;
      let request: pb.ReadIndexStreamRequest;
      try {
        request = pb.ReadIndexStreamRequest.decode(bytes);
      } catch (err) {
        finish();
        call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `malformed ReadIndexStreamRequest: ${String(err)}` });
        return;
      }
      const requestId = request.requestId;
      if (openRequests >= this.options.openRequestCountMax) {
        answer(failure(requestId, grpc.status.RESOURCE_EXHAUSTED, `${openRequests} read-index requests open on this call, at openRequestCountMax ${this.options.openRequestCountMax}`));
        return;
      }
      openRequests++;
      const now = Date.now();
      const timeoutMs = request.timeoutMs > 0 ? Math.min(request.timeoutMs, this.options.callDeadlineMs) : this.options.callDeadlineMs;
      this.options.readIndex(now + timeoutMs).then(
        ({ commitSeq, term }) => answer({ requestId, statusCode: grpc.status.OK, details: '', leaderHint: '', commitSeq, term }),
        (err: unknown) => {
          if (err instanceof UnaryCallError) {
            answer(failure(requestId, err.code, err.details, err.leaderHint));
            return;
          }
          this.options.onWarning?.(`Store ReadIndexStream request failed: ${String(err)}`);
          answer(failure(requestId, grpc.status.INTERNAL, 'store handler failed'));
        },
      ).finally(() => { openRequests--; });
    });
    call.on('end', () => {
      if (ended) return;
      finish();
      call.end();
    });
    call.on('error', finish);
    call.on('close', finish);
    call.on('cancelled', finish);
  };

  /** endAll ends every open call with UNAVAILABLE (their callers reopen at the next leader). */
  endAll(details: string): void {
    for (const call of [...this.calls]) {
      this.calls.delete(call);
      call.emit('error', { code: grpc.status.UNAVAILABLE, details });
    }
  }
}

function failure(requestId: number, code: grpc.status, details: string, leaderHint = ''): pb.ReadIndexStreamResponse {
  return { requestId, statusCode: code, details, leaderHint, commitSeq: 0, term: 0 };
}

// ---------------------------------------------------------------- client half

interface OpenRequest {
  resolve: (answer: ReadIndexAnswer) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

export interface ReadIndexStreamClientOptions {
  /** open starts the call (a bidi stream of raw bytes) on the leader's channel. */
  open(): grpc.ClientDuplexStream<Buffer, Buffer>;
  errorOf: CallErrorOf;
  /** idleMs: a call with no open request for this long is ended (the leader may have moved on). */
  idleMs: number;
  /** onUnimplemented: the peer does not serve ReadIndexStream; the requests open are handed back to retry another way. */
  onUnimplemented(requests: Array<{ deadlineAt: number; resolve: (answer: ReadIndexAnswer) => void; reject: (err: Error) => void }>): void;
}

/**
 * ReadIndexStreamClient asks one address for read indexes over one open call, opened at the first request
 * and again after a failure. A request fails at its deadline (DEADLINE_EXCEEDED) even if the call lives on,
 * and with the call's status if the call ends first.
 */
export class ReadIndexStreamClient {
  private call: grpc.ClientDuplexStream<Buffer, Buffer> | null = null;
  private readonly open = new Map<number, OpenRequest & { deadlineAt: number }>();
  private nextRequestId = 1;
  private idleTimer: NodeJS.Timeout | null = null;
  /** callsOpened counts the calls started (for tests: requests share calls). */
  callsOpened = 0;

  constructor(private readonly options: ReadIndexStreamClientOptions) {}

  ask(deadlineAt: number): Promise<ReadIndexAnswer> {
    return new Promise<ReadIndexAnswer>((resolve, reject) => {
      const call = this.call ?? this.start();
      if (this.idleTimer) {
        clearTimeout(this.idleTimer);
        this.idleTimer = null;
      }
      const requestId = this.nextRequestId++;
      const timeoutMs = Math.max(1, Math.ceil(deadlineAt - Date.now()));
      const timer = setTimeout(() => {
        if (!this.open.delete(requestId)) return;
        reject(this.options.errorOf(grpc.status.DEADLINE_EXCEEDED, `read index not answered within ${timeoutMs} ms`, ''));
        this.idleWhenDone();
      }, timeoutMs);
      this.open.set(requestId, { resolve, reject, timer, deadlineAt });
      call.write(Buffer.from(pb.ReadIndexStreamRequest.encode({ requestId, timeoutMs: Math.min(UINT32_MAX, timeoutMs) }).finish()));
    });
  }

  /** close ends the call; open requests fail UNAVAILABLE. */
  close(details: string): void {
    const call = this.call;
    this.call = null;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.failAll(grpc.status.UNAVAILABLE, details, '');
    call?.cancel();
  }

  private start(): grpc.ClientDuplexStream<Buffer, Buffer> {
    const call = this.options.open();
    this.call = call;
    this.callsOpened++;
    call.on('data', (bytes: Buffer) => this.onAnswer(call, bytes));
    call.on('error', (err: grpc.ServiceError) => this.onCallEnded(call, err.code, err.details, leaderHintOf(err.metadata)));
    call.on('end', () => this.onCallEnded(call, grpc.status.UNAVAILABLE, 'the leader ended the read-index stream', ''));
    return call;
  }

  private onAnswer(call: grpc.ClientDuplexStream<Buffer, Buffer>, bytes: Buffer): void {
    let response: pb.ReadIndexStreamResponse;
    try {
      response = pb.ReadIndexStreamResponse.decode(bytes);
    } catch (err) {
      // An answer we cannot read may belong to any request: end the call, fail them all.
      if (this.call === call) this.close(`malformed ReadIndexStreamResponse: ${String(err)}`);
      return;
    }
    const request = this.open.get(response.requestId);
    if (!request) return; // timed out already
    this.open.delete(response.requestId);
    clearTimeout(request.timer);
    if (response.statusCode === grpc.status.OK) request.resolve({ commitSeq: response.commitSeq, term: response.term });
    else request.reject(this.options.errorOf(response.statusCode, response.details, response.leaderHint));
    this.idleWhenDone();
  }

  private onCallEnded(call: grpc.ClientDuplexStream<Buffer, Buffer>, code: grpc.status, details: string, leaderHint: string): void {
    if (this.call !== call) return;
    this.call = null;
    if (code === grpc.status.UNIMPLEMENTED) {
      const requests = [...this.open.values()].map(({ timer, deadlineAt, resolve, reject }) => {
        clearTimeout(timer);
        return { deadlineAt, resolve, reject };
      });
      this.open.clear();
      this.options.onUnimplemented(requests);
      return;
    }
    this.failAll(code, details, leaderHint);
  }

  private failAll(code: grpc.status, details: string, leaderHint: string): void {
    for (const request of this.open.values()) {
      clearTimeout(request.timer);
      request.reject(this.options.errorOf(code, details, leaderHint));
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
