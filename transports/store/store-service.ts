// The svc.store.v1.Store gRPC service (proto/svc/store/v1/store.proto): the server half, served on
// the peer mTLS server beside WalShipping, and the client half a follower uses to reach the leader.
// grpc-js moves raw bytes (identity serializers) and decoding happens here, so a malformed request
// is INVALID_ARGUMENT with a reason instead of grpc-js's generic error.
import * as grpc from '@grpc/grpc-js';
import * as pb from '../../proto/gen/svc/store/v1/store.js';
import { decodeCommand, resultFromMessage, resultToMessage, type CommandResult, type StoreCommand } from './command.js';

/** TRAILER_LEADER names the leader's gRPC address on a refusal from a member that is not the leader. */
export const TRAILER_LEADER = 'x-svc-leader';

/** StoreCallError is a Store call's failure: a grpc status code, its details, and a leader hint when known. */
export class StoreCallError extends Error {
  constructor(readonly code: grpc.status, readonly details: string, readonly leaderHint = '') {
    super(`${grpc.status[code] ?? code}: ${details}`);
    this.name = 'StoreCallError';
  }
}

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
  onWarning?: (message: string) => void;
}

const identity = (bytes: Buffer): Buffer => bytes;

const METHODS = {
  propose: pb.StoreService.propose.path,
  readIndex: pb.StoreService.readIndex.path,
} as const;

/** storeServiceDefinition registers the Store paths with byte-for-byte serializers. */
export function storeServiceDefinition(): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  for (const [name, path] of Object.entries(METHODS)) {
    definition[name] = {
      path, requestStream: false, responseStream: false,
      requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity,
    };
  }
  return definition;
}

export function storeServiceImplementation(options: StoreServiceOptions): grpc.UntypedServiceImplementation {
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
      if (request.command.length > options.commandBytesMax) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `command is ${request.command.length} bytes, above commandBytesMax ${options.commandBytesMax}` }, null);
        return;
      }
      const decoded = decodeCommand(request.command);
      if (!decoded.ok) {
        respond({ code: grpc.status.INVALID_ARGUMENT, details: `bad command: ${decoded.reason}` }, null);
        return;
      }
      options.handler.propose(decoded.command, deadlineOf(call)).then(
        ({ seq, result }) => respond(null, Buffer.from(pb.ProposeResponse.encode({ seq, result: resultToMessage(result) }).finish())),
        (err: unknown) => fail(respond, err, 'Propose'),
      );
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
}

/** StoreClientPool keeps one channel per leader address and runs Store calls under a deadline. */
export class StoreClientPool {
  private readonly clients = new Map<string, grpc.Client>();
  private closed = false;

  constructor(private readonly options: StoreClientPoolOptions) {}

  async propose(to: string, command: Uint8Array, deadlineAt: number): Promise<{ seq: number; result: CommandResult }> {
    const bytes = await this.call(to, METHODS.propose, Buffer.from(pb.ProposeRequest.encode({ command }).finish()), deadlineAt);
    let response: pb.ProposeResponse;
    try {
      response = pb.ProposeResponse.decode(bytes);
      return { seq: response.seq, result: resultFromMessage(response.result) };
    } catch (err) {
      throw new StoreCallError(grpc.status.INTERNAL, `malformed ProposeResponse from ${to}: ${String(err)}`);
    }
  }

  async readIndex(to: string, deadlineAt: number): Promise<{ commitSeq: number; term: number }> {
    const bytes = await this.call(to, METHODS.readIndex, Buffer.from(pb.ReadIndexRequest.encode({}).finish()), deadlineAt);
    try {
      return pb.ReadIndexResponse.decode(bytes);
    } catch (err) {
      throw new StoreCallError(grpc.status.INTERNAL, `malformed ReadIndexResponse from ${to}: ${String(err)}`);
    }
  }

  close(): void {
    this.closed = true;
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private call(to: string, path: string, request: Buffer, deadlineAt: number): Promise<Buffer> {
    if (this.closed) return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, 'store client pool is closed'));
    let client = this.clients.get(to);
    if (!client) {
      try {
        client = new grpc.Client(to, this.options.credentials, this.options.channelOptions);
      } catch (err) {
        return Promise.reject(new StoreCallError(grpc.status.UNAVAILABLE, `cannot dial ${JSON.stringify(to)}: ${String(err)}`));
      }
      this.clients.set(to, client);
    }
    const channel = client;
    return new Promise<Buffer>((resolve, reject) => {
      channel.makeUnaryRequest<Buffer, Buffer>(path, identity, identity, request, new grpc.Metadata(), { deadline: deadlineAt },
        (err, value) => {
          if (err) {
            const hint = err.metadata?.get(TRAILER_LEADER)[0];
            reject(new StoreCallError(err.code, err.details, typeof hint === 'string' ? hint : ''));
            return;
          }
          resolve(value ?? Buffer.alloc(0));
        });
    });
  }
}
