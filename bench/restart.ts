// Bench (not a test): how long a restarted member takes to serve, and how long it holds a client meanwhile.
// A three-node cluster with the developer API (child processes, mutual TLS, real fsync, one shared redis-server,
// the production tick of 100 ms), filled with `records` projects; then, `restarts` times: kill -9 a follower,
// write through the leader while it is down, start it again on its data directory, and time
//  - exec → started: the fork until the node says it serves (its HTTP server, the API mounted);
//  - exec → first answer: the fork until the restarted member's first answer to an authenticated GET
//    (200, or a prompt 503) — a client polls it from the start;
//  - exec → first 200 read / first 201 write through the restarted member;
//  - exec → /ready;
//  - the longest a single request to the restarted member was held (any answer) during the window.
// Prints the median (and max) of each over the restarts.
// Usage: tsx bench/restart.ts [restarts=5] [records=2000]
import { ApiCluster, ApiNodeProcess } from '../test/cluster-api/api-cluster.js';
import { SvcApiError } from '../sdk/src/index.js';

const args = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const restarts = Number(args[0] ?? 5);
const records = Number(args[1] ?? 2000);
/** FILL_CONCURRENCY writers fill the cluster before the restarts. */
const FILL_CONCURRENCY = 16;
/** DOWN_MS is how long the member stays down, with writes through the leader meanwhile (it has to catch up). */
const DOWN_MS = 1_500;
/** WINDOW_MS bounds how long each restart is watched after the node started (the start is bounded by the harness). */
const WINDOW_MS = 20_000;
/** PROBE_TIMEOUT_MS bounds one probe request. */
const PROBE_TIMEOUT_MS = 15_000;
/** noSdkRetry: each probe sees the member's own answer (the SDK's retry of a 503 is off). */
const noSdkRetry = {};

interface Sample {
  started: number;
  firstAnswer: number;
  firstRead: number;
  firstWrite: number;
  ready: number;
  heldMax: number;
}

const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? NaN;
};

async function main(): Promise<void> {
  const cluster = new ApiCluster();
  await cluster.start({ tickMs: 100 });
  try {
    const leader = (await cluster.leaderName())!;
    const leaderClient = cluster.client(leader);
    const project = { workspace: cluster.workspace, command: ['./agent.sh'] };
    let made = 0;
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: FILL_CONCURRENCY }, async () => {
        while (made < records) {
          made++;
          const created = await leaderClient.createProject({ body: { name: `fill-${made}`, ...project } });
          ids.push(created.id);
        }
      }),
    );
    console.log(`filled ${ids.length} projects through ${leader}`);
    const samples: Sample[] = [];
    for (let round = 0; round < restarts; round++) {
      const leaderNow = (await cluster.leaderName())!;
      const follower = [...cluster.nodes.keys()].find((name) => name !== leaderNow)!;
      await cluster.node(follower).kill9();
      const writerClient = cluster.client(leaderNow);
      const downUntil = Date.now() + DOWN_MS;
      let n = 0;
      while (Date.now() < downUntil) {
        await writerClient.createProject({ body: { name: `down-${round}-${n++}`, ...project } });
      }
      const old = cluster.node(follower);
      const t0 = performance.now();
      const sample: Sample = {
        started: NaN,
        firstAnswer: NaN,
        firstRead: NaN,
        firstWrite: NaN,
        ready: NaN,
        heldMax: 0,
      };
      const starting = ApiNodeProcess.start(old.config).then((node) => {
        sample.started = performance.now() - t0;
        cluster.nodes.set(follower, node);
        return node;
      });
      const httpUrl = old.httpUrl;
      let startFailed = false;
      starting.catch(() => (startFailed = true));
      const windowOver = (): boolean =>
        startFailed || (!Number.isNaN(sample.started) && performance.now() > t0 + sample.started + WINDOW_MS);
      // Probe the restarted member's URL directly from the start (a connection refused is no answer).
      const probe = async (what: 'read' | 'write'): Promise<void> => {
        const probeClient = cluster.clientAt(httpUrl, { requestTimeoutMs: PROBE_TIMEOUT_MS, ...noSdkRetry });
        while (!windowOver()) {
          const sent = performance.now();
          try {
            if (what === 'read') await probeClient.getProject({ path: { id: ids[0]! } });
            else await probeClient.createProject({ body: { name: `probe-${round}`, ...project } });
            const at = performance.now();
            sample.heldMax = Math.max(sample.heldMax, at - sent);
            if (Number.isNaN(sample.firstAnswer)) sample.firstAnswer = at - t0;
            if (what === 'read') sample.firstRead = at - t0;
            else sample.firstWrite = at - t0;
            return;
          } catch (err) {
            const at = performance.now();
            if (err instanceof SvcApiError) {
              sample.heldMax = Math.max(sample.heldMax, at - sent);
              if (Number.isNaN(sample.firstAnswer)) sample.firstAnswer = at - t0;
            }
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      };
      const readiness = (async () => {
        while (!windowOver()) {
          try {
            const response = await cluster.fetch(`${httpUrl}/ready`, { signal: AbortSignal.timeout(2_000) });
            if (response.status === 200) {
              sample.ready = performance.now() - t0;
              return;
            }
          } catch {
            // not listening yet
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      await Promise.all([starting, probe('read'), probe('write'), readiness]);
      samples.push(sample);
      const f = (x: number): string => (Number.isNaN(x) ? 'never' : `${Math.round(x)}`);
      console.log(
        `restart ${round + 1}: ${follower} started ${f(sample.started)} ms, first answer ${f(sample.firstAnswer)}, ` +
          `first 200 read ${f(sample.firstRead)}, first 201 write ${f(sample.firstWrite)}, ready ${f(sample.ready)}, ` +
          `longest held ${f(sample.heldMax)} ms (${n} writes while down)`,
      );
      await cluster.waitAllReady();
    }
    const line = (key: keyof Sample): string =>
      `${key}=${Math.round(median(samples.map((s) => s[key])))}/${Math.round(Math.max(...samples.map((s) => s[key])))}`;
    console.log(
      `restart ms median/max over ${samples.length} (exec = fork, tsx): ` +
        (['started', 'firstAnswer', 'firstRead', 'firstWrite', 'ready', 'heldMax'] as const).map(line).join(' '),
    );
  } finally {
    await cluster.stop();
  }
}

await main();
