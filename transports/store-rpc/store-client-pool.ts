// The client half of svc.store.v1.Store (proto/svc/store/v1/store.proto): what a member that is not the
// leader uses to forward writes and ask for read indexes, and what a client holding a cluster certificate
// uses to write (propose at the leader) and read (get at any member). The server half is store-service.ts.
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { UnaryChannels } from '../grpc/unary-call.js';
import { LeanUnaryCalls, type LeanDialOptions, type UnaryCaller } from '../grpc/lean-unary-calls.js';
import { DEFAULT_PROPOSE_BATCH_COUNT_MAX, DEFAULT_STREAM_IDLE_MS } from './limits.js';
import { RequestStreamClient, type Answered, type Pending } from './request-stream.js';
import { STORE_METHODS, StoreCallError, type GetAnswer, type ReadIndexAnswer } from './store-calls.js';

export interface StoreClientPoolOptions {
  /** credentials and channelOptions make the grpc-js channels: the streams, and the unary calls when lean is unset. */
  credentials: grpc.ChannelCredentials;
  channelOptions: grpc.ChannelOptions;
  /**
   * lean, when set, carries the unary calls (Propose, ProposeBatch, ReadIndex, Get) on the lean HTTP/2 client
   * (transports/grpc/lean-unary.ts: about half grpc-js's CPU per call): its dial must have the same security as
   * `credentials` and its headers what `channelOptions`' interceptors add (storeClientTransport builds both).
   */
  lean?: LeanDialOptions;
  /** proposeBatchCountMax bounds the proposals coalesced into one batch (default DEFAULT_PROPOSE_BATCH_COUNT_MAX). */
  proposeBatchCountMax?: number;
  /** streamIdleMs ends a ReadIndexStream or ProposeStream call idle this long (default DEFAULT_STREAM_IDLE_MS). */
  streamIdleMs?: number;
  /** overStreams: false sends everything as unary calls (the benches compare both). Default true. */
  overStreams?: boolean;
}

interface QueuedProposal {
  command: Uint8Array;
  /** requestId is the command's own request id, sent beside it ('' leaves the leader to decode the command). */
  requestId: string;
  deadlineAt: number;
  resolve: (answer: pb.ProposeResponse) => void;
  reject: (err: Error) => void;
}

/** UINT32_MAX bounds the timeout_ms fields. */
const UINT32_MAX = 0xffff_ffff;

/**
 * viewOf views a just-encoded request as a Buffer without copying it (Buffer.from(uint8Array) copies; the
 * encoder's output is fresh and never written again). A write's request is then copied once, into its frame.
 */
const viewOf = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

const errorOf = (code: grpc.status, details: string, leaderHint: string): StoreCallError =>
  new StoreCallError(code, details, leaderHint);

/** timeoutMsOf is what is left of a deadline, as a timeout_ms field (at least 1). */
const timeoutMsOf = (deadlineAt: number, now: number): number =>
  Math.min(UINT32_MAX, Math.max(1, Math.ceil(deadlineAt - now)));

/**
 * StoreClientPool keeps one channel per leader address and runs Store calls under a deadline.
 * - Proposals to one address made in the same event-loop turn go out together, each still answered alone:
 *   one ProposeStream request on an open call, or, to a peer without it, one ProposeBatch call (and single
 *   Propose calls to a peer without that). A follower forwarding many writes costs the leader one message per
 *   turn instead of a call per write.
 * - Read indexes go as messages on one open ReadIndexStream call per address; to a peer without it, as unary
 *   ReadIndex calls.
 * A method a peer answers UNIMPLEMENTED (an older build) is not tried on that peer again.
 */
export class StoreClientPool {
  private readonly channels: UnaryChannels;
  /** unary carries the unary calls: the lean client when asked for, else the grpc-js channels. */
  private readonly unary: UnaryCaller;
  private readonly lean: LeanUnaryCalls | null;
  private readonly queued = new Map<string, QueuedProposal[]>();
  private readonly batchUnsupported = new Set<string>();
  private readonly batchCountMax: number;
  private readonly readIndexStreams: StreamsByAddress<number, ReadIndexAnswer>;
  private readonly getStreams: StreamsByAddress<string, GetAnswer>;
  private readonly proposeStreams: StreamsByAddress<QueuedProposal[], pb.ProposeItemAnswer[]>;
  private readonly overStreams: boolean;
  private closed = false;
  /**
   * callCounts counts what went out, per kind (how well requests share calls, for metrics and tests): unary
   * `propose` and `proposeBatch` calls, `proposeStream` requests, `readIndex` requests by either transport and,
   * of those, `readIndexUnary` calls.
   */
  readonly callCounts = {
    propose: 0,
    proposeBatch: 0,
    proposeStream: 0,
    readIndex: 0,
    readIndexUnary: 0,
    get: 0,
    getUnary: 0,
  };

  constructor(options: StoreClientPoolOptions) {
    this.batchCountMax = options.proposeBatchCountMax ?? DEFAULT_PROPOSE_BATCH_COUNT_MAX;
    this.overStreams = options.overStreams ?? true;
    this.channels = new UnaryChannels({
      credentials: options.credentials,
      channelOptions: options.channelOptions,
      poolName: 'store client pool',
      errorOf,
    });
    this.lean = options.lean ? new LeanUnaryCalls({ ...options.lean, poolName: 'store client pool', errorOf }) : null;
    this.unary = this.lean ?? this.channels;
    const idleMs = options.streamIdleMs ?? DEFAULT_STREAM_IDLE_MS;
    this.readIndexStreams = new StreamsByAddress(this.channels, STORE_METHODS.readIndexStream, idleMs, {
      encode: (requestId, term, timeoutMs) => pb.ReadIndexStreamRequest.encode({ requestId, timeoutMs, term }).finish(),
      decode: (bytes) => {
        const r = pb.ReadIndexStreamResponse.decode(bytes);
        return answered(r, { commitSeq: r.commitSeq, term: r.term });
      },
      fallback: (to, requests) => {
        for (const r of requests) this.readIndexUnary(to, r.deadlineAt, r.request).then(r.resolve, r.reject);
      },
    });
    this.getStreams = new StreamsByAddress(this.channels, STORE_METHODS.getStream, idleMs, {
      encode: (requestId, key, timeoutMs) => pb.GetStreamRequest.encode({ requestId, timeoutMs, key }).finish(),
      decode: (bytes) => {
        const r = pb.GetStreamResponse.decode(bytes);
        return answered(r, { found: r.found, valueJson: r.valueJson, version: r.version });
      },
      fallback: (to, requests) => {
        for (const r of requests) this.getUnary(to, r.request, r.deadlineAt).then(r.resolve, r.reject);
      },
    });
    this.proposeStreams = new StreamsByAddress(this.channels, STORE_METHODS.proposeStream, idleMs, {
      encode: (requestId, queue) => {
        const now = Date.now();
        return pb.ProposeStreamRequest.encode({
          requestId,
          items: queue.map((p) => ({
            command: p.command,
            timeoutMs: timeoutMsOf(p.deadlineAt, now),
            requestId: p.requestId,
          })),
        }).finish();
      },
      decode: (bytes) => {
        const r = pb.ProposeStreamResponse.decode(bytes);
        return answered(r, r.answers);
      },
      fallback: (to, requests) => {
        for (const r of requests) this.proposeUnary(to, r.request);
      },
    });
  }

  /**
   * propose commits one command at the leader `to`; it goes with the other proposals of this loop turn. requestId,
   * the command's own, travels beside it so the leader need not decode the command to find it (store/command.ts).
   */
  propose(to: string, command: Uint8Array, deadlineAt: number, requestId = ''): Promise<pb.ProposeResponse> {
    if (this.closed) return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, 'store client pool is closed'));
    // Nothing can join it (a batch of one): it goes now, without a queue or a wait for the turn's end, and as a
    // unary call straight from here when that is how it goes.
    if (this.batchCountMax <= 1) {
      if (!this.overStreams || !this.proposeStreams.supported(to))
        return this.proposeOne(to, { command, requestId, deadlineAt });
      return new Promise<pb.ProposeResponse>((resolve, reject) =>
        this.send(to, [{ command, requestId, deadlineAt, resolve, reject }]),
      );
    }
    return new Promise<pb.ProposeResponse>((resolve, reject) => {
      let queue = this.queued.get(to);
      if (!queue) {
        queue = [];
        this.queued.set(to, queue);
        // After this turn's I/O callbacks: the proposals they make join this one.
        setImmediate(() => this.flush(to, queue!));
      }
      queue.push({ command, requestId, deadlineAt, resolve, reject });
      if (queue.length >= this.batchCountMax) this.flush(to, queue);
    });
  }

  /**
   * readIndex asks the leader `to` for a read index: a message on the open ReadIndexStream call, or a unary call to
   * an old peer. term: this member's term as it asks (0 = none), which makes it one ack of the leader's round for
   * the reads this request carries — only reads that began before this call (store.proto, ReadIndexRequest).
   */
  readIndex(to: string, deadlineAt: number, term = 0): Promise<ReadIndexAnswer> {
    if (this.closed) return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, 'store client pool is closed'));
    this.callCounts.readIndex++;
    if (!this.overStreams || !this.readIndexStreams.supported(to)) return this.readIndexUnary(to, deadlineAt, term);
    return this.readIndexStreams.ask(to, term, deadlineAt);
  }

  /**
   * get reads one key at the member `to`, as that member's store reads it (linearizably): a message on the open
   * GetStream call to it, or a unary Get call to a member without it (or with overStreams false).
   */
  get(to: string, key: string, deadlineAt: number): Promise<GetAnswer> {
    if (this.closed) return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, 'store client pool is closed'));
    this.callCounts.get++;
    if (!this.overStreams || !this.getStreams.supported(to)) return this.getUnary(to, key, deadlineAt);
    return this.getStreams.ask(to, key, deadlineAt);
  }

  private async getUnary(to: string, key: string, deadlineAt: number): Promise<GetAnswer> {
    this.callCounts.getUnary++;
    // A view, not a copy: the unary client frames (copies) the request itself.
    const bytes = await this.unary.call(
      to,
      STORE_METHODS.get,
      viewOf(pb.GetRequest.encode({ key }).finish()),
      deadlineAt,
    );
    try {
      return pb.GetResponse.decode(bytes);
    } catch (err) {
      throw new StoreCallError(grpc.status.INTERNAL, `malformed GetResponse from ${to}: ${String(err)}`);
    }
  }

  /** readIndexStreamCalls: the ReadIndexStream calls opened so far, over every address. */
  get readIndexStreamCalls(): number {
    return this.readIndexStreams.callsOpened;
  }

  /** proposeStreamCalls: the ProposeStream calls opened so far, over every address. */
  get proposeStreamCalls(): number {
    return this.proposeStreams.callsOpened;
  }

  close(): void {
    this.closed = true;
    const closed = new StoreCallError(grpc.status.UNAVAILABLE, 'store client pool is closed');
    for (const queue of this.queued.values()) for (const p of queue) p.reject(closed);
    this.queued.clear();
    this.readIndexStreams.close('store client pool is closed');
    this.getStreams.close('store client pool is closed');
    this.proposeStreams.close('store client pool is closed');
    this.channels.close();
    this.lean?.close();
  }

  /**
   * unaryClient names what carries the unary calls: the lean client on node:http2 ('lean'), the lean client on
   * transports/h2's framing ('h2'), or grpc-js's.
   */
  get unaryClient(): 'lean' | 'h2' | 'grpc-js' {
    if (this.lean === null) return 'grpc-js';
    return this.lean.framing === 'h2' ? 'h2' : 'lean';
  }

  /** leanCalls counts the unary calls the lean client carried (0 on grpc-js's). */
  get leanCalls(): number {
    return this.lean?.callsSent ?? 0;
  }

  private flush(to: string, queue: QueuedProposal[]): void {
    if (this.queued.get(to) !== queue) return; // flushed already (it filled up)
    this.queued.delete(to);
    this.send(to, queue);
  }

  /** send sends a turn's proposals: one ProposeStream request, or unary calls. */
  private send(to: string, queue: QueuedProposal[]): void {
    if (!this.overStreams || !this.proposeStreams.supported(to)) {
      this.proposeUnary(to, queue);
      return;
    }
    this.callCounts.proposeStream++;
    this.proposeStreams.ask(to, queue, Math.max(...queue.map((p) => p.deadlineAt))).then(
      (answers) => settle(to, 'ProposeStreamResponse', queue, answers),
      (err: unknown) => {
        for (const p of queue) p.reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  /** proposeUnary sends a turn's proposals as one ProposeBatch call, or each alone to a peer without it. */
  private proposeUnary(to: string, queue: QueuedProposal[]): void {
    if (queue.length === 1 || this.batchUnsupported.has(to)) {
      this.proposeEachAlone(to, queue);
      return;
    }
    const now = Date.now();
    const callDeadlineAt = Math.max(...queue.map((p) => p.deadlineAt));
    const items = queue.map((p) => ({
      command: p.command,
      timeoutMs: timeoutMsOf(p.deadlineAt, now),
      requestId: p.requestId,
    }));
    this.callCounts.proposeBatch++;
    this.unary
      .call(to, STORE_METHODS.proposeBatch, viewOf(pb.ProposeBatchRequest.encode({ items }).finish()), callDeadlineAt)
      .then(
        (bytes) => {
          let answers: pb.ProposeItemAnswer[];
          try {
            answers = pb.ProposeBatchResponse.decode(bytes).answers;
          } catch (err) {
            const failure = new StoreCallError(
              grpc.status.INTERNAL,
              `malformed ProposeBatchResponse from ${to}: ${String(err)}`,
            );
            for (const p of queue) p.reject(failure);
            return;
          }
          settle(to, 'ProposeBatchResponse', queue, answers);
        },
        (err: unknown) => {
          if (err instanceof StoreCallError && err.code === grpc.status.UNIMPLEMENTED) {
            this.batchUnsupported.add(to);
            this.proposeEachAlone(to, queue);
            return;
          }
          for (const p of queue) p.reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
  }

  private proposeEachAlone(to: string, queue: QueuedProposal[]): void {
    for (const p of queue) this.proposeOne(to, p).then(p.resolve, p.reject);
  }

  private async proposeOne(
    to: string,
    proposal: Pick<QueuedProposal, 'command' | 'requestId' | 'deadlineAt'>,
  ): Promise<pb.ProposeResponse> {
    this.callCounts.propose++;
    const bytes = await this.unary.call(
      to,
      STORE_METHODS.propose,
      viewOf(pb.ProposeRequest.encode({ command: proposal.command, requestId: proposal.requestId }).finish()),
      proposal.deadlineAt,
    );
    try {
      return pb.ProposeResponse.decode(bytes);
    } catch (err) {
      throw new StoreCallError(grpc.status.INTERNAL, `malformed ProposeResponse from ${to}: ${String(err)}`);
    }
  }

  private async readIndexUnary(to: string, deadlineAt: number, term: number): Promise<ReadIndexAnswer> {
    this.callCounts.readIndexUnary++;
    const bytes = await this.unary.call(
      to,
      STORE_METHODS.readIndex,
      Buffer.from(pb.ReadIndexRequest.encode({ term }).finish()),
      deadlineAt,
    );
    try {
      return pb.ReadIndexResponse.decode(bytes);
    } catch (err) {
      throw new StoreCallError(grpc.status.INTERNAL, `malformed ReadIndexResponse from ${to}: ${String(err)}`);
    }
  }
}

/** settle answers each queued proposal with its own answer, in order; a wrong count fails them all. */
function settle(
  to: string,
  what: string,
  queue: readonly QueuedProposal[],
  answers: readonly pb.ProposeItemAnswer[],
): void {
  if (answers.length !== queue.length) {
    const failure = new StoreCallError(
      grpc.status.INTERNAL,
      `${what} from ${to} has ${answers.length} answers for ${queue.length} commands`,
    );
    for (const p of queue) p.reject(failure);
    return;
  }
  queue.forEach((p, i) => {
    const answer = answers[i]!;
    if (answer.statusCode === grpc.status.OK) p.resolve({ seq: answer.seq, result: answer.result });
    else p.reject(new StoreCallError(answer.statusCode, answer.details, answer.leaderHint));
  });
}

/** answered reads a stream answer's status: OK with the answer, or the request's failure. */
function answered<Answer>(
  response: { requestId: number; statusCode: number; details: string; leaderHint: string },
  answer: Answer,
): Answered<Answer> {
  const { requestId, statusCode, details, leaderHint } = response;
  return statusCode === grpc.status.OK
    ? { requestId, answer }
    : { requestId, failure: { code: statusCode, details, leaderHint } };
}

interface StreamCodec<Request, Answer> {
  encode(requestId: number, request: Request, timeoutMs: number): Uint8Array;
  decode(bytes: Buffer): Answered<Answer>;
  /** fallback sends the requests open when a peer answered UNIMPLEMENTED another way. */
  fallback(to: string, requests: Array<Pending<Request, Answer>>): void;
}

/** StreamsByAddress keeps one RequestStreamClient per address for one streaming method, and the peers without it. */
class StreamsByAddress<Request, Answer> {
  private readonly clients = new Map<string, RequestStreamClient<Request, Answer>>();
  private readonly unsupported = new Set<string>();
  /** dropped counts the calls opened by clients since dropped (an address found without the method), so callsOpened never goes down. */
  private dropped = 0;

  constructor(
    private readonly channels: UnaryChannels,
    private readonly path: string,
    private readonly idleMs: number,
    private readonly codec: StreamCodec<Request, Answer>,
  ) {}

  supported(to: string): boolean {
    return !this.unsupported.has(to);
  }

  ask(to: string, request: Request, deadlineAt: number): Promise<Answer> {
    let client = this.clients.get(to);
    if (!client) {
      client = new RequestStreamClient<Request, Answer>({
        open: () => this.channels.openStream(to, this.path),
        encode: this.codec.encode,
        decode: this.codec.decode,
        errorOf,
        idleMs: this.idleMs,
        onUnimplemented: (requests) => {
          this.unsupported.add(to);
          const gone = this.clients.get(to);
          if (gone) this.dropped += gone.callsOpened;
          this.clients.delete(to);
          this.codec.fallback(to, requests);
        },
      });
      this.clients.set(to, client);
    }
    return client.ask(request, deadlineAt);
  }

  get callsOpened(): number {
    let opened = this.dropped;
    for (const client of this.clients.values()) opened += client.callsOpened;
    return opened;
  }

  close(details: string): void {
    for (const client of this.clients.values()) client.close(details);
    this.clients.clear();
  }
}
