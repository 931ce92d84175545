// The Kubernetes backend's leftover sweep (api/runs/kubernetes-sweep.ts) against the STAND-IN API server (no real
// cluster runs here): a worker that "dies" after creating a run's Secret is simulated by creating the Secret as
// the backend does (runSecret, Strict) with no Job and no owner; the sweep deletes it once the run is final, its
// record is gone, or the grace has passed, and leaves a live run's owned Secret and Job alone. Also the list
// contract the sweep relies on, which the stand-in enforces as the real API server does (label selectors, paging).
import assert from 'node:assert/strict';
import { EventEmitter, once } from 'node:events';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import { KubernetesBackend } from '../../api/runs/kubernetes-backend.js';
import {
  jobName,
  runJob,
  runObjectSelector,
  runSecret,
  secretName,
  secretOwnerReference,
} from '../../api/runs/kubernetes-job-spec.js';
import type { LeftoverDeletion } from '../../api/runs/kubernetes-sweep.js';
import type { RunRecord, RunStatus } from '../../api/runs/run-records.js';
import { readRun } from '../../api/runs/run-records.js';
import type { RunSpec } from '../../api/runs/run-backend.js';
import { defaultSandboxLimits } from '../../api/runs/sandbox.js';
import { runKubernetesOrphanGraceMs } from '../../api/limits.js';
import { storeKeys } from '../../api/records.js';
import type { LogLine, TestApi, TestRedis } from './harness.js';
import { memoryLogger, startTestApi, startTestRedis, testSecretKey, waitFor } from './harness.js';
import { startKubernetesApiStandIn } from './kubernetes-api-stand-in.js';
import type { KubernetesApiStandIn } from './kubernetes-api-stand-in.js';
import type { Json } from './kubernetes-test-fixtures.js';
import { standInRequest, testRunSettings } from './kubernetes-test-fixtures.js';
import { decodeContinue, encodeContinue } from './kubernetes-stand-in-lists.js';
import { outputText, readSse } from './run-events.js';

const settings = testRunSettings;
const secretValue = 'leftover-secret-value-0123456789';
const b64 = (text: string) => Buffer.from(text).toString('base64');
/** runId makes a run id of the API's form (run_ + 9 base36 + 16 hex), distinct per n. */
const runId = (n: number) => `run_${n.toString(36).padStart(9, '0')}${n.toString(16).padStart(16, '0')}`;

const call = standInRequest;
const secretsPath = '/api/v1/namespaces/runs/secrets';
const jobsPath = '/apis/batch/v1/namespaces/runs/jobs';

describe('runs: the Kubernetes API stand-in lists as the API server does (label selectors, limit/continue)', function () {
  this.timeout(30_000);
  let cluster: KubernetesApiStandIn;
  before(async () => {
    cluster = await startKubernetesApiStandIn();
    for (const [name, labels] of [
      ['s-a', { tier: 'a', n: '1' }],
      ['s-b', { tier: 'b', n: '2' }],
      ['s-c', { tier: 'c', n: '3' }],
      ['s-d', { n: '4' }],
      ['s-e', { tier: 'a', n: '5' }],
    ] as const) {
      const made = await call(cluster, 'POST', secretsPath, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, labels },
        data: { k: b64('v') },
      });
      assert.equal(made.status, 201, JSON.stringify(made.json));
    }
  });
  after(async () => {
    await cluster?.close();
  });
  const names = async (query: string) => {
    const listed = await call(cluster, 'GET', `${secretsPath}?${query}`);
    assert.equal(listed.status, 200, JSON.stringify(listed.json));
    assert.equal(listed.json.kind, 'SecretList');
    return listed.json.items.map((item: Json) => item.metadata.name);
  };
  const selector = (text: string) => `labelSelector=${encodeURIComponent(text)}`;

  it('selects by equality, inequality, existence, sets and integer comparison, and refuses what does not parse', async () => {
    assert.deepEqual(await names(''), ['s-a', 's-b', 's-c', 's-d', 's-e'], 'sorted by name');
    assert.deepEqual(await names(selector('tier=a')), ['s-a', 's-e']);
    assert.deepEqual(await names(selector('tier == a')), ['s-a', 's-e']);
    assert.deepEqual(await names(selector('tier!=a')), ['s-b', 's-c', 's-d'], 'a missing key is unequal');
    assert.deepEqual(await names(selector('!tier')), ['s-d']);
    assert.deepEqual(await names(selector('tier')), ['s-a', 's-b', 's-c', 's-e']);
    assert.deepEqual(await names(selector('tier in (b, c)')), ['s-b', 's-c']);
    assert.deepEqual(await names(selector('tier notin (a,b)')), ['s-c', 's-d']);
    assert.deepEqual(await names(selector('n>2,tier')), ['s-c', 's-e']);
    assert.deepEqual(await names(selector('tier=a,n<5')), ['s-a']);
    for (const [bad, message] of [
      ['tier in ()', /values set can't be empty/],
      ['tier=a b', /found 'b', expected: ',' or 'end of string'/],
      ['tier=a,', /expected: identifier after ','/],
      ['bad key!=x', /found 'key'/],
      ['-bad=x', /unable to parse requirement: key: Invalid value: "-bad"/],
      ['tier=a/b', /unable to parse requirement: values\[0\]\[tier\]: Invalid value: "a\/b"/],
      ['n>x', /must be an integer/],
      ['tier in a', /expected: '\('/],
      ['=a', /expected: !, identifier/],
    ] as const) {
      const refused = await call(cluster, 'GET', `${secretsPath}?${selector(bad)}`);
      assert.equal(refused.status, 400, bad);
      assert.equal(refused.json.reason, 'BadRequest', bad);
      assert.match(refused.json.message, message, bad);
    }
  });

  it('pages with limit and a continue token served from the first page’s state, and refuses bad tokens', async () => {
    const first = await call(cluster, 'GET', `${secretsPath}?limit=2&${selector('n')}`);
    assert.deepEqual(
      first.json.items.map((item: Json) => item.metadata.name),
      ['s-a', 's-b'],
    );
    const token = first.json.metadata.continue as string;
    assert.match(token, /^[A-Za-z0-9_-]+$/, 'unpadded base64url');
    const decoded = JSON.parse(Buffer.from(token, 'base64url').toString());
    assert.deepEqual(decoded, {
      v: 'meta.k8s.io/v1',
      rv: Number(first.json.metadata.resourceVersion),
      start: 's-b\u0000',
    });
    // Changes after the first page do not show in the pages after it (a consistent snapshot).
    await call(cluster, 'POST', secretsPath, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's-bb', labels: { n: '9' } },
      data: {},
    });
    assert.equal((await call(cluster, 'DELETE', `${secretsPath}/s-c`)).status, 200);
    const second = await call(cluster, 'GET', `${secretsPath}?limit=2&${selector('n')}&continue=${token}`);
    assert.deepEqual(
      second.json.items.map((item: Json) => item.metadata.name),
      ['s-c', 's-d'],
    );
    assert.equal(second.json.metadata.resourceVersion, first.json.metadata.resourceVersion);
    const third = await call(
      cluster,
      'GET',
      `${secretsPath}?limit=2&${selector('n')}&continue=${second.json.metadata.continue}`,
    );
    assert.deepEqual(
      third.json.items.map((item: Json) => item.metadata.name),
      ['s-e'],
    );
    assert.equal(third.json.metadata.continue, undefined, 'no token after the last page');
    // A fresh list sees the changes.
    assert.deepEqual(await names(selector('n')), ['s-a', 's-b', 's-bb', 's-d', 's-e']);

    for (const [bad, message] of [
      ['not*base64', /^invalid continue token: continue key is not valid: illegal base64/],
      [Buffer.from('{').toString('base64url'), /^invalid continue token: continue key is not valid: /],
      [encodeContinue(0, 's-a'), /incorrect encoded start resourceVersion/],
      [encodeContinue(5, ''), /encoded start key empty/],
      [
        encodeContinue(5, '../kube-system/x'),
        /^invalid continue token: continue key is not valid: \.\.\/kube-system\/x$/,
      ],
      [
        Buffer.from(JSON.stringify({ v: 'v9', rv: 5, start: 'x' })).toString('base64url'),
        /does not recognize this encoded version/,
      ],
    ] as const) {
      const refused = await call(cluster, 'GET', `${secretsPath}?limit=2&continue=${bad}`);
      assert.equal(refused.status, 400, bad);
      assert.match(refused.json.message, message, bad);
    }
    const withVersion = await call(cluster, 'GET', `${secretsPath}?limit=2&resourceVersion=3&continue=${token}`);
    assert.equal(withVersion.status, 400);
    assert.equal(withVersion.json.message, 'specifying resource version is not allowed when using continue');
    assert.deepEqual(decodeContinue(token), { rv: decoded.rv, startKey: 's-b\u0000' });
  });

  it('answers with metadata alone when asked for a PartialObjectMetadataList, and 406 for a form it does not serve', async () => {
    const response = await fetch(`${cluster.url}${secretsPath}?limit=2`, {
      headers: {
        authorization: `Bearer ${cluster.token}`,
        accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json',
      },
    });
    const listed = (await response.json()) as Json;
    assert.equal(listed.kind, 'PartialObjectMetadataList');
    assert.equal(listed.apiVersion, 'meta.k8s.io/v1');
    assert.deepEqual(Object.keys(listed.items[0]).sort(), ['apiVersion', 'kind', 'metadata']);
    assert.equal(listed.items[0].kind, 'PartialObjectMetadata');
    assert.ok(listed.metadata.continue, 'paged like a full list');
    const refused = await fetch(`${cluster.url}${secretsPath}`, {
      headers: { authorization: `Bearer ${cluster.token}`, accept: 'application/json;as=Table;g=meta.k8s.io;v=v9' },
    });
    assert.equal(refused.status, 406);
  });

  it('answers 410 Expired for a token whose state is compacted, with a token that goes on from the latest state', async () => {
    const first = await call(cluster, 'GET', `${secretsPath}?limit=1`);
    cluster.compactLists();
    const expired = await call(cluster, 'GET', `${secretsPath}?limit=1&continue=${first.json.metadata.continue}`);
    assert.equal(expired.status, 410);
    assert.equal(expired.json.reason, 'Expired');
    const next = expired.json.metadata.continue as string;
    assert.equal(decodeContinue(next).rv, -1);
    const rest = await call(cluster, 'GET', `${secretsPath}?continue=${next}`);
    assert.equal(rest.status, 200);
    assert.equal(rest.json.items[0].metadata.name, 's-b', 'from the next key on');
  });
});

describe('runs: the Kubernetes leftover sweep deletes what a dead worker left, never a live run’s', function () {
  this.timeout(60_000);
  let cluster: KubernetesApiStandIn;
  let backend: KubernetesBackend;
  let workspace: string;
  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-k8s-sweep-ws-'));
    // Runs until the test's stop file appears (bounded), so a Job's pod is running while the sweep looks.
    writeFileSync(
      path.join(workspace, 'wait.sh'),
      '#!/bin/sh\ni=0; while [ ! -e stop ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n',
    );
    chmodSync(path.join(workspace, 'wait.sh'), 0o755);
    cluster = await startKubernetesApiStandIn();
    backend = new KubernetesBackend(cluster.kubeConfig(), settings);
  });
  after(async () => {
    if (workspace) writeFileSync(path.join(workspace, 'stop'), '');
    await cluster?.close();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  const spec = (id: string): RunSpec => ({
    runId: id,
    prompt: 'p',
    project: { workspace, command: ['./wait.sh'], network: false },
    limits: defaultSandboxLimits,
    timeoutMs: 600_000,
    credentials: [{ as: 'env', target: 'TOKEN', value: secretValue }],
  });
  /** makeSecret creates a run's Secret exactly as the backend does before its Job (no owner yet). */
  const makeSecret = async (id: string) => {
    const made = await call(cluster, 'POST', `${secretsPath}?fieldValidation=Strict`, runSecret(spec(id), settings));
    assert.equal(made.status, 201, JSON.stringify(made.json));
    return made.json;
  };
  const makeJob = async (id: string) => {
    const made = await call(cluster, 'POST', `${jobsPath}?fieldValidation=Strict`, runJob(spec(id), settings));
    assert.equal(made.status, 201, JSON.stringify(made.json));
    return made.json;
  };
  /** own gives the Secret its Job as owner, as the backend's ownSecret does. */
  const own = async (id: string, job: Json) => {
    const patched = await call(cluster, 'PATCH', `${secretsPath}/${secretName(id)}?fieldValidation=Strict`, [
      {
        op: 'add',
        path: '/metadata/ownerReferences',
        value: [secretOwnerReference({ name: job.metadata.name, uid: job.metadata.uid })],
      },
    ]);
    assert.equal(patched.status, 200, JSON.stringify(patched.json));
  };
  const hasSecret = (id: string) => cluster.secrets.has(`runs/${secretName(id)}`);
  const hasJob = (id: string) => cluster.jobs.has(`runs/${jobName(id)}`);
  const podsOf = (id: string) =>
    [...cluster.pods.values()].filter((pod) => pod.metadata.labels['svc.dev/run-id'] === id);

  it('deletes Secrets of final or missing runs and unowned ones past the grace, Jobs of final runs with their pods; keeps a live run’s', async () => {
    const runs = {
      failed: runId(1),
      missing: runId(2),
      diedBeforeOwner: runId(3),
      live: runId(4),
      cancelledWithJob: runId(5),
      succeededOwned: runId(6),
    };
    const statuses = new Map<string, RunStatus>([
      [runs.failed, 'failed'],
      [runs.diedBeforeOwner, 'running'],
      [runs.live, 'running'],
      [runs.cancelledWithJob, 'cancelled'],
      [runs.succeededOwned, 'succeeded'],
    ]);
    // Dead workers: a Secret and nothing else.
    await makeSecret(runs.failed);
    await makeSecret(runs.missing);
    await makeSecret(runs.diedBeforeOwner);
    // A live run: Secret, Job, owner, a running pod.
    await makeSecret(runs.live);
    await own(runs.live, await makeJob(runs.live));
    // A run that ended while its Job (and pod) lived on; one whose owned Secret and Job outlived it.
    await makeSecret(runs.cancelledWithJob);
    await own(runs.cancelledWithJob, await makeJob(runs.cancelledWithJob));
    await makeSecret(runs.succeededOwned);
    await own(runs.succeededOwned, await makeJob(runs.succeededOwned));
    // Not the backend's: the run labels on a name the backend would not give.
    const stranger = runSecret(spec(runId(7)), settings)!;
    stranger.metadata!.name = 'someone-elses';
    assert.equal((await call(cluster, 'POST', secretsPath, stranger)).status, 201);
    await waitFor(
      async () => podsOf(runs.live).concat(podsOf(runs.cancelledWithJob)),
      (pods) => pods.length === 2 && pods.every((pod) => pod.status.phase === 'Running'),
    );

    const deletions: LeftoverDeletion[] = [];
    const statusOf = async (id: string) => statuses.get(id) ?? null;
    const now = await backend.sweepLeftovers(statusOf, Date.now(), {
      pageItemsMax: 2,
      onDeleted: (deletion) => deletions.push(deletion),
    });
    assert.deepEqual(
      deletions.map((deletion) => [deletion.kind, deletion.runId, deletion.reason]).sort(),
      [
        ['Job', runs.cancelledWithJob, 'run-final'],
        ['Job', runs.succeededOwned, 'run-final'],
        ['Secret', runs.cancelledWithJob, 'run-final'],
        ['Secret', runs.failed, 'run-final'],
        ['Secret', runs.missing, 'run-missing'],
        ['Secret', runs.succeededOwned, 'run-final'],
      ].sort(),
    );
    assert.deepEqual(now, { secretsExamined: 7, secretsDeleted: 4, jobsExamined: 3, jobsDeleted: 2, conflicts: 0 });
    assert.ok(!hasSecret(runs.failed) && !hasSecret(runs.missing) && !hasSecret(runs.succeededOwned));
    assert.ok(hasSecret(runs.diedBeforeOwner), 'an unowned Secret within the grace may be a live worker’s');
    assert.ok(hasSecret(runs.live) && hasJob(runs.live), 'a live run keeps its Secret and Job');
    assert.ok(cluster.secrets.has('runs/someone-elses'), 'a stranger is left alone');
    assert.ok(!hasJob(runs.cancelledWithJob));
    // Background propagation: the final run's pod is stopped and goes, not orphaned.
    await waitFor(
      async () => podsOf(runs.cancelledWithJob).length,
      (count) => count === 0,
    );
    assert.deepEqual(cluster.orphanedPods, []);
    assert.equal(podsOf(runs.live)[0]?.status.phase, 'Running', 'the live run’s pod runs on');
    const jobDelete = cluster.requests.find(
      (request) => request.method === 'DELETE' && request.path === `${jobsPath}/${jobName(runs.cancelledWithJob)}`,
    );
    assert.equal(jobDelete?.query.get('propagationPolicy'), 'Background');
    // Paged: limit on every list call, continue on the ones after the first.
    const lists = cluster.requests.filter(
      (request) => request.method === 'GET' && (request.path === secretsPath || request.path === jobsPath),
    );
    assert.ok(lists.every((request) => request.query.get('limit') === '2'));
    assert.ok(lists.every((request) => request.query.get('labelSelector') === runObjectSelector));
    assert.ok(
      lists.every((request) =>
        request.accept?.startsWith('application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1'),
      ),
      'metadata only: the sweep is never sent a value',
    );
    assert.ok(lists.filter((request) => request.query.get('continue')).length >= 3, 'more than one page each');
    assert.ok(
      !JSON.stringify(deletions).includes(secretValue) && !JSON.stringify(deletions).includes(b64(secretValue)),
    );

    // Past the grace: the Secret a worker left before its owner patch goes, though its run still says running;
    // the live run's (owned) Secret and Job stay, however late it is.
    const later: LeftoverDeletion[] = [];
    const past = await backend.sweepLeftovers(statusOf, Date.now() + runKubernetesOrphanGraceMs + 1000, {
      onDeleted: (deletion) => later.push(deletion),
    });
    assert.deepEqual(later, [
      {
        kind: 'Secret',
        name: secretName(runs.diedBeforeOwner),
        runId: runs.diedBeforeOwner,
        reason: 'unowned-past-grace',
      },
    ]);
    assert.equal(past.secretsDeleted, 1);
    assert.equal(past.jobsDeleted, 0);
    const dayLater = await backend.sweepLeftovers(statusOf, Date.now() + 24 * 60 * 60 * 1000);
    assert.equal(dayLater.secretsDeleted + dayLater.jobsDeleted, 0);
    assert.ok(hasSecret(runs.live) && hasJob(runs.live) && podsOf(runs.live).length === 1);
  });

  it('gives up a run whose Job comes after the owner deadline, deleting its Secret and Job (no unowned Secret lingers)', async () => {
    const late = new KubernetesBackend(cluster.kubeConfig(), { ...settings, secretOwnDeadlineMs: 0 });
    const id = runId(9);
    const child = late.start(spec(id)) as unknown as EventEmitter;
    const [error] = (await once(child, 'error')) as [Error];
    assert.match(
      error.message,
      /^could not give the run's Secret to its Job: the Job was made \d+ ms after the Secret \(at most 0 ms\)$/,
    );
    assert.ok(!hasSecret(id), 'the Secret is deleted');
    await waitFor(
      async () => hasJob(id),
      (present) => !present,
    );
    const patches = cluster.requests.filter(
      (request) => request.method === 'PATCH' && request.path.endsWith(secretName(id)),
    );
    assert.deepEqual(patches, [], 'never owned late');
  });

  it('goes on past a continue token that expired mid-sweep (410) with the one the server gives', async () => {
    const ids = [21, 22, 23, 24, 25].map(runId);
    for (const id of ids) await makeSecret(id);
    let compacted = false;
    const deletions: LeftoverDeletion[] = [];
    const outcome = await backend.sweepLeftovers(
      async (id) => {
        // After the first page is read, before the second is asked for: the token's state is gone.
        if (!compacted) {
          compacted = true;
          cluster.compactLists();
        }
        return ids.includes(id) ? 'timed_out' : 'running';
      },
      Date.now(),
      { pageItemsMax: 2, onDeleted: (deletion) => deletions.push(deletion) },
    );
    const expired = cluster.requests.filter(
      (request) => request.path === secretsPath && request.method === 'GET' && request.query.get('continue'),
    );
    assert.ok(
      expired.some((request) => decodeContinue(request.query.get('continue')!).rv === -1),
      'took the 410 token',
    );
    assert.deepEqual(deletions.map((deletion) => deletion.runId).sort(), ids);
    assert.equal(outcome.secretsDeleted, 5);
    for (const id of ids) assert.ok(!hasSecret(id));
  });

  it('does not delete an unowned Secret whose owner patch lands while the sweep decides (resourceVersion precondition)', async () => {
    const id = runId(8);
    await makeSecret(id);
    const job = await makeJob(id);
    const outcome = await backend.sweepLeftovers(
      async (run) => {
        // The live worker's owner patch, between the sweep's list and its delete.
        if (run === id) await own(id, job);
        return run === id ? 'running' : null;
      },
      Date.now() + runKubernetesOrphanGraceMs + 1000,
    );
    assert.equal(outcome.conflicts, 1);
    assert.ok(hasSecret(id), 'kept: it has its owner now');
    assert.ok(hasJob(id));
  });
});

describe('runs: a starting worker sweeps the Kubernetes leftovers of runs that ended', function () {
  this.timeout(120_000);
  let workspace: string;
  let redis: TestRedis;
  let api: TestApi;
  let cluster: KubernetesApiStandIn;
  let worker: AgentWorker | undefined;
  const workerLog = memoryLogger();
  const workerLogs: LogLine[] = workerLog.lines;
  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-k8s-sweep-worker-'));
    writeFileSync(
      path.join(workspace, 'live.sh'),
      '#!/bin/sh\ni=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\necho "done: $1"\n',
    );
    chmodSync(path.join(workspace, 'live.sh'), 0o755);
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url, config: { sseKeepAliveMs: 150 } });
    cluster = await startKubernetesApiStandIn();
  });
  after(async () => {
    if (workspace && !existsSync(path.join(workspace, 'go'))) writeFileSync(path.join(workspace, 'go'), '');
    await worker?.close();
    await cluster?.close();
    await api?.close();
    await redis?.stop();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  it('deletes a dead worker’s Secret of a failed run at start, and leaves a live run’s Secret and Job to it', async () => {
    // A worker died after creating this run's Secret; the run was marked failed by another path.
    const dead = runId(11);
    const record: RunRecord = {
      id: dead,
      project_id: 'prj_x',
      user_id: 'usr_x',
      status: 'failed',
      created_at: new Date().toISOString(),
      started_at: new Date().toISOString(),
      finished_at: new Date().toISOString(),
      exit_code: null,
      duration_ms: 0,
      cancel_requested: false,
      prompt: 'p',
    };
    await api.store.put(storeKeys.run(dead), record);
    const left = runSecret(
      {
        runId: dead,
        prompt: 'p',
        project: { workspace, command: ['./live.sh'], network: false },
        limits: defaultSandboxLimits,
        timeoutMs: 1000,
        credentials: [{ as: 'env', target: 'TOKEN', value: secretValue }],
      },
      settings,
    );
    assert.equal((await call(cluster, 'POST', `${secretsPath}?fieldValidation=Strict`, left)).status, 201);

    const backend = new KubernetesBackend(cluster.kubeConfig(), settings);
    const sweepErrors: unknown[] = [];
    worker = await startAgentWorker({
      redisUrl: redis.url,
      store: api.store,
      secretKey: testSecretKey,
      log: workerLog.logger,
      runTimeoutMs: 30_000,
      onSweepError: (error) => sweepErrors.push(error),
      // Sweeps every 300 ms all through the live run below, which it must leave alone.
      backendSweepIntervalMs: 300,
      backend,
    });
    await waitFor(
      async () => hasSecretNamed(secretName(dead)),
      (present) => !present,
    );
    const logged = workerLogs.find((line) => line.event === 'runs.backend_leftover_deleted');
    assert.deepEqual(logged?.fields, {
      backend: 'kubernetes',
      kind: 'Secret',
      name: secretName(dead),
      runId: dead,
      reason: 'run-final',
    });
    assert.ok(!JSON.stringify(workerLogs).includes(secretValue), 'no value in the logs');

    // A live run through the API, with a credential: its Secret (owned) and Job survive a sweep that runs
    // while it runs, however late the sweep thinks it is.
    assert.equal(
      (await api.call('POST', '/credentials', { body: { category: 'gitea', name: 'bot', value: secretValue } })).status,
      201,
    );
    const project = await api.call('POST', '/projects', {
      body: {
        name: 'live',
        workspace,
        command: ['./live.sh'],
        credentials: [{ category: 'gitea', name: 'bot', as: 'env', target: 'GITEA_TOKEN' }],
      },
    });
    assert.equal(project.status, 201, project.text);
    const accepted = await api.call('POST', `/projects/${project.json.id}/commands`, { body: { prompt: 'live-1' } });
    assert.equal(accepted.status, 202, accepted.text);
    const live = accepted.json.runId as string;
    const reading = readSse(api, accepted.json.streamUrl as string, {}, 60_000);
    await waitFor(
      async () => cluster.secrets.get(`runs/${secretName(live)}`),
      (secret) => secret?.metadata.ownerReferences !== undefined,
    );
    assert.equal((await readRun(api.store, live))?.status, 'running');
    const outcome = await backend.sweepLeftovers(
      async (id) => (await readRun(api.store, id))?.status ?? null,
      Date.now() + 24 * 60 * 60 * 1000,
    );
    assert.equal(outcome.secretsDeleted + outcome.jobsDeleted, 0);
    assert.ok(hasSecretNamed(secretName(live)) && cluster.jobs.has(`runs/${jobName(live)}`));
    writeFileSync(path.join(workspace, 'go'), '');
    const { events } = await reading;
    assert.equal((events.at(-1)!.data as Json).status, 'succeeded', outputText(events, 'stdout'));
    assert.match(outputText(events, 'stdout'), /^done: live-1$/m);

    // Periodically too: a leftover that appears after the start goes at a later interval.
    assert.equal((await call(cluster, 'POST', `${secretsPath}?fieldValidation=Strict`, left)).status, 201);
    await waitFor(
      async () => hasSecretNamed(secretName(dead)),
      (present) => !present,
    );
    assert.deepEqual(sweepErrors, []);
  });

  const hasSecretNamed = (name: string) => cluster.secrets.has(`runs/${name}`);
});
