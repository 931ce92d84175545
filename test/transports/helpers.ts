// Test helpers for the gRPC transports: bounded polling, a server on a free
// loopback port, a raw byte-level client, and a tiny scripted fake handler.
import * as net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import type { RpcRequest } from '../../engine/rpc.js';
import type { TransportInput } from '../../transports/grpc/client.js';
import type { CallEnd, CallSink, PeerHandler } from '../../transports/grpc/call-sink.js';
import type { GrpcLimits } from '../../transports/grpc/limits.js';
import { RPC_METHODS, identity, isUnaryMethod, methodPath } from '../../transports/grpc/methods.js';
import { PeerServer } from '../../transports/grpc/server.js';
import { insecureServerCredentials } from '../../transports/grpc/tls.js';

/** outcomes records each delivered input by request id (one each: a second fails the test). */
export function outcomes(): { deliver: (input: TransportInput) => void; of: (id: number) => Promise<TransportInput> } {
  const seen = new Map<number, TransportInput>();
  return {
    deliver: (input) => {
      assert.equal(seen.has(input.requestId), false, `one outcome per request (${input.requestId})`);
      seen.set(input.requestId, input);
    },
    of: async (id) => {
      await waitFor(() => seen.has(id), `the outcome of request ${id}`);
      return seen.get(id)!;
    },
  };
}

/** waitFor polls `condition` every few ms until it holds, failing after timeoutMs. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export type Script = (callId: number, request: RpcRequest, call: CallSink) => void;

/**
 * FakePeerHandler stands in for the engine in transport tests: it answers with whatever the test
 * scripts per method and records what happened. The real answers come from the engine.
 */
export class FakePeerHandler implements PeerHandler {
  readonly requests: { callId: number; request: RpcRequest }[] = [];
  readonly closed = new Map<number, CallEnd>();
  readonly sinks = new Map<number, CallSink>();
  private readonly scripts = new Map<string, Script>();

  on(method: RpcRequest['method'], script: Script): this {
    this.scripts.set(method, script);
    return this;
  }

  onRequest(callId: number, request: RpcRequest, call: CallSink): void {
    this.requests.push({ callId, request });
    this.sinks.set(callId, call);
    const script = this.scripts.get(request.method);
    if (!script) throw new Error(`fake handler has no script for ${request.method}`);
    script(callId, request, call);
  }

  onCallClosed(callId: number, end: CallEnd): void {
    this.closed.set(callId, end);
  }
}

export async function startServer(
  handler: PeerHandler,
  limits: Partial<GrpcLimits> = {},
  warnings: string[] = [],
  leanUnary = true,
): Promise<{ server: PeerServer; address: string }> {
  const server = await PeerServer.listen('127.0.0.1:0', {
    handler,
    credentials: insecureServerCredentials(),
    limits,
    onWarning: (m) => warnings.push(m),
    leanUnary,
  });
  return { server, address: `127.0.0.1:${server.port}` };
}

export interface RawOutcome {
  error: grpc.ServiceError | null;
  value: Buffer | undefined;
}

/** rawUnary sends arbitrary bytes to any path, as a peer with a broken encoder (or no manners) would. */
export function rawUnary(address: string, path: string, bytes: Buffer, deadlineMs = 5_000): Promise<RawOutcome> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    client.makeUnaryRequest<Buffer, Buffer>(
      path,
      identity,
      identity,
      bytes,
      new grpc.Metadata(),
      { deadline: Date.now() + deadlineMs },
      (error, value) => {
        client.close();
        resolve({ error, value });
      },
    );
  });
}

export function rawClient(address: string, options: grpc.ChannelOptions = {}): grpc.Client {
  return new grpc.Client(address, grpc.credentials.createInsecure(), options);
}

export function rawStream(
  client: grpc.Client,
  method: 'StreamSegments' | 'FetchSnapshot',
  bytes: Buffer,
): grpc.ClientReadableStream<Buffer> {
  return client.makeServerStreamRequest<Buffer, Buffer>(
    methodPath(method),
    identity,
    identity,
    bytes,
    new grpc.Metadata(),
    {},
  );
}

/** streamOutcome collects a raw stream's messages and its final status. */
export function streamOutcome(
  stream: grpc.ClientReadableStream<Buffer>,
): Promise<{ messages: Buffer[]; status: grpc.StatusObject }> {
  const messages: Buffer[] = [];
  return new Promise((resolve) => {
    stream.on('data', (m: Buffer) => messages.push(m));
    stream.on('error', () => {});
    stream.on('status', (status: grpc.StatusObject) => resolve({ messages, status }));
  });
}

/**
 * startRawServer serves the WalShipping paths with handlers that write raw bytes, to play a peer
 * that breaks the protocol in ways our own server never would.
 */
export async function startRawServer(handlers: {
  unary?: (method: string, respond: grpc.sendUnaryData<Buffer>) => void;
  stream?: (method: string, call: grpc.ServerWritableStream<Buffer, Buffer>) => void;
}): Promise<{ server: grpc.Server; address: string }> {
  const server = new grpc.Server();
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const method of RPC_METHODS) {
    const responseStream = !isUnaryMethod(method);
    definition[method] = {
      path: methodPath(method),
      requestStream: false,
      responseStream,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
    implementation[method] = responseStream
      ? (call: grpc.ServerWritableStream<Buffer, Buffer>) => handlers.stream?.(method, call)
      : (_call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) =>
          handlers.unary?.(method, respond);
  }
  server.addService(definition, implementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    );
  });
  return { server, address: `127.0.0.1:${port}` };
}

/**
 * SilenceableProxy forwards TCP between a client and `upstream` until silence() is called; then it
 * stops moving bytes either way without closing anything, as a partitioned or powered-off peer would.
 */
export class SilenceableProxy {
  private readonly sockets = new Set<net.Socket>();
  private silent = false;
  private constructor(private readonly server: net.Server) {}

  static async start(upstreamPort: number): Promise<SilenceableProxy> {
    const server = net.createServer();
    const proxy = new SilenceableProxy(server);
    server.on('connection', (downstream) => {
      const upstream = net.connect(upstreamPort, '127.0.0.1');
      for (const [from, to] of [
        [downstream, upstream],
        [upstream, downstream],
      ] as const) {
        proxy.sockets.add(from);
        from.on('data', (data: Buffer) => {
          if (!proxy.silent) to.write(data);
        });
        from.on('error', () => to.destroy());
        from.on('close', () => {
          proxy.sockets.delete(from);
          if (!proxy.silent) to.destroy();
        });
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  silence(): void {
    this.silent = true;
  }

  close(): void {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
  }
}
