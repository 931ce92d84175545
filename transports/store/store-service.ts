// The svc.store.v1.Store gRPC service (proto/svc/store/v1/store.proto): the server half, served on
// the peer mTLS server beside WalShipping, and the client half a follower uses to reach the leader.
// grpc-js moves raw bytes (identity serializers) and decoding happens here, so a malformed request
// is INVALID_ARGUMENT with a reason instead of grpc-js's generic error.
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { decodeCommand, resultFromMessage, resultToMessage, type CommandResult, type StoreCommand } from './command.js';
import { TRAILER_LEADER, UnaryCallError, UnaryChannels } from '../grpc/unary-call.js';
import { DEFAULT_STORE_LIMITS } from './limits.js';
import { ReadIndexStreamClient, ReadIndexStreamServer, type ReadIndexAnswer } from './read-index-stream.js';

export { TRAILER_LEADER };

/** StoreCallError is a Store call's failure: a grpc status code, its details, and a leader hint when known. */
export class StoreCallError extends UnaryCallError {}

/** StoreServiceHandler decides the answers; the service only decodes, checks and encodes. */
export interface StoreServiceHandler {
  /** propose commits a command on this node as the leader (or throws StoreCallError). */
  propose(command: StoreCommand, deadlineAt: number): Promise<{ seq: number; result: CommandResult }>;
  /** readIndex answers this leader's commit seqno once it has committed an entry of its term. */
  readIndex(deadlineAt: number): Promise<{ commitSeq: number; term: number }>;
}

export interface StoreServiceOptions {
  handler: StoreServiceHandler;
  /** commandBytesMax bounds the command a caller may send. */
  commandBytesMax: number;
  /** callDeadlineMs bounds a call that arrived without a deadline. */
  callDeadlineMs: number;
  /** proposeBatchCountMax bounds the commands of one ProposeBatch call. */
  proposeBatchCountMax: number;
  /** readIndexStreamOpenRequestCountMax bounds the requests open on one ReadIndexStream call. */
  readIndexStreamOpenRequestCountMax: number;
  onWarning?: (message: string) => void;
}

const identity = (bytes: Buffer): Buffer => bytes;

const METHODS = {
  propose: pb.StoreService.propose.path,
  readIndex: pb.StoreService.readIndex.path,
  proposeBatch: pb.StoreService.proposeBatch.path,
  readIndexStream: pb.StoreService.readIndexStream.path,
} as const;

/** storeServiceDefinition registers the Store paths with byte-for-byte serializers. */
export function storeServiceDefinition(): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  for (const [name, path] of Object.entries(METHODS)) {
    const streaming = name === 'readIndexStream';
    definition[name] = {
      path, requestStream: streaming, responseStream: streaming,
      requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity,
    };
  }
  return definition;
}

/** StoreService is the server half: the implementation to register, and a way to end its open streams. */
export interface StoreService {
  implementation: grpc.UntypedServiceImplementation;
  /** endStreams ends every open ReadIndexStream call with UNAVAILABLE (before the server stops: they never end alone). */
  endStreams(details: string): void;
  /** openStreamCount: the ReadIndexStream calls open now. */
  openStreamCount(): number;
}

export function storeService(options: StoreServiceOptions): StoreService {
  const streams = new ReadIndexStreamServer({
    readIndex: (deadlineAt) => options.handler.readIndex(deadlineAt),
    callDeadlineMs: options.callDeadlineMs,
    openRequestCountMax: options.readIndexStreamOpenRequestCountMax,
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  });
  return {
    implementation: { ...storeServiceImplementation(options), readIndexStream: streams.serve },
    endStreams: (details) => streams.endAll(details),
    openStreamCount: () => streams.openCallCount,
  };
}

function itemFailure(code: grpc.status, details: string, leaderHint = ''): pb.ProposeItemAnswer {
  return { statusCode: code, details, leaderHint, seq: 0, result: undefined };
}

/** storeServiceImplementation serves the unary methods (storeService adds ReadIndexStream). */
function storeServiceImplementation(options: StoreServiceOptions): grpc.UntypedServiceImplementation {
  /** checkCommand decodes one command under commandBytesMax, or says what is wrong with it. */
  const checkCommand = (command: Uint8Array): StoreCommand | string => {
    if (command.length > options.commandBytesMax) return `command is ${command.length} bytes, above commandBytesMax ${options.commandBytesMax}`;
    const decoded = decodeCommand(command);
    return decoded.ok ? decoded.command : `bad command: ${decoded.reason}`;
  };
  const deadlineOf = (call: grpc.ServerUnaryCall<Buffer, Buffer>): number => {
    const deadline = call.getDeadline();
    const asked = deadline instanceof Date ? deadline.getTime() : Number(deadline);
    const fallback = Date.now() + options.callDeadlineMs;
    return Number.isFinite(asked) && asked > 0 ? Math.min(asked, fallback) : fallback;
  };
  const fail = (respond: grpc.sendUnaryData<Buffer>, err: unknown, method: string): void => {
    if (err instanceof StoreCallError) {
      const metadata = new grpc.Metadata();
      if (err.leaderHint !== '') metadata.set(TRAILER_LEADER, err.leaderHint);
      respond({ code: err.code, details: err.details, metadata }, null);
      return;
    }
    options.onWarning?.(`Store ${method} failed: ${String(err)}`);
    respond({ code: grpc.status.INTERNAL, details: 'store handler failed' }, null);
  };
  return {
    propose: (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
      let request: pb.ProposeRequest;
      try {
        request = pb.ProposeRequest.decode(call.request);
      } catch (err) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed ProposeRequest: ${String(err)}` }, null);
        return;
      }
      const checked = checkCommand(request.command);
      if (typeof checked === 'string') {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: checked }, null);
        return;
      }
      options.handler.propose(checked, deadlineOf(call)).then(
        ({ seq, result }) => respond(null, Buffer.from(pb.ProposeResponse.encode({ seq, result: resultToMessage(result) }).finish())),
        (err: unknown) => fail(respond, err, 'Propose'),
      );
    },
    proposeBatch: (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
      let request: pb.ProposeBatchRequest;
      try {
        request = pb.ProposeBatchRequest.decode(call.request);
      } catch (err) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed ProposeBatchRequest: ${String(err)}` }, null);
        return;
      }
      if (request.items.length > options.proposeBatchCountMax) {
        respond({ code: grpc.status.RESOURCE_EXHAUSTED, details: `${request.items.length} commands, above proposeBatchCountMax ${options.proposeBatchCountMax}` }, null);
        return;
      }
      const callDeadlineAt = deadlineOf(call);
      const arrivedAt = Date.now();
      // Each command is proposed as by Propose (the node gathers them into one engine step) and answered alone.
      const answers = request.items.map((item): Promise<pb.ProposeItemAnswer> => {
        const checked = checkCommand(item.command);
        if (typeof checked === 'string') return Promise.resolve(itemFailure(grpc.status.INVALID_ARGUMENT, checked));
        const deadlineAt = item.timeoutMs > 0 ? Math.min(callDeadlineAt, arrivedAt + item.timeoutMs) : callDeadlineAt;
        return options.handler.propose(checked, deadlineAt).then(
          ({ seq, result }) => ({ statusCode: grpc.status.OK, details: '', leaderHint: '', seq, result: resultToMessage(result) }),
          (err: unknown) => {
            if (err instanceof StoreCallError) return itemFailure(err.code, err.details, err.leaderHint);
            options.onWarning?.(`Store ProposeBatch item failed: ${String(err)}`);
            return itemFailure(grpc.status.INTERNAL, 'store handler failed');
          },
        );
      });
      void Promise.all(answers).then((all) => respond(null, Buffer.from(pb.ProposeBatchResponse.encode({ answers: all }).finish())));
    },
    readIndex: (call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
      try {
        pb.ReadIndexRequest.decode(call.request);
      } catch (err) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed ReadIndexRequest: ${String(err)}` }, null);
        return;
      }
      options.handler.readIndex(deadlineOf(call)).then(
        (answer) => respond(null, Buffer.from(pb.ReadIndexResponse.encode(answer).finish())),
        (err: unknown) => fail(respond, err, 'ReadIndex'),
      );
    },
  };
}

export interface StoreClientPoolOptions {
  credentials: grpc.ChannelCredentials;
  channelOptions: grpc.ChannelOptions;
  /** proposeBatchCountMax bounds the proposals coalesced into one ProposeBatch call (default: the store limit's). */
  proposeBatchCountMax?: number;
  /** readIndexStreamIdleMs ends an idle ReadIndexStream call (default: the store limit's). */
  readIndexStreamIdleMs?: number;
  /** readIndexOverStream: false sends every read index as a unary ReadIndex call (the bench compares both). Default true. */
  readIndexOverStream?: boolean;
}

type ProposeAnswer = { seq: number; result: CommandResult };

interface QueuedProposal {
  command: Uint8Array;
  deadlineAt: number;
  resolve: (answer: ProposeAnswer) => void;
  reject: (err: Error) => void;
}

/** UINT32_MAX bounds ProposeItem.timeout_ms. */
const UINT32_MAX = 0xffff_ffff;

/**
 * StoreClientPool keeps one channel per leader address and runs Store calls under a deadline.
 * Proposals to one address made in the same event-loop turn go out as one ProposeBatch call (each
 * still answered alone), so a follower forwarding many writes costs the leader one call per turn
 * instead of one per write. A leader that does not know ProposeBatch (UNIMPLEMENTED) gets single
 * Propose calls from then on. Read indexes go over one open ReadIndexStream call per address (a message
 * each, not a call each); a peer without it (UNIMPLEMENTED) gets unary ReadIndex calls from then on.
 */
export class StoreClientPool {
  private readonly channels: UnaryChannels;
  private readonly queued = new Map<string, QueuedProposal[]>();
  private readonly batchUnsupported = new Set<string>();
  private readonly batchCountMax: number;
  private readonly readIndexStreams = new Map<string, ReadIndexStreamClient>();
  private readonly readIndexStreamUnsupported = new Set<string>();
  private readonly readIndexStreamIdleMs: number;
  private readonly readIndexOverStream: boolean;
  private closed = false;
  /**
   * callCounts counts the calls made per method (how well proposals coalesce, for metrics and tests):
   * readIndex counts read-index requests, whether they went as unary calls or as stream messages
   * (readIndexStreamCalls counts the streams opened).
   */
  readonly callCounts = { propose: 0, proposeBatch: 0, readIndex: 0, readIndexUnary: 0 };

  constructor(options: StoreClientPoolOptions) {
    this.batchCountMax = options.proposeBatchCountMax ?? DEFAULT_STORE_LIMITS.proposeBatchCountMax;
    this.readIndexStreamIdleMs = options.readIndexStreamIdleMs ?? DEFAULT_STORE_LIMITS.readIndexStreamIdleMs;
    this.readIndexOverStream = options.readIndexOverStream ?? true;
    this.channels = new UnaryChannels({
      credentials: options.credentials, channelOptions: options.channelOptions, poolName: 'store client pool',
      errorOf: (code, details, leaderHint) => new StoreCallError(code, details, leaderHint),
    });
  }

  /** propose commits one command at the leader `to`; it may ride a ProposeBatch call with others. */
  propose(to: string, command: Uint8Array, deadlineAt: number): Promise<ProposeAnswer> {
    if (this.closed) return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, 'store client pool is closed'));
    return new Promise<ProposeAnswer>((resolve, reject) => {
      let queue = this.queued.get(to);
      if (!queue) {
        queue = [];
        this.queued.set(to, queue);
        // After this turn's I/O callbacks: the proposals they make join this one.
        setImmediate(() => this.flush(to, queue!));
      }
      queue.push({ command, deadlineAt, resolve, reject });
      if (queue.length >= this.batchCountMax) this.flush(to, queue);
    });
  }

  private flush(to: string, queue: QueuedProposal[]): void {
    if (this.queued.get(to) !== queue) return; // flushed already (it filled up)
    this.queued.delete(to);
    if (queue.length === 1 || this.batchUnsupported.has(to)) {
      this.proposeEachAlone(to, queue);
      return;
    }
    const now = Date.now();
    const callDeadlineAt = Math.max(...queue.map((p) => p.deadlineAt));
    const items = queue.map((p) => ({ command: p.command, timeoutMs: Math.min(UINT32_MAX, Math.max(1, Math.ceil(p.deadlineAt - now))) }));
    this.callCounts.proposeBatch++;
    this.call(to, METHODS.proposeBatch, Buffer.from(pb.ProposeBatchRequest.encode({ items }).finish()), callDeadlineAt).then(
      (bytes) => {
        let answers: pb.ProposeItemAnswer[];
        try {
          answers = pb.ProposeBatchResponse.decode(bytes).answers;
        } catch (err) {
          const failure = new StoreCallError(grpc.status.INTERNAL, `malformed ProposeBatchResponse from ${to}: ${String(err)}`);
          for (const p of queue) p.reject(failure);
          return;
        }
        if (answers.length !== queue.length) {
          const failure = new StoreCallError(grpc.status.INTERNAL, `ProposeBatchResponse from ${to} has ${answers.length} answers for ${queue.length} commands`);
          for (const p of queue) p.reject(failure);
          return;
        }
        queue.forEach((p, i) => {
          const answer = answers[i]!;
          if (answer.statusCode === grpc.status.OK) p.resolve({ seq: answer.seq, result: resultFromMessage(answer.result) });
          else p.reject(new StoreCallError(answer.statusCode, answer.details, answer.leaderHint));
        });
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
    for (const p of queue) this.proposeOne(to, p.command, p.deadlineAt).then(p.resolve, p.reject);
  }

  private async proposeOne(to: string, command: Uint8Array, deadlineAt: number): Promise<ProposeAnswer> {
    this.callCounts.propose++;
    const bytes = await this.call(to, METHODS.propose, Buffer.from(pb.ProposeRequest.encode({ command }).finish()), deadlineAt);
    let response: pb.ProposeResponse;
    try {
      response = pb.ProposeResponse.decode(bytes);
      return { seq: response.seq, result: resultFromMessage(response.result) };
    } catch (err) {
      throw new StoreCallError(grpc.status.INTERNAL, `malformed ProposeResponse from ${to}: ${String(err)}`);
    }
  }

  /** readIndex asks the leader `to` for a read index: a message on the open ReadIndexStream call, or a unary call to an old peer. */
  readIndex(to: string, deadlineAt: number): Promise<ReadIndexAnswer> {
    if (this.closed) return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, 'store client pool is closed'));
    this.callCounts.readIndex++;
    if (!this.readIndexOverStream || this.readIndexStreamUnsupported.has(to)) return this.readIndexUnary(to, deadlineAt);
    let stream = this.readIndexStreams.get(to);
    if (!stream) {
      stream = new ReadIndexStreamClient({
        open: () => this.channels.openStream(to, METHODS.readIndexStream),
        errorOf: (code, details, leaderHint) => new StoreCallError(code, details, leaderHint),
        idleMs: this.readIndexStreamIdleMs,
        onUnimplemented: (requests) => {
          this.readIndexStreamUnsupported.add(to);
          this.readIndexStreams.delete(to);
          for (const r of requests) this.readIndexUnary(to, r.deadlineAt).then(r.resolve, r.reject);
        },
      });
      this.readIndexStreams.set(to, stream);
    }
    return stream.ask(deadlineAt);
  }

  /** readIndexStreamCalls: the ReadIndexStream calls opened so far, over every address. */
  get readIndexStreamCalls(): number {
    let opened = 0;
    for (const stream of this.readIndexStreams.values()) opened += stream.callsOpened;
    return opened;
  }

  private async readIndexUnary(to: string, deadlineAt: number): Promise<ReadIndexAnswer> {
    this.callCounts.readIndexUnary++;
    const bytes = await this.call(to, METHODS.readIndex, Buffer.from(pb.ReadIndexRequest.encode({}).finish()), deadlineAt);
    try {
      return pb.ReadIndexResponse.decode(bytes);
    } catch (err) {
      throw new StoreCallError(grpc.status.INTERNAL, `malformed ReadIndexResponse from ${to}: ${String(err)}`);
    }
  }

  close(): void {
    this.closed = true;
    const closed = new StoreCallError(grpc.status.UNAVAILABLE, 'store client pool is closed');
    for (const queue of this.queued.values()) for (const p of queue) p.reject(closed);
    this.queued.clear();
    for (const stream of this.readIndexStreams.values()) stream.close('store client pool is closed');
    this.readIndexStreams.clear();
    this.channels.close();
  }

  private call(to: string, path: string, request: Buffer, deadlineAt: number): Promise<Buffer> {
    return this.channels.call(to, path, request, deadlineAt);
  }
}
