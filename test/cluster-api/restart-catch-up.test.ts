// No stall behind a restart, on real nodes: three nodes with the developer API in child processes (mutual TLS,
// real fsync, one real redis-server). A follower is killed -9 and writes go on through the leader, so it has to
// catch up; it is started again on its data directory while a client writes and reads through it alone, from
// the moment it is forked. Every answer the member gives comes within a bound derived from the config (twice
// the election timeout: a leader change would hold a client about that long), and is a success or a 503 with a
// JSON code (STORE_UNAVAILABLE while it catches up, NOT_READY before its API is mounted), Retry-After on it.
// Then nothing acknowledged, through any node, is lost.
//
// The leader's gRPC channel to the killed member is in reconnect backoff when it comes back; its
// initialReconnectBackoffMs is raised here so that the member, up and serving, hears nothing from the leader
// for several seconds (the default backoff gives the same situation for up to maxReconnectBackoffMs, but
// shorter and by chance). On the code before this test, every request through the member in that time waited
// for it to learn of the leader and catch up: held for readTimeoutMs (5 s) and more, then 503 without
// Retry-After.
import assert from 'node:assert/strict';
import { ApiCluster, ApiNodeProcess } from './api-cluster.js';
import { SvcApiError, SvcConnectionError } from '../../sdk/src/index.js';
import { DEFAULT_LIMITS } from '../../engine/limits.js';
import { waitFor } from '../node/harness.js';

/** TICK_MS: the production tick (transports/node/limits.ts), so the election timeout is the production one. */
const TICK_MS = 100;
/** HOLD_BOUND_MS: no answer of the restarted member may take longer than two election timeouts. */
const HOLD_BOUND_MS = 2 * DEFAULT_LIMITS.electionTimeoutTicks * TICK_MS;
/** LEADER_RECONNECT_BACKOFF_MS: how long the leader's channel to the restarted member stays in backoff (see above). */
const LEADER_RECONNECT_BACKOFF_MS = 8_000;
/** WRITES_WHILE_DOWN: writes through the leader while the member is down, so it has to catch up. */
const WRITES_WHILE_DOWN = 20;
/** SERVED_AFTER_START: the member must answer this many reads and writes with success before the window closes. */
const SERVED_AFTER_START = 5;
/** WINDOW_MS bounds the client loop after the member started. */
const WINDOW_MS = 30_000;

interface Answer {
  kind: 'read' | 'write';
  ms: number;
  outcome: string;
  retryAfter: number | null;
  /** member: the member's leader and applied seq as its /status said after the answer (for the failure message). */
  member: string;
}

describe('cluster-api: a restarted member holds no request longer than a leader change would', function () {
  this.timeout(300_000);
  const cluster = new ApiCluster();

  before(async () => {
    await cluster.start({
      tickMs: TICK_MS,
      nodeConfig: {
        grpcLimits: { initialReconnectBackoffMs: LEADER_RECONNECT_BACKOFF_MS, maxReconnectBackoffMs: 10_000 },
      },
    });
  });
  after(async () => {
    await cluster.stop();
  });

  it('answers every request at once (a success, or a 503 with a code and Retry-After), and loses nothing', async () => {
    const project = { workspace: cluster.workspace, command: ['./agent.sh'] };
    const leader = (await cluster.leaderName())!;
    const member = [...cluster.nodes.keys()].find((name) => name !== leader)!;
    const acknowledged = new Map<string, string>();
    const leaderClient = cluster.client(leader);
    const seed = await leaderClient.createProject({ body: { name: 'seed', ...project } });
    acknowledged.set(seed.id, 'seed');

    const old = cluster.node(member);
    await old.kill9();
    for (let i = 0; i < WRITES_WHILE_DOWN; i++) {
      const created = await leaderClient.createProject({ body: { name: `while-down-${i}`, ...project } });
      acknowledged.set(created.id, created.name);
    }

    // The member's own answers: no SDK retry (each answer is seen), a timeout far above the bound (a hold shows).
    const client = cluster.clientAt(old.httpUrl, { retryAttemptsMax: 0, requestTimeoutMs: 60_000 });
    const answers: Answer[] = [];
    let startedAt = 0;
    let startFailed: unknown = null;
    const starting = ApiNodeProcess.start(old.config).then(
      (node) => {
        cluster.nodes.set(member, node);
        startedAt = Date.now();
      },
      (err: unknown) => {
        startFailed = err;
      },
    );
    const memberState = async (): Promise<string> => {
      const status = await cluster.statusOf(member);
      return status ? `leader ${status.leaderId} applied ${status.appliedSeq}/${status.commitSeq}` : 'no status';
    };
    const served = { read: 0, write: 0 };
    const windowOpen = (): boolean =>
      startFailed === null &&
      (startedAt === 0 || Date.now() - startedAt < WINDOW_MS) &&
      (served.read < SERVED_AFTER_START || served.write < SERVED_AFTER_START || startedAt === 0);
    let n = 0;
    while (windowOpen()) {
      const kind = n % 2 === 0 ? 'read' : 'write';
      const name = `through-member-${n++}`;
      const sentAt = performance.now();
      try {
        if (kind === 'read') {
          const found = await client.getProject({ path: { id: seed.id } });
          assert.equal(found.name, 'seed');
        } else {
          const created = await client.createProject({ body: { name, ...project } });
          acknowledged.set(created.id, name);
        }
        served[kind]++;
        answers.push({
          kind,
          ms: performance.now() - sentAt,
          outcome: 'ok',
          retryAfter: null,
          member: await memberState(),
        });
      } catch (err) {
        const ms = performance.now() - sentAt;
        if (err instanceof SvcConnectionError && err.code === 'CONNECTION_FAILED') {
          // Nothing listens yet: no answer, nothing held. Only before the member started.
          assert.equal(startedAt, 0, `connection failed after the member started: ${err.message}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
          continue;
        }
        if (!(err instanceof SvcApiError)) throw err;
        answers.push({
          kind,
          ms,
          outcome: `${err.status} ${err.code}`,
          retryAfter: err.retryAfterSeconds,
          member: await memberState(),
        });
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    await starting;
    assert.equal(startFailed, null, `the member did not start again: ${String(startFailed)}`);

    const summary = answers.map((a) => `${a.kind} ${a.outcome} ${Math.round(a.ms)}ms [${a.member}]`).join(', ');
    assert.ok(served.read >= SERVED_AFTER_START && served.write >= SERVED_AFTER_START, `not served: ${summary}`);
    for (const answer of answers) {
      assert.ok(answer.ms <= HOLD_BOUND_MS, `held ${Math.round(answer.ms)} ms > ${HOLD_BOUND_MS} ms: ${summary}`);
      if (answer.outcome === 'ok') continue;
      assert.match(answer.outcome, /^503 (STORE_UNAVAILABLE|NOT_READY)$/, summary);
      assert.equal(answer.retryAfter, 1, `a 503 without Retry-After: ${summary}`);
    }
    // The member refused while catching up: the window this test is about did happen.
    assert.ok(
      answers.some((answer) => answer.outcome === '503 STORE_UNAVAILABLE'),
      `the member was never caught behind: ${summary}`,
    );

    // Nothing acknowledged is lost: every node has every project acknowledged through any node.
    await cluster.waitAllReady();
    for (const name of cluster.nodes.keys()) {
      const reader = cluster.client(name);
      await waitFor(
        async () => {
          for (const [id, projectName] of acknowledged) {
            const found = await reader.getProject({ path: { id } });
            assert.equal(found.name, projectName);
          }
          return true;
        },
        `${name} to serve every acknowledged project`,
        30_000,
      );
    }
  });
});
