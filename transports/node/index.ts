// The node's driver loop, which carries out the engine's effects over real I/O, and the node's HTTP
// surface. The Node that assembles them with the store is cli/node/node.ts. See README.md.
export { DEFAULT_NODE_LIMITS, nodeLimits, type NodeLimits } from './limits.js';
export { Driver, type DriverPorts, type DriverOptions } from './driver.js';
export type { NodeStatusDocument } from './node-status.js';
export { BUILD_VERSION } from './build-info.js';
