// Raw gRPC calls for tests that play a misbehaving or foreign peer: any bytes to any path.
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import type { NodeTls } from '../../cli/node/config.js';
import { clusterChannelOptions } from '../../transports/grpc/peer-identity.js';
import { storeServiceDefinition } from '../../transports/store-rpc/store-service.js';

const identity = (bytes: Buffer): Buffer => bytes;
/** PROBE_DEADLINE_MS bounds one probe call. */
export const PROBE_DEADLINE_MS = 3_000;

export interface ProbeOutcome {
  code: number;
  details: string;
  bytes: Buffer | null;
}

/** probeCredentials dials with tls's certificate; every call carries clusterId as svc-cluster-id metadata ('' sends none). */
export function probeCredentials(
  tls: NodeTls,
  clusterId = '',
): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  if (tls.mode === 'insecure')
    return { credentials: grpc.credentials.createInsecure(), options: clusterChannelOptions(clusterId) };
  return {
    credentials: grpc.credentials.createSsl(
      readFileSync(tls.caFile),
      readFileSync(tls.keyFile),
      readFileSync(tls.certFile),
    ),
    options: {
      'grpc.ssl_target_name_override': 'localhost',
      'grpc.default_authority': 'localhost',
      ...clusterChannelOptions(clusterId),
    },
  };
}

/** Probe is one channel to one node, sending raw requests. */
export class Probe {
  private readonly client: grpc.Client;

  constructor(address: string, credentials: grpc.ChannelCredentials, options: grpc.ChannelOptions = {}) {
    this.client = new grpc.Client(address, credentials, { ...options, 'grpc.max_send_message_length': -1 });
  }

  unary(path: string, bytes: Buffer): Promise<ProbeOutcome> {
    return new Promise((resolve) => {
      this.client.makeUnaryRequest<Buffer, Buffer>(
        path,
        identity,
        identity,
        bytes,
        new grpc.Metadata(),
        { deadline: Date.now() + PROBE_DEADLINE_MS },
        (err, value) => {
          resolve(
            err
              ? { code: err.code, details: err.details, bytes: null }
              : { code: 0, details: '', bytes: value ?? Buffer.alloc(0) },
          );
        },
      );
    });
  }

  /** stream reads a server stream to its end and reports its status. */
  stream(path: string, bytes: Buffer): Promise<ProbeOutcome> {
    return new Promise((resolve) => {
      const call = this.client.makeServerStreamRequest<Buffer, Buffer>(
        path,
        identity,
        identity,
        bytes,
        new grpc.Metadata(),
        { deadline: Date.now() + PROBE_DEADLINE_MS },
      );
      call.on('data', () => undefined);
      call.on('error', () => undefined);
      call.on('status', (status: grpc.StatusObject) =>
        resolve({ code: status.code, details: status.details, bytes: null }),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

/** OldStoreServer is a Store server of an older build: plaintext on loopback, serving one unary method only. */
export interface OldStoreServer {
  address: string;
  /** calls counts the calls it answered. */
  readonly calls: number;
  stop(): void;
}

/** startOldStoreServer serves `method` (a svc.store.v1 unary method) with answer(n) for its n-th call (from 1). */
export async function startOldStoreServer(
  method: 'propose' | 'readIndex' | 'get',
  answer: (call: number) => Buffer,
): Promise<OldStoreServer> {
  const server = new grpc.Server();
  const definition = storeServiceDefinition();
  let calls = 0;
  server.addService(
    { [method]: definition[method]! },
    {
      [method]: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, respond: grpc.sendUnaryData<Buffer>) => {
        calls++;
        respond(null, answer(calls));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return {
    address: `127.0.0.1:${port}`,
    get calls() {
      return calls;
    },
    stop: () => server.forceShutdown(),
  };
}
