// A lean gRPC unary client over node:http2, for the peer calls a write or a read waits on (ReportApplied,
// Heartbeat, ShipSegment, RequestVote, TimeoutNow). Why not grpc-js's client for these: measured here
// (2 shared cores, one unary call at a time to a grpc-js server in another process, TLS off), a grpc-js unary
// call cost its caller 300-470 µs of CPU and the server 190-260 µs, against 165-200 µs and 140-175 µs for the
// same call sent as below, and its round trip 490-550 µs against 350-410 µs; grpc-js builds a resolving,
// retrying, load-balancing and subchannel call with their filters, promises and timers for every call, and
// sends more headers. The wire is gRPC's own (HTTP/2 POST, `application/grpc`, length-prefixed message,
// `grpc-status` in the trailers), so the server side is unchanged and any gRPC server answers it. A
// maintained alternative (@connectrpc/connect-node) layers a transport of its own on node:http2 too; the
// few things a peer call needs are here, each with its bound.
//
// One HTTP/2 session per peer address, opened on first use, dropped when it closes, errs, receives GOAWAY
// or fails a keepalive ping (grpc-js's keepalive: a ping every keepaliveTimeMs, dropped when unanswered
// for keepaliveTimeoutMs), so a partitioned or restarted peer gets a fresh connection on the next call.
// A connection attempt that has not connected within connectTimeoutMs (a SYN into a partition) is dropped
// and counts as failed. A failed connection attempt fails the calls of the next initialReconnectBackoffMs (doubling to
// maxReconnectBackoffMs while attempts keep failing) at once with UNAVAILABLE, as a grpc-js channel in
// TRANSIENT_FAILURE does, instead of dialling again on every heartbeat.
import * as http2 from 'node:http2';
import { StatusCode, type RpcStatus } from '../../engine/rpc.js';
import type { GrpcLimits } from './limits.js';
import { LeanCallGate } from './lean-call-gate.js';
import { rpcStatus } from './status.js';
import { failed, failLater, frame, UnaryAnswer, type LeanOutcome } from './unary-answer.js';

export type { LeanOutcome } from './unary-answer.js';

/** LeanDial opens an HTTP/2 session to `address` (host:port): TLS with the node's credentials, or plaintext. */
export type LeanDial = (address: string) => http2.ClientHttp2Session;

export interface LeanUnaryOptions {
  dial: LeanDial;
  /** headers go on every call (the cluster id); names are lowercase, values ASCII. */
  headers: Readonly<Record<string, string>>;
  limits: GrpcLimits;
}

interface Peer {
  session: http2.ClientHttp2Session;
  calls: number;
  keepalive: NodeJS.Timeout;
}

export class LeanUnaryClient {
  private readonly peers = new Map<string, Peer>();
  private readonly gate: LeanCallGate;
  /** fixedHeaders: every call's headers but its path and timeout, in the order they go out. */
  private readonly fixedHeaders: http2.OutgoingHttpHeaders;

  constructor(private readonly options: LeanUnaryOptions) {
    this.gate = new LeanCallGate(options.limits);
    this.fixedHeaders = {
      [http2.constants.HTTP2_HEADER_METHOD]: 'POST',
      [http2.constants.HTTP2_HEADER_PATH]: '',
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': '',
      ...options.headers,
    };
  }

  /**
   * call sends one unary call and reports its outcome exactly once, never inside call() itself. It returns
   * a cancel function (the outcome is then CANCELLED).
   */
  call(
    to: string,
    path: string,
    request: Buffer,
    deadlineMs: number,
    done: (outcome: LeanOutcome) => void,
  ): () => void {
    const refusal = this.gate.refusal(to, request);
    if (refusal !== null) return failLater(done, refusal);
    const { messageBytesMax } = this.options.limits;
    let peer: Peer;
    let stream: http2.ClientHttp2Stream;
    try {
      peer = this.peerFor(to);
      stream = peer.session.request(this.requestHeaders(path, deadlineMs), REQUEST_OPTIONS);
    } catch (err) {
      return failLater(
        done,
        rpcStatus(StatusCode.UNAVAILABLE, `cannot call ${to}: ${err instanceof Error ? err.message : String(err)}`),
      );
    }
    peer.calls++;
    if (peer.calls === 1) peer.session.ref();
    const call = new ClientCall(stream, peer, to, deadlineMs, messageBytesMax, done);
    (stream as CallStream)[CLIENT_CALL] = call;
    // Shared listener functions that find their call on the stream: no closures per call (a lone reader's unary
    // Get pays this client's per-call work on its critical path).
    stream.on('response', streamResponse);
    stream.on('data', streamData);
    stream.on('trailers', streamTrailers);
    stream.on('error', streamError);
    stream.on('close', streamClose);
    stream.end(frame(request));
    return call.cancel;
  }

  /** requestHeaders: a call's request headers (the fixed ones are copied from one object built once). */
  private requestHeaders(path: string, deadlineMs: number): http2.OutgoingHttpHeaders {
    const headers: http2.OutgoingHttpHeaders = { ...this.fixedHeaders };
    headers[http2.constants.HTTP2_HEADER_PATH] = path;
    headers['grpc-timeout'] = `${Math.max(1, Math.min(deadlineMs, 99_999_999))}m`;
    return headers;
  }

  /** closePeer drops the session to `to` (its calls end UNAVAILABLE). */
  closePeer(to: string): void {
    const peer = this.peers.get(to);
    if (peer) this.drop(to, peer);
    peer?.session.destroy();
  }

  close(): void {
    this.gate.closed = true;
    for (const to of [...this.peers.keys()]) this.closePeer(to);
  }

  private peerFor(to: string): Peer {
    const existing = this.peers.get(to);
    if (existing && !existing.session.closed && !existing.session.destroyed) return existing;
    if (existing) this.drop(to, existing);
    const session = this.options.dial(to);
    const { keepaliveTimeMs, keepaliveTimeoutMs } = this.options.limits;
    const keepalive = setInterval(() => {
      // A destroyed session's 'close' (which stops this timer) comes a tick later; ping() would throw on it.
      if (session.destroyed || session.closed) return;
      const unanswered = setTimeout(() => session.destroy(), keepaliveTimeoutMs);
      unanswered.unref();
      // A session still connecting queues the ping (connectTimeoutMs bounds that wait instead).
      let sent = false;
      try {
        sent = session.ping((err) => {
          clearTimeout(unanswered);
          if (err) session.destroy();
        });
      } catch {
        session.destroy();
      }
      if (!sent) clearTimeout(unanswered);
    }, keepaliveTimeMs);
    keepalive.unref();
    const peer: Peer = { session, calls: 0, keepalive };
    this.peers.set(to, peer);
    let connected = false;
    const connecting = setTimeout(() => {
      // Not connected in time (a SYN into a partition): drop it and back off, as a failed attempt.
      this.gate.failed(to);
      this.drop(to, peer);
      session.destroy();
    }, this.options.limits.connectTimeoutMs);
    connecting.unref();
    session.once('connect', () => {
      connected = true;
      clearTimeout(connecting);
      this.gate.connected(to);
    });
    session.once('close', () => clearTimeout(connecting));
    session.on('error', () => {
      if (!connected) this.gate.failed(to);
      this.drop(to, peer);
    });
    session.on('goaway', () => this.drop(to, peer));
    session.on('close', () => this.drop(to, peer));
    session.unref();
    return peer;
  }

  /** drop forgets `peer` as the session for `to`; calls open on it finish or fail on their own. */
  private drop(to: string, peer: Peer): void {
    clearInterval(peer.keepalive);
    if (this.peers.get(to) === peer) this.peers.delete(to);
    if (!peer.session.closed) peer.session.close();
  }
}

const REQUEST_OPTIONS: http2.ClientSessionRequestOptions = { endStream: false };

/** CLIENT_CALL: the call a stream belongs to, for the shared listeners below. */
const CLIENT_CALL = Symbol('clientCall');
type CallStream = http2.ClientHttp2Stream & { [CLIENT_CALL]?: ClientCall };

function streamResponse(this: CallStream, headers: http2.IncomingHttpHeaders): void {
  this[CLIENT_CALL]?.answer.onHeaders(headers);
}

function streamData(this: CallStream, chunk: Buffer): void {
  this[CLIENT_CALL]?.onData(chunk);
}

function streamTrailers(this: CallStream, trailers: http2.IncomingHttpHeaders): void {
  this[CLIENT_CALL]?.answer.onTrailers(trailers);
}

function streamError(this: CallStream, err: Error): void {
  this[CLIENT_CALL]?.answer.onError(err);
}

function streamClose(this: CallStream): void {
  this[CLIENT_CALL]?.onClose();
}

function callDeadlinePassed(call: ClientCall): void {
  call.stop(rpcStatus(StatusCode.DEADLINE_EXCEEDED, `no answer from ${call.to} within ${call.deadlineMs} ms`));
}

/** ClientCall is one unary call in flight on its stream: its answer, its deadline, its outcome (reported once). */
class ClientCall {
  readonly answer: UnaryAnswer;
  private local: RpcStatus | null = null;
  private settled = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly stream: http2.ClientHttp2Stream,
    private readonly peer: Peer,
    readonly to: string,
    readonly deadlineMs: number,
    private readonly messageBytesMax: number,
    private readonly done: (outcome: LeanOutcome) => void,
  ) {
    this.answer = new UnaryAnswer(messageBytesMax);
    this.timer = setTimeout(callDeadlinePassed, deadlineMs, this);
  }

  /** cancel is what call() returns: the outcome is then CANCELLED. */
  readonly cancel = (): void => this.stop(rpcStatus(StatusCode.CANCELLED, 'call cancelled'));

  /** stop ends the call here with `status` (the first reason wins), unless it has ended already. */
  stop(status: RpcStatus): void {
    if (this.settled || this.local !== null) return;
    this.local = status;
    this.stream.close(http2.constants.NGHTTP2_CANCEL);
  }

  onData(chunk: Buffer): void {
    if (!this.answer.onData(chunk))
      this.stop(rpcStatus(StatusCode.RESOURCE_EXHAUSTED, `answer above messageBytesMax (${this.messageBytesMax})`));
  }

  onClose(): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    const peer = this.peer;
    peer.calls--;
    if (peer.calls === 0 && !peer.session.destroyed) peer.session.unref();
    this.done(this.local !== null ? failed(this.local) : this.answer.outcome(this.to, this.stream.rstCode));
  }
}
