// Observability of a real node serving the developer API (one node, real gRPC/WAL, a real redis-server):
// - one pino logger: the API's lines come out of the node's logger (its `node` field), each line written while
//   serving a request carries the request id (the client's X-Request-Id when sane, else a generated one, echoed
//   in the response), and no key, bearer token or credential value reaches a line;
// - the metrics listener serves the API's families: requests by route pattern and code, the latency histogram,
//   open event streams, BullMQ queue depths, with the values the requests made;
// - every metric name the Grafana dashboard and the alert rules (deploy/monitoring/) use is one this node declares.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Node } from '../../cli/node/node.js';
import { bootstrapAdminKey } from '../../api/auth/api-keys.js';
import { makePki, nodeConfig, planNodes, removeDir, tempDir, waitFor } from '../node/harness.js';
import { startTestRedis, testSecretKey, type TestRedis } from '../api/harness.js';
import {
  dashboardExprs,
  declaredMetricNames,
  loadAlertRules,
  metricNamesIn,
  prometheusOwnMetrics,
  sampleValue,
} from '../deploy/monitoring-assets.js';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('cluster-api: logs and metrics of a node serving the API', function () {
  this.timeout(120_000);
  let dir: string;
  let redis: TestRedis;
  let node: Node;
  let adminKey: string;
  const written: string[] = [];
  const lines = (): Array<Record<string, unknown>> =>
    written.map((line) => JSON.parse(line) as Record<string, unknown>);
  const scrape = async (): Promise<string> => {
    const response = await fetch(`${node.metricsAddress}/metrics`);
    assert.equal(response.status, 200);
    return response.text();
  };
  const call = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${node.httpAddress}${path}`, {
      ...init,
      headers: { 'x-api-key': adminKey, ...(init.headers as Record<string, string>) },
    });

  before(async () => {
    dir = await tempDir('observability');
    const pki = await makePki(dir, ['obs']);
    redis = await startTestRedis();
    const keyFile = join(dir, 'secret.key');
    writeFileSync(keyFile, testSecretKey.toString('hex'));
    const [plan] = await planNodes(['obs']);
    node = new Node(
      nodeConfig(
        plan!,
        join(dir, 'obs'),
        pki.tls('obs'),
        { bootstrap: [plan!.member] },
        {
          tickMs: 30,
          logLevel: 'info',
          logDestination: { write: (line: string) => written.push(line) },
          processMetrics: true,
          api: {
            redisUrl: redis.url,
            localRedis: false,
            runWorker: false,
            albumWorker: false,
            accessLog: true,
            secretKeyFile: keyFile,
          },
        },
      ),
    );
    await node.start();
    await waitFor(async () => (await fetch(`${node.httpAddress}/ready`)).status === 200, 'the node ready');
    adminKey = (await bootstrapAdminKey(node.store, 'admin')).key;
  });
  after(async () => {
    await node?.stop();
    await redis?.stop();
    await removeDir(dir);
  });

  it('logs each request once through the node logger, with its request id, and never a key or a secret', async () => {
    const bearer = 'bearer-token-that-must-not-be-logged';
    const sane = await call('/projects', {
      headers: { 'x-request-id': 'obs-req-1', authorization: `Bearer ${bearer}` },
    });
    assert.equal(sane.status, 200);
    assert.equal(sane.headers.get('x-request-id'), 'obs-req-1');
    const odd = await call('/projects', { headers: { 'x-request-id': 'not sane; has spaces' } });
    const generated = odd.headers.get('x-request-id')!;
    assert.match(generated, uuidPattern, 'an odd X-Request-Id is replaced by a generated one');
    const tooLong = await call('/projects', { headers: { 'x-request-id': 'a'.repeat(129) } });
    assert.match(tooLong.headers.get('x-request-id')!, uuidPattern, 'so is one over 128 characters');
    const credential = await call('/credentials', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ category: 'gitea', name: 'obs-cred', value: 'credential-value-never-logged' }),
    });
    assert.equal(credential.status, 201);
    const wrongKey = await fetch(`${node.httpAddress}/projects`, {
      headers: { 'x-api-key': `${adminKey.slice(0, -1)}x` },
    });
    assert.equal(wrongKey.status, 401);

    await waitFor(
      () => lines().filter((line) => line.event === 'request').length >= 5,
      'the access lines of the five requests',
    );
    const access = lines().filter((line) => line.event === 'request');
    const byId = (id: string) => access.filter((line) => line.requestId === id);
    assert.equal(byId('obs-req-1').length, 1, 'one line per request, with the client id');
    assert.equal(byId(generated).length, 1, 'the generated id is the one in the line');
    const first = byId('obs-req-1')[0]!;
    assert.equal(first.node, 'obs', 'the API logs through the node logger');
    assert.equal(first.source, 'api');
    assert.equal(first.level, 30, 'info');
    assert.equal(first.route, '/projects');
    assert.equal(first.status, 200);
    for (const line of access) assert.equal(typeof line.requestId, 'string', 'every request line has its id');
    const text = written.join('');
    for (const secret of [adminKey, adminKey.slice(0, -1), bearer, 'credential-value-never-logged'])
      assert.ok(!text.includes(secret), `no log line holds ${secret.slice(0, 6)}…`);
  });

  it('serves request counts by route pattern and code, latencies, open streams and queue depths on the metrics listener', async () => {
    const before = await scrape();
    const count = (page: string, series: string) => sampleValue(page, series) ?? 0;
    const projects = 'svc_http_requests_total{method="GET",route="/projects",code="200"}';
    const oneProject = 'svc_http_requests_total{method="GET",route="/projects/:id",code="404"}';
    const unrouted = 'svc_http_requests_total{method="GET",route="(unrouted)",code="404"}';
    for (let i = 0; i < 3; i++) assert.equal((await call('/projects')).status, 200);
    assert.equal((await call(`/projects/prj_${'0'.repeat(9)}${'a'.repeat(16)}`)).status, 404);
    assert.equal((await call(`/projects/prj_${'0'.repeat(9)}${'b'.repeat(16)}`)).status, 404);
    assert.equal((await call('/no/such/route')).status, 404);

    // A job on a queue no worker takes (the node runs none): it stays waiting.
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue('album-jobs', { connection });
    try {
      await queue.add('probe', { nothing: true });
      const streamAbort = new AbortController();
      const stream = await call('/events', { signal: streamAbort.signal });
      assert.equal(stream.status, 200);
      const reader = stream.body!.getReader();
      await reader.read(); // ': stream open'

      const page = await scrape();
      assert.equal(count(page, projects) - count(before, projects), 3);
      assert.equal(count(page, oneProject) - count(before, oneProject), 2, 'the route pattern, not the two raw paths');
      assert.equal(count(page, unrouted) - count(before, unrouted), 1);
      assert.ok(!page.includes('prj_000000000'), 'no raw path is a label');
      const histogramCount = 'svc_http_request_duration_seconds_count{method="GET",route="/projects"}';
      assert.ok(count(page, histogramCount) - count(before, histogramCount) >= 3);
      assert.equal(
        sampleValue(page, 'svc_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/projects"}'),
        sampleValue(page, histogramCount),
      );
      assert.equal(sampleValue(page, 'svc_http_sse_streams_open{stream="album-events"}'), 1);
      assert.equal(sampleValue(page, 'svc_http_sse_streams_open{stream="run-events"}'), 0);
      assert.equal(sampleValue(page, 'svc_queue_stats_up'), 1);
      assert.equal(sampleValue(page, 'svc_queue_jobs{queue="album-jobs",state="waiting"}'), 1);
      assert.equal(sampleValue(page, 'svc_queue_jobs{queue="agent-runs",state="waiting"}'), 0);
      assert.equal(sampleValue(page, 'svc_queue_workers{queue="album-jobs"}'), 0);

      streamAbort.abort();
      await reader.cancel().catch(() => undefined);
      await waitFor(
        async () => sampleValue(await scrape(), 'svc_http_sse_streams_open{stream="album-events"}') === 0,
        'the stream closed',
      );
      const after = await scrape();
      assert.equal(
        sampleValue(after, 'svc_http_request_duration_seconds_count{method="GET",route="/events"}'),
        undefined,
        'a stream is counted, not timed',
      );
      assert.ok(count(after, 'svc_http_requests_total{method="GET",route="/events",code="200"}') >= 1);
    } finally {
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      connection.disconnect();
    }
  });

  it('declares every metric the Grafana dashboard and the alert rules use', async () => {
    const declared = declaredMetricNames(await scrape());
    const used = [
      ...dashboardExprs().map(({ panel, expr }) => ({ where: `dashboard panel "${panel}"`, expr })),
      ...loadAlertRules().map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr })),
    ];
    assert.ok(used.length > 20);
    for (const { where, expr } of used) {
      const names = metricNamesIn(expr);
      assert.ok(names.length > 0, `${where} names a metric`);
      for (const name of names)
        assert.ok(
          declared.has(name) || prometheusOwnMetrics.has(name),
          `${where} uses ${name}, which the node does not export`,
        );
    }
  });
});
