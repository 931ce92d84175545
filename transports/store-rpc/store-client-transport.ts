// What a StoreClientPool dials with, built once from a PeerSecurity: the grpc-js credentials and channel options
// (the streams, and the unary calls with the lean client off) and the lean client's dial and headers, with the
// same checks either way: the cluster CA, the host name (against serverNameOverride when set) and, when
// security.clusterId is set, the server a peer of that cluster (tls.ts).
import type { ChannelOptions } from '@grpc/grpc-js';
import { clientChannelOptions } from '../grpc/channel-options.js';
import { resolveGrpcLimits, type GrpcLimits } from '../grpc/limits.js';
import { CLUSTER_ID_METADATA_KEY, clusterChannelOptions } from '../grpc/peer-identity.js';
import { peerClientCredentials, peerHttp2Dial, peerSocketDial, type PeerSecurity } from '../grpc/tls.js';
import type { StoreClientPoolOptions } from './store-client-pool.js';

export interface StoreClientTransportOptions {
  /** clusterId goes on every call (svc-cluster-id); '' or unset sends none. */
  clusterId?: string;
  /** serverNameOverride is the name the server's certificate must carry instead of the dialled host's. */
  serverNameOverride?: string;
  limits?: Partial<GrpcLimits>;
  /** lean: false leaves the unary calls on grpc-js's client too (default true). */
  lean?: boolean;
  /**
   * h2UnaryClient: true sends the lean unary calls over transports/h2's H2UnaryClient (our own HTTP/2 framing,
   * the same wire and checks) instead of node:http2's client. Default DEFAULT_H2_UNARY_CLIENT (true).
   */
  h2UnaryClient?: boolean;
}

/**
 * DEFAULT_H2_UNARY_CLIENT: a Store client pool's unary calls go over transports/h2's client (our framing, served on
 * a node's lean connection path). `npx tsx bench/unary-call.ts`, mutual TLS, ways interleaved (load average ~8):
 * a unary Get's round trip p50 194 µs on node:http2's client → 160 µs (a GetStream message: 151 µs), the
 * caller's CPU per call 83 → 41 µs. A node's own pool (cli/node/node.ts) sends over streams and keeps
 * lean-unary.ts for its unary fallback.
 */
export const DEFAULT_H2_UNARY_CLIENT = true;

/** storeClientTransport: the transport fields of StoreClientPoolOptions for `security`. */
export function storeClientTransport(
  security: PeerSecurity,
  options: StoreClientTransportOptions = {},
): Pick<StoreClientPoolOptions, 'credentials' | 'channelOptions' | 'lean'> {
  const { clusterId = '', serverNameOverride, lean = true, h2UnaryClient = DEFAULT_H2_UNARY_CLIENT } = options;
  const nameForLean = security.mode === 'mtls' ? serverNameOverride : undefined;
  const limits = resolveGrpcLimits(options.limits);
  const nameOverride: ChannelOptions =
    security.mode === 'mtls' && serverNameOverride
      ? { 'grpc.ssl_target_name_override': serverNameOverride, 'grpc.default_authority': serverNameOverride }
      : {};
  return {
    credentials: peerClientCredentials(security),
    channelOptions: { ...clientChannelOptions(limits), ...nameOverride, ...clusterChannelOptions(clusterId) },
    ...(lean
      ? {
          lean: {
            dial: peerHttp2Dial(security, nameForLean),
            ...(h2UnaryClient ? { h2Dial: peerSocketDial(security, nameForLean) } : {}),
            headers: clusterId === '' ? {} : { [CLUSTER_ID_METADATA_KEY]: clusterId },
            limits,
          },
        }
      : {}),
  };
}
