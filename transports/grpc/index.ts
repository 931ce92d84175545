// The gRPC transports a real node uses: the WalShipping server, the peer client pool, TLS helpers, limits.
export * from './call-sink.js';
export * from './limits.js';
export * from './channel-options.js';
export * from './status.js';
export * from './tls.js';
export { PeerServer, type PeerServerOptions, type PeerServerStats } from './server.js';
export { PeerPool, type PeerPoolOptions, type TransportInput } from './client.js';
export type { FetchOptions, SnapshotParts } from './snapshot-stream.js';
