// The developer API on a real cluster, driven through the SDK: three nodes in child processes over mutual TLS,
// each serving the API on its HTTP port over the replicated store, one shared redis-server. Records written on
// one node are seen at once on the others; runs are queued on one node, worked on any, streamed from a third;
// the rate limit is shared; run records live in the replicated store (not Redis); killing the leader (SIGKILL)
// loses no acknowledged record (projects, keys, runs…) and writes continue
// once a new leader is elected. A fast-check property sends random requests and never gets a 5xx other than
// 503 STORE_UNAVAILABLE, and that only while there is no leader.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { SvcApiError, SvcConnectionError, type SvcClient } from '../../sdk/src/index.js';
import { testSecretKey } from '../api/harness.js';
import { waitFor } from '../node/harness.js';
import { ApiCluster, CLUSTER_RATE_LIMIT_PER_SECOND, READY_TIMEOUT_MS } from './api-cluster.js';
import {
  bodyArbitrary,
  contentTypeArbitrary,
  extraHeadersArbitrary,
  methodArbitrary,
  pathArbitrary,
  printable,
  rawRequest,
  type RawResponse,
} from './fuzz-requests.js';

/** WRITER_CREATES_MAX bounds each writer of the kill test. */
const WRITER_CREATES_MAX = 400;
/** WRITES_AFTER_ELECTION is how many creates each surviving writer must get acknowledged after the new leader. */
const WRITES_AFTER_ELECTION = 5;
/** FUZZ_RUNS bounds the fuzz property (CLUSTER_API_FUZZ_RUNS deepens it). */
const FUZZ_RUNS = Number(process.env.CLUSTER_API_FUZZ_RUNS ?? 200);
/** PROBES_MAX bounds the requests sent to the survivors while they elect a new leader. */
const PROBES_MAX = 2_000;
/** nodePaths are the node's own routes, whose errors are {status, reason} rather than the API's {code, ...}. */
const nodePaths = ['/health', '/ready', '/status', '/metrics'];

/** CONCURRENT_READERS follow one run on one node at once. */
const CONCURRENT_READERS = 20;
/** STREAM_END_MS_MAX is how soon a stream resumed after `complete` must end (the keep-alive is 15 s). */
const STREAM_END_MS_MAX = 3_000;

/** allProjectIds pages through GET /projects on one node. */
async function allProjectIds(client: SvcClient): Promise<Set<string>> {
  const ids = new Set<string>();
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const result = await client.listProjects({ query: { limit: 200, ...(cursor ? { cursor } : {}) } });
    for (const project of result.items) ids.add(project.id);
    if (result.next_cursor === null) return ids;
    cursor = result.next_cursor;
  }
  throw new Error('more than 100 pages of projects');
}

/** checkAnswer: below 500, or 503 STORE_UNAVAILABLE (no leader), and JSON errors with their code. */
function checkAnswer(what: string, path: string, response: RawResponse): 'ok' | 'no-leader' {
  const nodePath = nodePaths.includes(path.split('?')[0]!);
  let parsed: { code?: unknown; status?: unknown } | undefined;
  try {
    parsed = JSON.parse(response.body) as typeof parsed;
  } catch {
    parsed = undefined;
  }
  if (
    response.status === 503 &&
    (parsed?.code === 'STORE_UNAVAILABLE' || (nodePath && parsed?.status === 'unavailable'))
  )
    return 'no-leader';
  assert.ok(response.status < 500, `${what} → ${response.status} ${response.body.slice(0, 300)}`);
  if (response.status >= 400 && response.body !== '') {
    assert.ok(
      nodePath ? typeof parsed?.status === 'string' : typeof parsed?.code === 'string',
      `${what} → ${response.status} ${response.body.slice(0, 300)}`,
    );
  }
  return 'ok';
}

/** isStoreUnavailable: the one failure a node may answer while the cluster has no leader. */
function isStoreUnavailable(error: unknown): boolean {
  return error instanceof SvcApiError && error.status === 503 && error.code === 'STORE_UNAVAILABLE';
}

describe('cluster-api: the developer API on a three-node cluster, through the SDK', function () {
  this.timeout(120_000);
  const cluster = new ApiCluster();
  const project = { workspace: '', command: ['./agent.sh'] };
  /** finishedRunId is a run that succeeded; its record must outlive a Redis flush and the leader's kill. */
  let finishedRunId = '';

  before(async () => {
    await cluster.start();
    project.workspace = cluster.workspace;
  });
  after(async () => {
    await cluster.stop();
  });

  it("serves the API over HTTPS on every node's HTTP port, beside the node's own /health, /ready, /status; /metrics on its own listener", async () => {
    for (const name of ['a', 'b', 'c']) {
      const client = cluster.client(name);
      assert.deepEqual(await client.getHealth(), { status: 'ok' }, "the node's /health");
      assert.deepEqual(await client.getReady(), { status: 'ok' }, "the node's /ready (the API's would say ready)");
      const document = (await client.getOpenApi()) as { openapi?: string };
      assert.equal(document.openapi, '3.1.0');
      assert.deepEqual(
        (await client.listUsers()).items.map((user) => user.id),
        [cluster.admin.userId],
      );
      assert.match(cluster.node(name).httpUrl, /^https:/);
      const status = (await (await cluster.fetch(`${cluster.node(name).httpUrl}/status`)).json()) as { name: string };
      assert.equal(status.name, name);
      const onApiPort = await cluster.fetch(`${cluster.node(name).httpUrl}/metrics`);
      assert.equal(onApiPort.status, 404, '/metrics is not on the API port');
      await onApiPort.body?.cancel();
      assert.match(await (await fetch(`${cluster.node(name).metricsUrl}/metrics`)).text(), /svc_term /);
    }
  });

  it('a key created on A works on B and C at once, and its revocation on C holds on B at once', async () => {
    const a = cluster.client('a');
    const user = await a.createUser({ body: { name: 'dev' } });
    const issued = await a.createKey({ body: { name: 'dev-key', role: 'developer', user_id: user.id } });
    // No waiting: the create was acknowledged only once committed, and reads on B and C take a read index.
    const [onB, onC] = await Promise.all([
      cluster.client('b', issued.key).listKeys(),
      cluster.client('c', issued.key).getKey({ path: { id: issued.record.id } }),
    ]);
    assert.deepEqual(
      onB.items.map((key) => key.id),
      [issued.record.id],
    );
    assert.equal(onC.key_prefix, issued.key.slice(0, 12));
    await cluster.client('c').revokeKey({ path: { id: issued.record.id } });
    const refused = await cluster
      .client('b', issued.key)
      .listProjects()
      .then(
        () => null,
        (error: unknown) => error,
      );
    assert.ok(refused instanceof SvcApiError && refused.code === 'KEY_REVOKED', String(refused));
  });

  it('credentials created on B are listed masked on C', async () => {
    const secret = 'gitea-token-0123456789abcdef';
    const created = await cluster
      .client('b')
      .createCredential({ body: { category: 'gitea', name: 'ci', value: secret } });
    const listed = await cluster.client('c').listCredentials({ query: { category: 'gitea' } });
    const found = listed.items.find((item) => item.id === created.id);
    assert.ok(found, 'the credential is listed on C');
    assert.equal(found.masked_value, 'gi••••••ef');
    assert.ok(!JSON.stringify(listed).includes(secret), 'the value never leaves masked');
    assert.deepEqual((await cluster.client('a').listCredentials({ query: { category: 'cloudflare' } })).items, []);
    assert.equal(testSecretKey.length, 32, 'every node opened the same key file');
  });

  it('counts the rate limit per key across the cluster (one shared Redis)', async () => {
    const issued = await cluster.client('a').createKey({ body: { name: 'rate', role: 'admin' } });
    const remaining: number[] = [];
    const recording: typeof fetch = async (input, init) => {
      const response = await cluster.fetch(input, init);
      remaining.push(Number(response.headers.get('ratelimit-remaining')));
      return response;
    };
    for (const name of ['a', 'b', 'c']) await cluster.client(name, issued.key, recording).listProjects();
    assert.equal(remaining.length, 3);
    // A per-node limiter would answer limit-1 on every node; the shared one counts all three requests.
    assert.ok(
      remaining[0]! < CLUSTER_RATE_LIMIT_PER_SECOND && remaining[1]! < remaining[0]! && remaining[2]! < remaining[1]!,
      `RateLimit-Remaining on a, b, c: ${remaining.join(', ')}`,
    );
  });

  it('runs a project queued on A, worked on any node, streamed from C to complete; /work/stats counts move', async () => {
    const stats = async (client: SvcClient) =>
      (await client.getWorkStats()).queues.find((queue) => queue.name === 'agent-runs')!;
    const before = await stats(cluster.client('c'));
    assert.equal(before.workers, 3, 'each node runs an agent worker on the shared queue');
    const created = await cluster.client('a').createProject({ body: { name: 'agent', ...project } });
    const accepted = await cluster
      .client('b')
      .runCommand({ path: { id: created.id }, body: { prompt: 'hello cluster' } });
    assert.equal(accepted.streamUrl, `/runs/${accepted.runId}/events`);
    const events: string[] = [];
    let output = '';
    const complete = await cluster.client('c').streamRun(accepted.streamUrl, (event) => {
      events.push(event.event);
      if (event.event === 'output') output += event.data.text;
      if (event.event === 'notice') output += JSON.stringify(event.data);
    });
    assert.equal(complete.status, 'succeeded', `events: ${events.join(',')} output: ${output}`);
    assert.equal(complete.exitCode, 0);
    assert.deepEqual(
      events.filter((name) => name !== 'output'),
      ['queued', 'started', 'complete'],
    );
    assert.equal(output, 'prompt: hello cluster\ndone\n');
    const failing = await cluster.client('a').runCommand({ path: { id: created.id }, body: { prompt: 'fail now' } });
    assert.equal((await cluster.client('b').streamRun(failing.streamUrl, () => undefined)).status, 'failed');
    const after = await waitFor(
      async () => {
        const now = await stats(cluster.client('a'));
        return now.completed >= before.completed + 1 && now.failed >= before.failed + 1;
      },
      '/work/stats to count the succeeded and the failed run',
      10_000,
    ).then(() => stats(cluster.client('a')));
    assert.equal(after.active, 0);
    assert.equal((await cluster.client('b').getRun({ path: { id: accepted.runId } })).status, 'succeeded');
    finishedRunId = accepted.runId;
  });

  it("keeps a run's record in the replicated store: on every node's replica, and readable after its Redis keys are gone", async () => {
    assert.ok(finishedRunId, 'the run test ran first');
    for (const name of ['a', 'b', 'c']) {
      assert.ok(
        (await cluster.node(name).localKeys('runs/')).includes(`runs/${finishedRunId}`),
        `${name} holds runs/${finishedRunId}`,
      );
    }
    const redis = new Redis(cluster.redis!.url);
    try {
      // Redis holds the run's event stream and BullMQ's job, not its record; drop every key of the run, as a flush would.
      const runKeysInRedis = await redis.keys(`*${finishedRunId}*`);
      assert.ok(runKeysInRedis.includes(`svc:run:${finishedRunId}:events`), runKeysInRedis.join(', '));
      assert.ok(!runKeysInRedis.includes(`svc:run:${finishedRunId}`), 'no run hash in Redis');
      await redis.del(...runKeysInRedis);
    } finally {
      redis.disconnect();
    }
    for (const name of ['a', 'b', 'c']) {
      const run = await cluster.client(name).getRun({ path: { id: finishedRunId } });
      assert.equal(run.status, 'succeeded');
      assert.equal(run.exit_code, 0);
      assert.ok(run.started_at !== null && run.finished_at !== null && run.duration_ms !== null, JSON.stringify(run));
    }
  });

  it('ends a stream resumed after its complete event at once, on any node', async () => {
    const created = await cluster.client('a').createProject({ body: { name: 'resume', ...project } });
    const accepted = await cluster
      .client('a')
      .runCommand({ path: { id: created.id }, body: { prompt: 'pause a little' } });
    const ids: Array<{ id: string; event: string }> = [];
    // Many readers of one run on one node share reads; each still gets every event, once, in order.
    const readers = Array.from({ length: CONCURRENT_READERS }, async () => {
      const seen: string[] = [];
      for await (const event of cluster.client('c').runEvents(accepted.streamUrl)) seen.push(event.id);
      return seen;
    });
    for await (const event of cluster.client('b').runEvents(accepted.streamUrl))
      ids.push({ id: event.id, event: event.event });
    for (const seen of await Promise.all(readers))
      assert.deepEqual(
        seen,
        ids.map((item) => item.id),
      );
    const completeId = ids.at(-1)!.id;
    assert.equal(ids.at(-1)!.event, 'complete');
    for (const name of ['a', 'b', 'c']) {
      const startedMs = performance.now();
      const response = await cluster.fetch(cluster.node(name).httpUrl + accepted.streamUrl, {
        headers: { 'x-api-key': cluster.admin.key, 'last-event-id': completeId },
        signal: AbortSignal.timeout(20_000),
      });
      const text = await response.text();
      const elapsedMs = performance.now() - startedMs;
      assert.equal(response.status, 200);
      assert.ok(elapsedMs < STREAM_END_MS_MAX, `${name}: the response ended after ${Math.round(elapsedMs)} ms`);
      assert.ok(!/^(id|event|data):/m.test(text), `${name}: no event follows complete: ${JSON.stringify(text)}`);
    }
    // Resuming before complete delivers exactly the rest, ending with complete.
    const rest: string[] = [];
    for await (const event of cluster.client('c').runEvents(accepted.streamUrl, { lastEventId: ids.at(-2)!.id }))
      rest.push(event.id);
    assert.deepEqual(rest, [completeId]);
  });

  it('fuzz: random requests to any node never get a 5xx (503 STORE_UNAVAILABLE only while there is no leader)', async () => {
    const termBefore = (await cluster.statusOf('a'))?.term;
    let noLeaderAnswers = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('a', 'b', 'c'),
        methodArbitrary,
        pathArbitrary,
        fc.oneof(fc.constant('admin'), fc.constant(null), printable),
        contentTypeArbitrary,
        extraHeadersArbitrary,
        bodyArbitrary,
        async (name, method, path, key, contentType, extraHeaders, body) => {
          const headers: Record<string, string> = { ...extraHeaders };
          if (key !== null) headers['x-api-key'] = key === 'admin' ? cluster.admin.key : key;
          if (contentType) headers['content-type'] = contentType;
          const response = await rawRequest(
            cluster.node(name).httpUrl,
            method,
            path,
            headers,
            method === 'GET' || method === 'HEAD' ? undefined : body,
            cluster.caPem ?? undefined,
          );
          if (response === null) return;
          if (checkAnswer(`${name}: ${method} ${path}`, path, response) === 'no-leader') noLeaderAnswers++;
        },
      ),
      { numRuns: FUZZ_RUNS },
    );
    const termAfter = (await cluster.statusOf('a'))?.term;
    // With no election during the run there was a leader throughout, so no request may have been told otherwise.
    if (termAfter === termBefore) assert.equal(noLeaderAnswers, 0, 'no STORE_UNAVAILABLE while the leader stood');
  });

  it('kill -9 of the leader: every acknowledged record survives on the survivors, and writes continue', async () => {
    const leader = await cluster.leaderName();
    assert.ok(leader, 'a leader before the kill');
    const survivors = ['a', 'b', 'c'].filter((name) => name !== leader);
    const acknowledged = new Map<string, string>(); // project id → the node that acknowledged it
    const survivorFailures: unknown[] = [];
    let killed = false;
    let electedAt = 0;
    const afterElection = new Map<string, number>();
    const writer = async (name: string): Promise<void> => {
      const client = cluster.client(name);
      for (let i = 0; i < WRITER_CREATES_MAX; i++) {
        if (name !== leader && (afterElection.get(name) ?? 0) >= WRITES_AFTER_ELECTION) return;
        if (name === leader && killed) return;
        try {
          const created = await client.createProject({ body: { name: `${name}-${i}`, ...project } });
          acknowledged.set(created.id, name);
          if (electedAt > 0) afterElection.set(name, (afterElection.get(name) ?? 0) + 1);
        } catch (error) {
          if (name === leader) {
            // The killed node's answers end with the connection; nothing it did not answer counts as acknowledged.
            if (!(error instanceof SvcConnectionError) && !isStoreUnavailable(error)) throw error;
            return;
          }
          survivorFailures.push(error);
          if (!isStoreUnavailable(error)) throw error;
        }
      }
      throw new Error(
        `${name}: no ${WRITES_AFTER_ELECTION} acknowledged writes after the election within ${WRITER_CREATES_MAX} tries`,
      );
    };
    // The prober reads and writes on the survivors while they elect: any answer is < 500 or a 503 STORE_UNAVAILABLE.
    const probe = async (): Promise<number> => {
      let probes = 0;
      while (electedAt === 0 && probes < PROBES_MAX) {
        const name = survivors[probes % survivors.length]!;
        const [method, path, body] =
          probes % 2 === 0
            ? ['GET', '/projects?limit=5', undefined]
            : ['POST', '/users', JSON.stringify({ name: `probe-${probes}` })];
        const response = await rawRequest(
          cluster.node(name).httpUrl,
          method,
          path,
          { 'x-api-key': cluster.admin.key, 'content-type': 'application/json' },
          body,
          cluster.caPem ?? undefined,
        );
        if (response !== null) checkAnswer(`${name}: ${method} ${path} during the election`, path, response);
        probes++;
      }
      return probes;
    };
    const writers = ['a', 'b', 'c'].map((name) => writer(name));
    await waitFor(() => acknowledged.size >= 15, 'some acknowledged writes before the kill', 20_000);
    await cluster.node(leader).kill9();
    killed = true;
    const prober = probe();
    await waitFor(
      async () => {
        const now = await cluster.leaderName();
        return now !== null && now !== leader;
      },
      'a new leader among the survivors',
      READY_TIMEOUT_MS,
    );
    electedAt = Date.now();
    assert.ok((await prober) > 0, 'the survivors were probed during the election');
    await Promise.all(writers);
    assert.ok(
      survivorFailures.every(isStoreUnavailable),
      `survivors failed only with 503 STORE_UNAVAILABLE: ${survivorFailures.map(String).join('; ')}`,
    );
    for (const name of survivors) {
      assert.ok((afterElection.get(name) ?? 0) >= WRITES_AFTER_ELECTION, `${name} kept acknowledging writes`);
      const listed = await allProjectIds(cluster.client(name));
      const missing = [...acknowledged.keys()].filter((id) => !listed.has(id));
      assert.deepEqual(missing, [], `${name} lists every acknowledged project (${acknowledged.size})`);
      // The records of the earlier tests are there too: keys, users, credentials.
      const client = cluster.client(name);
      assert.ok((await client.listUsers()).items.some((user) => user.name === 'dev'));
      assert.ok((await client.listCredentials()).items.some((item) => item.name === 'ci'));
      assert.equal((await client.getKey({ path: { id: cluster.admin.keyId } })).role, 'admin');
      assert.equal(
        (await client.getRun({ path: { id: finishedRunId } })).status,
        'succeeded',
        'the run record survives',
      );
    }
    // A run still goes end to end on the survivors (the shared queue, a surviving worker).
    const created = await cluster.client(survivors[0]!).createProject({ body: { name: 'after-kill', ...project } });
    const accepted = await cluster
      .client(survivors[1]!)
      .runCommand({ path: { id: created.id }, body: { prompt: 'still here' } });
    assert.equal(
      (await cluster.client(survivors[0]!).streamRun(accepted.streamUrl, () => undefined)).status,
      'succeeded',
    );
  });
});
