// ChildNode runs node-child.ts in its own process (tsx) through the shared child harness, so a test can
// kill -9 a node mid-write and start it again on the same data directory and ports.
import { fileURLToPath } from 'node:url';
import type { JsonObject, VersionedValue } from '../../store/document-store.js';
import type { NodeConfig } from '../../cli/node/config.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';
import { NodeChildProcess } from './child-harness.js';

export { CHILD_REQUEST_TIMEOUT_MS, CHILD_START_TIMEOUT_MS } from './child-harness.js';

const entry = fileURLToPath(new URL('./node-child.ts', import.meta.url));

export class ChildNode {
  private constructor(private readonly child: NodeChildProcess) {}

  static async start(config: NodeConfig): Promise<ChildNode> {
    return new ChildNode(await NodeChildProcess.fork(entry, config));
  }

  get config(): NodeConfig {
    return this.child.config;
  }

  /** startStatus is the node's status right after start: what it recovered from disk. */
  get startStatus(): NodeStatusDocument | null {
    return this.child.startStatus;
  }

  get pid(): number {
    return this.child.pid;
  }

  put(key: string, value: JsonObject): Promise<{ version: number }> {
    return this.child.request({ op: 'put', key, value }) as Promise<{ version: number }>;
  }

  get(key: string): Promise<VersionedValue | null> {
    return this.child.request({ op: 'get', key }) as Promise<VersionedValue | null>;
  }

  status(): Promise<NodeStatusDocument> {
    return this.child.request({ op: 'status' }) as Promise<NodeStatusDocument>;
  }

  dump(): Promise<{ appliedSeq: number; entries: Array<{ key: string; value: JsonObject; version: number }> }> {
    return this.child.request({ op: 'dump' }) as Promise<{
      appliedSeq: number;
      entries: Array<{ key: string; value: JsonObject; version: number }>;
    }>;
  }

  /** kill9 ends the process with SIGKILL: no flush, no goodbye. */
  kill9(): Promise<void> {
    return this.child.kill9();
  }

  /** stop shuts the node down cleanly and waits for the process to exit. */
  stop(): Promise<void> {
    return this.child.stop();
  }
}
