// Admin.Logs over a real gRPC server on loopback (transports/admin/admin-service.ts): it answers the host's
// log ring for the asked window, at most ADMIN_LOGS_BYTES_MAX (the newest lines), with what was let go, and
// refuses with FAILED_PRECONDITION on a host that keeps no lines.
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import {
  AdminCallError,
  AdminClientPool,
  adminServiceDefinition,
  adminServiceImplementation,
  type AdminHost,
} from '../../transports/admin/index.js';
import { ADMIN_LOGS_BYTES_MAX } from '../../transports/admin/limits.js';
import { LogRing, type LogRingWindow } from '../../transports/node/log-ring.js';

async function serve(host: AdminHost): Promise<{ server: grpc.Server; address: string }> {
  const server = new grpc.Server();
  server.addService(adminServiceDefinition(), adminServiceImplementation({ host }));
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    ),
  );
  return { server, address: `127.0.0.1:${port}` };
}

describe('transports/admin: Admin.Logs over gRPC', function () {
  this.timeout(30_000);
  const pool = new AdminClientPool({ credentials: grpc.credentials.createInsecure() });
  const servers: grpc.Server[] = [];
  after(async function () {
    pool.close();
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.tryShutdown(() => resolve()))));
  });

  it('answers the window of the ring, newest lines within ADMIN_LOGS_BYTES_MAX, and counts the rest', async function () {
    const ring = new LogRing(4 * ADMIN_LOGS_BYTES_MAX, null);
    const t0 = Date.parse('2026-11-27T10:00:00Z');
    const pad = 'x'.repeat(1_000);
    const count = Math.ceil((2 * ADMIN_LOGS_BYTES_MAX) / 1_050);
    for (let i = 0; i < count; i++)
      ring.write(`${JSON.stringify({ time: new Date(t0 + i).toISOString(), node: 'n1', msg: `m${i}`, pad })}\n`);
    const { server, address } = await serve({ logs: (w: LogRingWindow) => ring.read(w) } as unknown as AdminHost);
    servers.push(server);
    const window = await pool.logs(address, { sinceUnixMs: t0 + 10, untilUnixMs: t0 + 12 }, Date.now() + 10_000);
    assert.deepEqual(
      window.lines.map((l) => (JSON.parse(l) as { msg: string }).msg),
      ['m10', 'm11', 'm12'],
    );
    assert.equal(window.oldestUnixMs, t0);
    const all = await pool.logs(address, { sinceUnixMs: 0, untilUnixMs: 0 }, Date.now() + 10_000);
    assert.ok(all.lines.join('').length <= ADMIN_LOGS_BYTES_MAX);
    assert.match(all.lines.at(-1)!, new RegExp(`"msg":"m${count - 1}"`), 'the newest line is answered');
    assert.equal(all.dropped, count - all.lines.length, 'the lines left out are counted');
  });

  it('refuses with FAILED_PRECONDITION on a node that keeps no log lines', async function () {
    const { server, address } = await serve({} as unknown as AdminHost);
    servers.push(server);
    await assert.rejects(
      pool.logs(address, { sinceUnixMs: 0, untilUnixMs: 0 }, Date.now() + 10_000),
      (err: unknown) => err instanceof AdminCallError && err.code === grpc.status.FAILED_PRECONDITION,
    );
  });
});
