// A cluster node with the developer API in a child process, driven over IPC by api-cluster.ts so a test can
// kill -9 it. argv[2] is the NodeConfig as JSON. Requests: {id, op, ...}; answers: {id, ok, result | error}.
// `bare` serves a bare Express handler in this same process, for bench/api-cluster.ts to compare against.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Node } from '../../transports/node/node.js';
import type { NodeConfig } from '../../transports/node/config.js';
import { bootstrapAdminKey } from '../../api/auth/api-keys.js';

interface Request {
  id: number;
  op: 'bootstrap-admin' | 'status' | 'entries' | 'bare' | 'stop';
  name?: string;
  prefix?: string;
  payload?: unknown;
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
          // The CLI's `svc keys create` does this through a store client; here the node's own store does it.
          case 'bootstrap-admin': result = await bootstrapAdminKey(node.store, raw.name ?? 'admin'); break;
          case 'status': result = node.status(); break;
          // entries is this node's local replica under a prefix, without a read barrier: what it has applied.
          case 'entries': result = node.stateMachine.list(raw.prefix ?? '', Number.MAX_SAFE_INTEGER).entries.map((entry) => entry.key); break;
          case 'bare': {
            const bare = express();
            const payload = raw.payload;
            bare.get('/projects', (_req, res) => { res.json(payload); });
            const server = bare.listen(0, '127.0.0.1');
            await new Promise((resolve) => server.once('listening', resolve));
            result = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
            break;
          }
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
  send({ type: 'started', http: node.httpAddress, grpc: node.grpcAddress });
}

main().catch((err: unknown) => {
  send({ type: 'start-failed', error: String(err) });
  process.exit(1);
});
