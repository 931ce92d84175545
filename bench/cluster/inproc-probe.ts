// Probe (not a test, not run by `npm run bench`): CPU per write with three nodes in this one process
// (real sockets, mTLS unless --insecure, real fsync), idle first, then 1 and 64 concurrent writers twice.
// It shows where per-write cost is fixed per round trip: at 1 writer a write costs ~8-14 ms of CPU here,
// at 64 writers ~0.2-0.3 ms (batches share the round trips).
//   npx tsx bench/cluster/inproc-probe.ts [writes] [--insecure] [--c1 | --idle]
import { InProcessCluster } from '../../test/node/in-process-cluster.js';
const c = new InProcessCluster();
await c.start(
  ['n1', 'n2', 'n3'],
  ['n1', 'n2', 'n3'],
  process.argv.includes('--insecure') ? { tls: { mode: 'insecure' } } : {},
);
const leader = await c.waitLeader(30_000);
const store = leader.store;
const n = Number(process.argv[2] ?? 300);
for (let i = 0; i < 50; i++) await store.put(`warm/${i}`, { v: i });
{
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, process.argv.includes('--idle') ? 8000 : 3000));
  const cpu = process.cpuUsage(c0);
  console.log(
    `idle: ${((cpu.user + cpu.system) / 1000 / ((performance.now() - t0) / 1000)).toFixed(1)} ms cpu per second`,
  );
}
for (const writers of process.argv.includes('--c1') ? [1] : process.argv.includes('--idle') ? [] : [1, 64, 1, 64]) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let i = 0; i < n / writers; i++)
        await store.put(`k/${writers}/${w}/${i}/${Math.random()}`, { v: 'x'.repeat(80) });
    }),
  );
  const cpu = process.cpuUsage(c0);
  const wall = performance.now() - t0;
  console.log(
    `writers ${writers}: ${((n / wall) * 1000).toFixed(0)} writes/s, ${((cpu.user + cpu.system) / wall).toFixed(0)} ms cpu per second, ${((cpu.user + cpu.system) / 1000 / n).toFixed(3)} ms cpu per write (user ${(cpu.user / 1000 / n).toFixed(3)}, sys ${(cpu.system / 1000 / n).toFixed(3)})`,
  );
}
await c.stop();
process.exit(0);
