// The two ways a StoreClientPool sends its unary calls (Propose, ProposeBatch, ReadIndex, Get): on the lean HTTP/2
// client (transports/grpc/lean-unary.ts) or on grpc-js's client. The store-client tests run against both.
import { readFileSync } from 'node:fs';
import type { NodeTls } from '../../cli/node/config.js';
import { storeClientTransport, type StoreClientPoolOptions } from '../../transports/store-rpc/store-service.js';

export const STORE_POOL_TRANSPORTS = ['lean', 'grpc-js'] as const;
export type StorePoolTransport = (typeof STORE_POOL_TRANSPORTS)[number];

type Transport = Pick<StoreClientPoolOptions, 'credentials' | 'channelOptions' | 'lean'>;

/** insecureTransport: plaintext, no cluster id. */
export function insecureTransport(unaryClient: StorePoolTransport): Transport {
  return storeClientTransport({ mode: 'insecure' }, { lean: unaryClient === 'lean' });
}

/**
 * tlsTransport: `tls`'s certificate, the server's checked against the CA and the name localhost (as
 * test/node/grpc-probe.ts probeCredentials does), every call carrying clusterId.
 */
export function tlsTransport(unaryClient: StorePoolTransport, tls: NodeTls, clusterId = ''): Transport {
  if (tls.mode !== 'mtls')
    return storeClientTransport({ mode: 'insecure' }, { clusterId, lean: unaryClient === 'lean' });
  return storeClientTransport(
    {
      mode: 'mtls',
      material: { ca: readFileSync(tls.caFile), cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) },
    },
    { clusterId, serverNameOverride: 'localhost', lean: unaryClient === 'lean' },
  );
}
