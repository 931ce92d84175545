// A node in a child process, driven over the IPC channel by child-node.ts, so a test can kill -9
// it. argv[2] is the NodeConfig as JSON. Requests: {id, op, ...}; answers: {id, ok, result | error}.
import { Node } from '../../transports/node/node.js';
import type { NodeConfig } from '../../transports/node/config.js';
import type { JsonObject } from '../../api/store/document-store.js';

interface Request {
  id: number;
  op: 'put' | 'get' | 'status' | 'dump' | 'stop';
  key?: string;
  value?: JsonObject;
}

const send = (message: unknown): void => {
  process.send?.(message);
};

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as NodeConfig;
  const node = new Node(config);
  await node.start();
  void node.failed.then((err) => send({ type: 'failed', error: err.message }));
  process.on('message', (raw: Request) => {
    void (async () => {
      try {
        let result: unknown;
        switch (raw.op) {
          case 'put': result = await node.store.put(raw.key!, raw.value!); break;
          case 'get': result = await node.store.get(raw.key!); break;
          case 'status': result = node.status(); break;
          // dump is the local replica, no read barrier: what this node has applied.
          case 'dump': result = { appliedSeq: node.stateMachine.appliedSeq, entries: node.stateMachine.list('', Number.MAX_SAFE_INTEGER).entries }; break;
          case 'stop':
            await node.stop();
            send({ id: raw.id, ok: true, result: null });
            process.exit(0);
            return;
          default: throw new Error(`unknown op ${String(raw.op)}`);
        }
        send({ id: raw.id, ok: true, result });
      } catch (err) {
        send({ id: raw.id, ok: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'started', grpc: node.grpcAddress, http: node.httpAddress, status: node.status() });
}

main().catch((err: unknown) => {
  send({ type: 'start-failed', error: String(err) });
  process.exit(1);
});
