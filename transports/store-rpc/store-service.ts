// The svc.store.v1.Store gRPC service (proto/svc/store/v1/store.proto), the server half: served on the peer
// mTLS server beside WalShipping. grpc-js moves raw bytes (identity serializers) and decoding happens here,
// so a malformed request is INVALID_ARGUMENT with a reason instead of grpc-js's generic error. A command
// stays the bytes it came as: the handler (the store, through the node) reads it. The client half a
// follower uses to reach the leader is store-client-pool.ts.
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { RequestStreamServer, peerName, type Failure } from './request-stream.js';
import { decodeProposeRequest, encodeProposeResponse } from './propose-wire.js';
import type { UnaryRespond, UnaryServerCall } from '../grpc/lean-serve.js';
import { STORE_METHODS, StoreCallError, TRAILER_LEADER, type GetAnswer, type ReadIndexAnswer } from './store-calls.js';

export { STORE_METHODS, StoreCallError, TRAILER_LEADER, type GetAnswer, type ReadIndexAnswer };
export { StoreClientPool, type StoreClientPoolOptions } from './store-client-pool.js';
export { storeClientTransport, type StoreClientTransportOptions } from './store-client-transport.js';

/** StoreServiceHandler decides the answers; the service only decodes the messages, checks sizes and encodes. */
export interface StoreServiceHandler {
  /**
   * propose commits an encoded command on this node as the leader (or throws StoreCallError: INVALID_ARGUMENT for a
   * malformed command). requestId is what the caller sent beside the command ('' from an older caller).
   */
  propose(
    command: Uint8Array,
    deadlineAt: number,
    requestId: string,
  ): Promise<{ seq: number; result: pb.CommandResult }>;
  /**
   * readIndex answers this leader's read index: its commit seqno, once its engine has confirmed its leadership
   * (store/engine-reads.ts). asker: the member the caller's peer certificate names and the term its request
   * carried (absent without a certificate or a term): the engine may count it as one ack (engine/read-index.ts).
   */
  readIndex(deadlineAt: number, asker?: ReadIndexAskerClaim): Promise<ReadIndexAnswer>;
  /** get reads one key as this member's store reads it (read index, local apply, local state); any member answers. */
  get(key: string, deadlineAt: number): Promise<GetAnswer>;
}

export interface StoreServiceOptions {
  handler: StoreServiceHandler;
  /** commandBytesMax bounds the command a caller may send. */
  commandBytesMax: number;
  /** callDeadlineMs bounds a call that arrived without a deadline, and a stream request without a timeout. */
  callDeadlineMs: number;
  /** proposeBatchCountMax bounds the commands of one ProposeBatch call or ProposeStream request. */
  proposeBatchCountMax: number;
  /** streamOpenRequestCountMax bounds the requests open on one ReadIndexStream or ProposeStream call. */
  streamOpenRequestCountMax: number;
  onWarning?: (message: string) => void;
}

/** ReadIndexAskerClaim: who asks for a read index (its certificate's name, never a request field) and its term then. */
export interface ReadIndexAskerClaim {
  name: string;
  term: number;
}

/** askerClaim: the asker of a read-index request, when both a peer certificate and a term say who and when. */
function askerClaim(peer: string, term: number): ReadIndexAskerClaim | undefined {
  return peer !== '' && term > 0 ? { name: peer, term } : undefined;
}

const identity = (bytes: Buffer): Buffer => bytes;

/** wrap views an encoded message as a Buffer without copying it. */
const wrap = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

const STREAMING_METHODS: ReadonlySet<string> = new Set(['readIndexStream', 'proposeStream', 'getStream']);

/** storeServiceDefinition registers the Store paths with byte-for-byte serializers. */
export function storeServiceDefinition(): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  for (const [name, path] of Object.entries(STORE_METHODS)) {
    const streaming = STREAMING_METHODS.has(name);
    definition[name] = {
      path,
      requestStream: streaming,
      responseStream: streaming,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
  }
  return definition;
}

/** StoreService is the server half: the implementation to register, and a way to end its open streams. */
export interface StoreService {
  implementation: grpc.UntypedServiceImplementation;
  /** endStreams ends every open ReadIndexStream, ProposeStream and GetStream call with UNAVAILABLE (they never end alone). */
  endStreams(details: string): void;
  /** openStreamCount: the ReadIndexStream, ProposeStream and GetStream calls open now. */
  openStreamCount(): number;
}

export function storeService(options: StoreServiceOptions): StoreService {
  const common = {
    openRequestCountMax: options.streamOpenRequestCountMax,
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  };
  const readIndexStreams = new RequestStreamServer<{ timeoutMs: number; term: number }, ReadIndexAnswer>({
    ...common,
    method: 'ReadIndexStream',
    namesPeer: true,
    decode: (bytes) => {
      const request = pb.ReadIndexStreamRequest.decode(bytes);
      return { requestId: request.requestId, request: { timeoutMs: request.timeoutMs, term: request.term } };
    },
    handle: ({ timeoutMs, term }, arrivedAt, peer) =>
      options.handler.readIndex(
        arrivedAt + (timeoutMs > 0 ? Math.min(timeoutMs, options.callDeadlineMs) : options.callDeadlineMs),
        askerClaim(peer, term),
      ),
    encodeAnswer: (requestId, { commitSeq, term }) =>
      pb.ReadIndexStreamResponse.encode({
        requestId,
        statusCode: grpc.status.OK,
        details: '',
        leaderHint: '',
        commitSeq,
        term,
      }).finish(),
    encodeFailure: (requestId, failure: Failure) =>
      pb.ReadIndexStreamResponse.encode({
        requestId,
        statusCode: failure.code,
        details: failure.details,
        leaderHint: failure.leaderHint,
        commitSeq: 0,
        term: 0,
      }).finish(),
  });
  const proposeStreams = new RequestStreamServer<pb.ProposeItem[], pb.ProposeItemAnswer[]>({
    ...common,
    method: 'ProposeStream',
    decode: (bytes) => {
      const request = pb.ProposeStreamRequest.decode(bytes);
      return { requestId: request.requestId, request: request.items };
    },
    handle: (items, arrivedAt) => {
      const refusal = batchRefusal(items, options);
      return refusal
        ? Promise.reject(refusal)
        : proposeItems(items, arrivedAt, arrivedAt + options.callDeadlineMs, options);
    },
    encodeAnswer: (requestId, answers) =>
      pb.ProposeStreamResponse.encode({
        requestId,
        statusCode: grpc.status.OK,
        details: '',
        leaderHint: '',
        answers,
      }).finish(),
    encodeFailure: (requestId, failure) =>
      pb.ProposeStreamResponse.encode({
        requestId,
        statusCode: failure.code,
        details: failure.details,
        leaderHint: failure.leaderHint,
        answers: [],
      }).finish(),
  });
  const getStreams = new RequestStreamServer<{ key: string; timeoutMs: number }, GetAnswer>({
    ...common,
    method: 'GetStream',
    decode: (bytes) => {
      const request = pb.GetStreamRequest.decode(bytes);
      return { requestId: request.requestId, request: { key: request.key, timeoutMs: request.timeoutMs } };
    },
    handle: ({ key, timeoutMs }, arrivedAt) =>
      options.handler.get(
        key,
        arrivedAt + (timeoutMs > 0 ? Math.min(timeoutMs, options.callDeadlineMs) : options.callDeadlineMs),
      ),
    encodeAnswer: (requestId, { found, valueJson, version }) =>
      pb.GetStreamResponse.encode({
        requestId,
        statusCode: grpc.status.OK,
        details: '',
        leaderHint: '',
        found,
        valueJson,
        version,
      }).finish(),
    encodeFailure: (requestId, failure) =>
      pb.GetStreamResponse.encode({
        requestId,
        statusCode: failure.code,
        details: failure.details,
        leaderHint: failure.leaderHint,
        found: false,
        valueJson: '',
        version: 0,
      }).finish(),
  });
  return {
    implementation: {
      ...unaryImplementation(options),
      readIndexStream: readIndexStreams.serve,
      proposeStream: proposeStreams.serve,
      getStream: getStreams.serve,
    },
    endStreams: (details) => {
      readIndexStreams.endAll(details);
      proposeStreams.endAll(details);
      getStreams.endAll(details);
    },
    openStreamCount: () => readIndexStreams.openCallCount + proposeStreams.openCallCount + getStreams.openCallCount,
  };
}

/** sizeRefusal says why a command above commandBytesMax is refused (null: within it). */
function sizeRefusal(command: Uint8Array, options: StoreServiceOptions): string | null {
  return command.length > options.commandBytesMax
    ? `command is ${command.length} bytes, above commandBytesMax ${options.commandBytesMax}`
    : null;
}

function itemFailure(code: grpc.status, details: string, leaderHint = ''): pb.ProposeItemAnswer {
  return { statusCode: code, details, leaderHint, seq: 0, result: undefined };
}

/** batchRefusal refuses a batch above proposeBatchCountMax whole (RESOURCE_EXHAUSTED). */
function batchRefusal(items: readonly pb.ProposeItem[], options: StoreServiceOptions): StoreCallError | null {
  return items.length > options.proposeBatchCountMax
    ? new StoreCallError(
        grpc.status.RESOURCE_EXHAUSTED,
        `${items.length} commands, above proposeBatchCountMax ${options.proposeBatchCountMax}`,
      )
    : null;
}

/**
 * proposeItems proposes each command of a batch as Propose would (the node gathers them into one engine step)
 * and answers each alone: one command's failure does not fail the others.
 */
function proposeItems(
  items: readonly pb.ProposeItem[],
  arrivedAt: number,
  callDeadlineAt: number,
  options: StoreServiceOptions,
): Promise<pb.ProposeItemAnswer[]> {
  return Promise.all(
    items.map((item): Promise<pb.ProposeItemAnswer> => {
      const tooBig = sizeRefusal(item.command, options);
      if (tooBig !== null) return Promise.resolve(itemFailure(grpc.status.INVALID_ARGUMENT, tooBig));
      const deadlineAt = item.timeoutMs > 0 ? Math.min(callDeadlineAt, arrivedAt + item.timeoutMs) : callDeadlineAt;
      return options.handler.propose(item.command, deadlineAt, item.requestId).then(
        ({ seq, result }) => ({ statusCode: grpc.status.OK, details: '', leaderHint: '', seq, result }),
        (err: unknown) => {
          if (err instanceof StoreCallError) return itemFailure(err.code, err.details, err.leaderHint);
          options.onWarning?.(`Store proposal failed: ${String(err)}`);
          return itemFailure(grpc.status.INTERNAL, 'store handler failed');
        },
      );
    }),
  );
}

/** unaryImplementation serves the unary methods (storeService adds the streaming ones). */
function unaryImplementation(options: StoreServiceOptions): grpc.UntypedServiceImplementation {
  const deadlineOf = (call: UnaryServerCall): number => {
    const deadline = call.getDeadline();
    const asked = deadline instanceof Date ? deadline.getTime() : Number(deadline);
    const fallback = Date.now() + options.callDeadlineMs;
    return Number.isFinite(asked) && asked > 0 ? Math.min(asked, fallback) : fallback;
  };
  const fail = (respond: UnaryRespond, err: unknown, method: string): void => {
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
    propose: (call: UnaryServerCall, respond: UnaryRespond) => {
      let request: pb.ProposeRequest;
      try {
        request = decodeProposeRequest(call.request);
      } catch (err) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed ProposeRequest: ${String(err)}` }, null);
        return;
      }
      const tooBig = sizeRefusal(request.command, options);
      if (tooBig !== null) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: tooBig }, null);
        return;
      }
      options.handler.propose(request.command, deadlineOf(call), request.requestId).then(
        ({ seq, result }) => respond(null, encodeProposeResponse(seq, result)),
        (err: unknown) => fail(respond, err, 'Propose'),
      );
    },
    proposeBatch: (call: UnaryServerCall, respond: UnaryRespond) => {
      let request: pb.ProposeBatchRequest;
      try {
        request = pb.ProposeBatchRequest.decode(call.request);
      } catch (err) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed ProposeBatchRequest: ${String(err)}` }, null);
        return;
      }
      const refusal = batchRefusal(request.items, options);
      if (refusal) {
        fail(respond, refusal, 'ProposeBatch');
        return;
      }
      void proposeItems(request.items, Date.now(), deadlineOf(call), options).then((answers) =>
        respond(null, wrap(pb.ProposeBatchResponse.encode({ answers }).finish())),
      );
    },
    readIndex: (call: UnaryServerCall, respond: UnaryRespond) => {
      let request: pb.ReadIndexRequest;
      try {
        request = pb.ReadIndexRequest.decode(call.request);
      } catch (err) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed ReadIndexRequest: ${String(err)}` }, null);
        return;
      }
      options.handler.readIndex(deadlineOf(call), askerClaim(peerName(call), request.term)).then(
        (answer) => respond(null, wrap(pb.ReadIndexResponse.encode(answer).finish())),
        (err: unknown) => fail(respond, err, 'ReadIndex'),
      );
    },
    get: (call: UnaryServerCall, respond: UnaryRespond) => {
      let request: pb.GetRequest;
      try {
        request = pb.GetRequest.decode(call.request);
      } catch (err) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `malformed GetRequest: ${String(err)}` }, null);
        return;
      }
      options.handler.get(request.key, deadlineOf(call)).then(
        (answer) => respond(null, wrap(pb.GetResponse.encode(answer).finish())),
        (err: unknown) => fail(respond, err, 'Get'),
      );
    },
  };
}
