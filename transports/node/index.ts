// A real node: the driver loop that carries out the engine's effects over the WAL, the gRPC peer
// transport and the replicated store, and the node's HTTP surface. See README.md.
export { Node } from './node.js';
export { ConfigError, resolveNodeConfig, parseHostPort, type NodeConfig, type NodeApiConfig, type NodeTls, type BootstrapMember, type LogLevel, type ResolvedNodeConfig } from './config.js';
export { DEFAULT_NODE_LIMITS, nodeLimits, type NodeLimits } from './limits.js';
export { Driver, type DriverPorts, type DriverOptions } from './driver.js';
export type { NodeStatusDocument } from './node-status.js';
export { BUILD_VERSION } from './build-info.js';
