// Bench (not a test): writes under a kill -9 nemesis, to set the write p99 beside the leader-failover time.
// A three-node cluster with the developer API (child processes, mutual TLS, real fsync, one shared redis-server,
// the production tick of 100 ms). `writers` clients each create projects at a random member, through the SDK (it
// honours Retry-After); a write whose member does not answer at all (killed, not listening yet) goes to another
// member, and its latency runs from its first attempt to its acknowledgement. Meanwhile the nemesis kills -9 the
// leader and a follower in turn, `rounds` times, `DOWN_MS` each, and starts the victim again on its data
// directory. Failover time = from a leader's kill until another member leads a higher term (its /status).
// At the end every acknowledged project is read back through every member: none may be missing. A write the API
// answers with an error is not acknowledged and is counted by its code: RATE_LIMITED where the writers together
// go faster than the default per-key rate limit (they share one key), a refusal, not a lost write.
// Usage: tsx bench/nemesis.ts [rounds=6] [writers=4]
import { ApiCluster, ApiNodeProcess } from '../test/cluster-api/api-cluster.js';
import { SvcApiError, SvcConnectionError } from '../sdk/src/index.js';

const args = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const rounds = Number(args[0] ?? 6);
const writers = Number(args[1] ?? 4);
/** DOWN_MS: how long a victim stays down before it is started again. */
const DOWN_MS = 2_000;
/** SETTLE_MS: the pause between a victim's restart and the next kill. */
const SETTLE_MS = 3_000;
/** WRITE_ATTEMPTS_MAX bounds the members one logical write is sent to. */
const WRITE_ATTEMPTS_MAX = 10;
/** POLL_MS: how often the failover watch asks the members' /status. */
const POLL_MS = 20;

const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};

/** READ_BACK_ATTEMPTS_MAX bounds the tries of one read-back the API's rate limit refused (RATE_LIMITED). */
const READ_BACK_ATTEMPTS_MAX = 20;

/**
 * readBack reads once, and again after the server's Retry-After while the rate limit refuses it: the read-back
 * sends thousands of reads in a row, over the API's per-key rate, and a refusal says nothing about the data.
 */
async function readBack<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (error) {
      const limited = error instanceof SvcApiError && error.code === 'RATE_LIMITED';
      if (!limited || attempt >= READ_BACK_ATTEMPTS_MAX) throw error;
      await new Promise((resolve) => setTimeout(resolve, (error.retryAfterSeconds ?? 1) * 1_000));
    }
  }
}

async function main(): Promise<void> {
  const cluster = new ApiCluster();
  await cluster.start({ tickMs: 100 });
  const names = [...cluster.nodes.keys()];
  const project = { workspace: cluster.workspace, command: ['./agent.sh'] };
  const acknowledged = new Map<string, string>();
  const latencies: number[] = [];
  let failed = 0;
  /** notAcknowledged counts, by the error's code, the writes that failed (a refusal is not a lost write). */
  const notAcknowledged = new Map<string, number>();
  let stop = false;
  const urls = new Map(names.map((name) => [name, cluster.node(name).httpUrl]));
  try {
    const writing = Array.from({ length: writers }, async (_, w) => {
      let n = 0;
      while (!stop) {
        const name = `w${w}-${n++}`;
        const startedAt = performance.now();
        let done = false;
        for (let attempt = 0; attempt < WRITE_ATTEMPTS_MAX && !done; attempt++) {
          const at = names[Math.floor(Math.random() * names.length)]!;
          try {
            const created = await cluster.clientAt(urls.get(at)!).createProject({ body: { name, ...project } });
            acknowledged.set(created.id, name);
            latencies.push(performance.now() - startedAt);
            done = true;
          } catch (err) {
            // Nothing listens there (killed, or starting): nothing was sent; try another member.
            if (err instanceof SvcConnectionError && err.code === 'CONNECTION_FAILED') continue;
            const code = err instanceof SvcApiError || err instanceof SvcConnectionError ? err.code : String(err);
            notAcknowledged.set(code, (notAcknowledged.get(code) ?? 0) + 1);
            break;
          }
        }
        if (!done) failed++;
      }
    });
    const failovers: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const leader = (await cluster.leaderName())!;
      const killLeader = round % 2 === 0;
      const victim = killLeader ? leader : names.find((name) => name !== leader)!;
      const before = await cluster.statusOf(leader);
      const killedAt = performance.now();
      await cluster.node(victim).kill9();
      if (killLeader) {
        for (;;) {
          const now = await cluster.leaderName();
          const status = now && now !== victim ? await cluster.statusOf(now) : null;
          if (status && status.term > (before?.term ?? 0)) break;
          await new Promise((resolve) => setTimeout(resolve, POLL_MS));
        }
        failovers.push(performance.now() - killedAt);
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, DOWN_MS - (performance.now() - killedAt))));
      const node = await ApiNodeProcess.start(cluster.node(victim).config);
      cluster.nodes.set(victim, node);
      console.log(
        `round ${round + 1}: killed ${killLeader ? 'the leader' : 'a follower'} ${victim}` +
          (killLeader ? `, failover ${Math.round(failovers.at(-1)!)} ms` : '') +
          `, ${acknowledged.size} writes acknowledged so far`,
      );
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    }
    stop = true;
    await Promise.all(writing);
    await cluster.waitAllReady();
    let lost = 0;
    /** refusals: reads that got no answer to judge (an error answer, by its code), counted apart from lost ones. */
    const refusals = new Map<string, number>();
    for (const name of names) {
      const reader = cluster.client(name);
      for (const [id, projectName] of acknowledged) {
        const found = await readBack(() => reader.getProject({ path: { id } })).catch((error: unknown) => {
          const code = `${name}:${(error as { code?: string }).code ?? String(error)}`;
          refusals.set(code, (refusals.get(code) ?? 0) + 1);
          return undefined;
        });
        if (found !== undefined && found?.name !== projectName) lost++;
      }
    }
    if (refusals.size > 0)
      console.log(`read-back refusals (not judged): ${JSON.stringify(Object.fromEntries(refusals))}`);
    const f = (x: number): string => `${Math.round(x)}`;
    console.log(
      `nemesis: ${rounds} kills (leader and follower in turn), ${acknowledged.size} writes acknowledged, ` +
        `${failed} not (by code: ${JSON.stringify(Object.fromEntries(notAcknowledged))}), ${lost} acknowledged reads missing`,
    );
    console.log(
      `write ms p50=${f(quantile(latencies, 0.5))} p99=${f(quantile(latencies, 0.99))} max=${f(Math.max(...latencies))}; ` +
        `failover ms median=${f(quantile(failovers, 0.5))} max=${f(Math.max(...failovers))}; ` +
        `write p99 ${quantile(latencies, 0.99) <= Math.max(...failovers) ? '<=' : '>'} the longest failover`,
    );
  } finally {
    stop = true;
    await cluster.stop();
  }
}

await main();
