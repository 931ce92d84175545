// The three ways a StoreClientPool sends its unary calls (Propose, ProposeBatch, ReadIndex, Get): on the lean HTTP/2
// client over node:http2 (transports/grpc/lean-unary.ts), on it over transports/h2's framing (h2UnaryClient), or
// on grpc-js's client. The store-client tests run against all three.
import { readFileSync } from 'node:fs';
import type { NodeTls } from '../../cli/node/config.js';
import { storeClientTransport, type StoreClientPoolOptions } from '../../transports/store-rpc/store-service.js';

export const STORE_POOL_TRANSPORTS = ['lean', 'h2', 'grpc-js'] as const;
export type StorePoolTransport = (typeof STORE_POOL_TRANSPORTS)[number];

type Transport = Pick<StoreClientPoolOptions, 'credentials' | 'channelOptions' | 'lean'>;

/** insecureTransport: plaintext, no cluster id. */
export function insecureTransport(unaryClient: StorePoolTransport): Transport {
  return storeClientTransport({ mode: 'insecure' }, leanOptions(unaryClient));
}

/**
 * tlsTransport: `tls`'s certificate, the server's checked against the CA and the name localhost (as
 * test/node/grpc-probe.ts probeCredentials does), every call carrying clusterId.
 */
export function tlsTransport(unaryClient: StorePoolTransport, tls: NodeTls, clusterId = ''): Transport {
  if (tls.mode !== 'mtls')
    return storeClientTransport({ mode: 'insecure' }, { clusterId, ...leanOptions(unaryClient) });
  return storeClientTransport(
    {
      mode: 'mtls',
      material: { ca: readFileSync(tls.caFile), cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) },
    },
    { clusterId, serverNameOverride: 'localhost', ...leanOptions(unaryClient) },
  );
}

/** leanOptions: storeClientTransport's switches for `unaryClient`. */
export function leanOptions(unaryClient: StorePoolTransport): { lean: boolean; h2UnaryClient: boolean } {
  return { lean: unaryClient !== 'grpc-js', h2UnaryClient: unaryClient === 'h2' };
}
