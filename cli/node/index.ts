// A real node: the engine, its driver loop and adapters (transports/), the replicated store (store/) and,
// with an `api` section, the developer API (api/), assembled in one process. See README.md.
export { Node } from './node.js';
export {
  ConfigError,
  resolveNodeConfig,
  parseHostPort,
  type NodeConfig,
  type NodeApiConfig,
  type NodeTls,
  type BootstrapMember,
  type LogLevel,
  type ResolvedNodeConfig,
} from './config.js';
