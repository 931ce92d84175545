// No stall behind a restart, on real nodes: three nodes with the developer API in child processes (mutual TLS,
// real fsync, one real redis-server). A follower is killed -9 and writes go on through the leader, so it has to
// catch up; it is started again on its data directory while a client writes and reads through it alone, from
// the moment it is forked. Every answer the member gives comes within a bound derived from the config (twice
// the election timeout: a leader change would hold a client about that long), and is a success or a 503 with a
// JSON code and Retry-After (STORE_UNAVAILABLE for a list while it catches up, NOT_READY before its API is
// mounted); its gets are read at the leader and its writes forwarded meanwhile, and succeed. Then nothing
// acknowledged, through any node, is lost.
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
const LEADER_RECONNECT_BACKOFF_MS = 12_000;
/** WRITES_WHILE_DOWN: writes through the leader while the member is down, so it has to catch up. */
const WRITES_WHILE_DOWN = 20;
/** SERVED_AFTER_START: the member must answer this many reads and writes with success before the window closes. */
const SERVED_AFTER_START = 5;
/** WINDOW_MS bounds the client loop after the member started. */
const WINDOW_MS = 30_000;

/** RESTART_ROUNDS_MAX bounds the restarts until one catches the member behind (see the test). */
const RESTART_ROUNDS_MAX = 3;

/** listAnswers lists a round's answers for a failure message. */
const listAnswers = (answers: Answer[]): string =>
  answers.map((a) => `${a.kind} ${a.outcome} ${Math.round(a.ms)}ms [${a.member}]`).join(', ');

interface Answer {
  kind: 'get' | 'list' | 'write';
  ms: number;
  outcome: string;
  retryAfter: number | null;
  /** member: the member's leader and applied seq as its /status said after the answer (for the failure message). */
  member: string;
}

describe('cluster-api: a restarted member holds no request longer than a leader change would', function () {
  this.timeout(600_000);
  const cluster = new ApiCluster();

  before(async () => {
    await cluster.start({
      tickMs: TICK_MS,
      nodeConfig: {
        grpcLimits: { initialReconnectBackoffMs: LEADER_RECONNECT_BACKOFF_MS, maxReconnectBackoffMs: 20_000 },
      },
    });
  });
  after(async () => {
    await cluster.stop();
  });

  it('answers every request at once (a success, or a 503 with a code and Retry-After), and loses nothing', async () => {
    const project = { workspace: cluster.workspace, command: ['./agent.sh'] };
    const acknowledged = new Map<string, string>();
    const seed = await cluster
      .client((await cluster.leaderName())!)
      .createProject({ body: { name: 'seed', ...project } });
    acknowledged.set(seed.id, 'seed');

    /** restartRound kills a follower, writes through the leader, starts the follower again and asks it alone. */
    const restartRound = async (round: number): Promise<Answer[]> => {
      const leader = (await cluster.leaderName())!;
      const member = [...cluster.nodes.keys()].find((name) => name !== leader)!;
      const leaderClient = cluster.client(leader);
      const old = cluster.node(member);
      await old.kill9();
      for (let i = 0; i < WRITES_WHILE_DOWN; i++) {
        const created = await leaderClient.createProject({ body: { name: `while-down-${round}-${i}`, ...project } });
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
      const served = { get: 0, list: 0, write: 0 };
      const windowOpen = (): boolean =>
        startFailed === null &&
        (startedAt === 0 || Date.now() - startedAt < WINDOW_MS) &&
        (Object.values(served).some((count) => count < SERVED_AFTER_START) || startedAt === 0);
      let n = 0;
      while (windowOpen()) {
        const kind = (['get', 'write', 'list'] as const)[n % 3]!;
        const name = `through-member-${round}-${n++}`;
        const sentAt = performance.now();
        try {
          if (kind === 'get') {
            const found = await client.getProject({ path: { id: seed.id } });
            assert.equal(found.name, 'seed');
          } else if (kind === 'list') {
            await client.listProjects();
          } else {
            const created = await client.createProject({ body: { name, ...project } });
            acknowledged.set(created.id, name);
          }
          served[kind]++;
          const ms = performance.now() - sentAt;
          answers.push({ kind, ms, outcome: 'ok', retryAfter: null, member: await memberState() });
        } catch (err) {
          const ms = performance.now() - sentAt;
          if (err instanceof SvcConnectionError && err.code === 'CONNECTION_FAILED') {
            // Nothing listens yet: no answer, nothing held. Only before the member started.
            assert.equal(startedAt, 0, `connection failed after the member started: ${err.message}`);
            await new Promise((resolve) => setTimeout(resolve, 20));
            continue;
          }
          if (!(err instanceof SvcApiError)) throw err;
          const outcome = `${err.status} ${err.code}`;
          answers.push({ kind, ms, outcome, retryAfter: err.retryAfterSeconds, member: await memberState() });
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      await starting;
      assert.equal(startFailed, null, `the member did not start again: ${String(startFailed)}`);
      const summary = listAnswers(answers);
      assert.ok(
        Object.values(served).every((count) => count >= SERVED_AFTER_START),
        `not served: ${summary}`,
      );
      for (const answer of answers) {
        assert.ok(answer.ms <= HOLD_BOUND_MS, `held ${Math.round(answer.ms)} ms > ${HOLD_BOUND_MS} ms: ${summary}`);
        if (answer.outcome === 'ok') continue;
        assert.match(answer.outcome, /^503 (STORE_UNAVAILABLE|NOT_READY)$/, summary);
        assert.equal(answer.retryAfter, 1, `a 503 without Retry-After: ${summary}`);
      }
      await cluster.waitAllReady();
      return answers;
    };

    // The member must be caught behind once: it refused a list while catching up, and served a get and a write
    // before that refusal (read at the leader, forwarded to it). Whether a round catches it behind depends on
    // when the leader's reconnect falls; a bounded number of rounds.
    const rounds: Answer[][] = [];
    const caughtBehind = (answers: Answer[]): boolean => {
      let lastBehind = -1;
      answers.forEach((answer, at) => {
        if (answer.outcome === '503 STORE_UNAVAILABLE') lastBehind = at;
      });
      const before = answers.slice(0, Math.max(0, lastBehind));
      return ['get', 'write'].every((kind) => before.some((a) => a.kind === kind && a.outcome === 'ok'));
    };
    while (rounds.length < RESTART_ROUNDS_MAX && !rounds.some(caughtBehind))
      rounds.push(await restartRound(rounds.length));
    assert.ok(rounds.some(caughtBehind), `never served while behind: ${rounds.map(listAnswers).join(' | ')}`);

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
