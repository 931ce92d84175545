// Asking the kernel about loopback ports: `svc cluster` plans its nodes' ports with these, and the
// tests and benchmarks that start servers in child processes take theirs from here too.
import { createServer, type Server } from 'node:net';

/** LOOPBACK_HOST is where ports are asked for unless a caller names another host. */
export const LOOPBACK_HOST = '127.0.0.1';

/** freePorts asks the kernel for `count` free ports on host, all held at once so they differ. */
export async function freePorts(count: number, host = LOOPBACK_HOST): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, host, () => resolve());
      });
    }
    return servers.map((s) => (s.address() as { port: number }).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/** portIsFree tells whether port on host can be listened on now (false: something else holds it). */
export function portIsFree(port: number, host = LOOPBACK_HOST): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}
