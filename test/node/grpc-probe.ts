// Raw gRPC calls for tests that play a misbehaving or foreign peer: any bytes to any path.
import * as grpc from '@grpc/grpc-js';
import { readFileSync } from 'node:fs';
import type { NodeTls } from '../../transports/node/config.js';

const identity = (bytes: Buffer): Buffer => bytes;
/** PROBE_DEADLINE_MS bounds one probe call. */
export const PROBE_DEADLINE_MS = 3_000;

export interface ProbeOutcome {
  code: number;
  details: string;
  bytes: Buffer | null;
}

export function probeCredentials(tls: NodeTls): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  if (tls.mode === 'insecure') return { credentials: grpc.credentials.createInsecure(), options: {} };
  return {
    credentials: grpc.credentials.createSsl(readFileSync(tls.caFile), readFileSync(tls.keyFile), readFileSync(tls.certFile)),
    options: { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' },
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
      this.client.makeUnaryRequest<Buffer, Buffer>(path, identity, identity, bytes, new grpc.Metadata(),
        { deadline: Date.now() + PROBE_DEADLINE_MS }, (err, value) => {
          resolve(err ? { code: err.code, details: err.details, bytes: null } : { code: 0, details: '', bytes: value ?? Buffer.alloc(0) });
        });
    });
  }

  /** stream reads a server stream to its end and reports its status. */
  stream(path: string, bytes: Buffer): Promise<ProbeOutcome> {
    return new Promise((resolve) => {
      const call = this.client.makeServerStreamRequest<Buffer, Buffer>(path, identity, identity, bytes, new grpc.Metadata(),
        { deadline: Date.now() + PROBE_DEADLINE_MS });
      call.on('data', () => undefined);
      call.on('error', () => undefined);
      call.on('status', (status: grpc.StatusObject) => resolve({ code: status.code, details: status.details, bytes: null }));
    });
  }

  close(): void {
    this.client.close();
  }
}
