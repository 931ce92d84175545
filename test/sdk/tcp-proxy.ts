// A loopback TCP proxy whose connections a test can cut, to drop an event stream mid-flight the way a network
// does (the client sees its connection reset, not a clean end).
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  url: string;
  /** connectionCount counts connections accepted so far. */
  connectionCount(): number;
  /** busyConnectionCount counts open connections that have carried a request (fetch may also hold idle ones
   * open in its pool until its keep-alive timeout). */
  busyConnectionCount(): number;
  /** dropAll resets every open connection, both sides. */
  dropAll(): void;
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  busy: boolean;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const pairs = new Set<Pair>();
  let accepted = 0;
  const server = net.createServer((client) => {
    accepted += 1;
    const pair: Pair = { client, upstream: net.connect(Number(target.port), target.hostname), busy: false };
    pairs.add(pair);
    client.once('data', () => {
      pair.busy = true;
    });
    for (const socket of [pair.client, pair.upstream]) {
      socket.on('error', () => undefined);
      socket.on('close', () => {
        pair.client.destroy();
        pair.upstream.destroy();
        pairs.delete(pair);
      });
    }
    pair.client.pipe(pair.upstream);
    pair.upstream.pipe(pair.client);
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    connectionCount: () => accepted,
    busyConnectionCount: () => [...pairs].filter((pair) => pair.busy).length,
    dropAll() {
      for (const pair of pairs) {
        pair.client.resetAndDestroy();
        pair.upstream.resetAndDestroy();
      }
    },
    async close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
