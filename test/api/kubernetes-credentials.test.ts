// Credentials on the Kubernetes run backend, against the STAND-IN API server (kubernetes-api-stand-in.ts; no
// real cluster can run here): a run's credentials go into one immutable per-run Secret, created before the Job,
// owned by it, referenced (never copied) by the pod spec, and deleted when the run ends. The stand-in validates
// the Secret as the real API server does and its kubelet gives the command the env values and the files under
// /run/secrets, so the command proves it got them; the worker masks them in the output as for a local run.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import { KubernetesBackend } from '../../api/runs/kubernetes-backend.js';
import { jobName, runJob, runSecret, secretName } from '../../api/runs/kubernetes-job-spec.js';
import { defaultSandboxLimits } from '../../api/runs/sandbox.js';
import type { LogLine, TestApi, TestRedis } from './harness.js';
import { memoryLogger, startTestApi, startTestRedis, testSecretKey, waitFor } from './harness.js';
import { startKubernetesApiStandIn } from './kubernetes-api-stand-in.js';
import type { KubernetesApiStandIn } from './kubernetes-api-stand-in.js';
import type { Json } from './kubernetes-test-fixtures.js';
import { plainJobJson, standInRequest, testRunSettings } from './kubernetes-test-fixtures.js';
import { outputText, readSse } from './run-events.js';
import type { SseEvent } from './run-events.js';

const settings = testRunSettings;

const token = 'gitea-token-k8s/s3cr3t+0123456789';
const modelKey = 'sk-model-key-on-a-pod-abcdefghij';
const b64 = (text: string) => Buffer.from(text).toString('base64');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** everyForm: what must appear nowhere: each value, its base64 and URL-encoded forms, and a long fragment. */
const everyForm = [token, modelKey].flatMap((value) => [
  value,
  b64(value),
  encodeURIComponent(value),
  value.slice(0, 16),
]);

const credentialProject = {
  credentials: [
    { category: 'gitea', name: 'bot', as: 'env', target: 'GITEA_TOKEN' },
    { category: 'model', name: 'stand-in', as: 'file', target: 'model-key' },
  ],
};

describe('runs: the Secret of a run and the references to it', () => {
  const spec = {
    runId: 'run_0abcdefgh0123456789abcdef',
    prompt: 'p',
    project: { workspace: '/srv/ws/p1', command: ['./agent.sh'], network: false },
    limits: defaultSandboxLimits,
    timeoutMs: 600_000,
  };

  it('holds the values apart by kind (an env and a file of one name), while the Job names keys only', () => {
    assert.equal(runSecret(spec, settings), null, 'no credentials, no Secret');
    const credentials = [
      { as: 'env' as const, target: 'TOKEN', value: 'env-value-1' },
      { as: 'file' as const, target: 'TOKEN', value: 'file-value-2' },
    ];
    const secret = runSecret({ ...spec, credentials }, settings)!;
    assert.equal(secret.metadata!.name, 'svc-run-run-0abcdefgh0123456789abcdef-credentials');
    assert.deepEqual(secret.data, { 'env.TOKEN': b64('env-value-1'), 'file.TOKEN': b64('file-value-2') });
    const job = JSON.stringify(runJob({ ...spec, credentials }, settings));
    for (const value of ['env-value-1', 'file-value-2', b64('env-value-1'), b64('file-value-2')])
      assert.ok(!job.includes(value), value);
    assert.deepEqual(
      JSON.parse(JSON.stringify(runJob(spec, settings))),
      JSON.parse(JSON.stringify(runJob({ ...spec, credentials: [] }, settings))),
    );
  });
});

describe('runs: the Kubernetes API stand-in refuses Secrets the API server refuses', function () {
  this.timeout(30_000);
  let cluster: KubernetesApiStandIn;
  before(async () => {
    cluster = await startKubernetesApiStandIn();
  });
  after(async () => {
    await cluster?.close();
  });

  const request = (method: string, url: string, body?: Json, contentType = 'application/json') =>
    standInRequest(cluster, method, url, body, contentType);
  const secrets = '/api/v1/namespaces/runs/secrets';
  const post = (body: Json) => request('POST', `${secrets}?fieldValidation=Strict`, body);
  const patch = (name: string, body: Json, type = 'application/json-patch+json') =>
    request('PATCH', `${secrets}/${name}?fieldValidation=Strict`, body, type);
  const secret = (name: string, extra: Json = {}): Json => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, labels: { 'svc.dev/run-id': 'run_x' } },
    type: 'Opaque',
    immutable: true,
    data: { 'env.TOKEN': b64('value') },
    ...extra,
  });
  const causes = (json: Json) => json.details.causes.map((cause: Json) => [cause.reason, cause.field]);

  it('refuses bad data keys, data that is not base64, over 1 MiB, unknown fields and a second Secret of a name', async () => {
    const notBase64 = await post(secret('s-b64', { data: { k: 'not base64!' } }));
    assert.equal(notBase64.status, 400);
    assert.equal(
      notBase64.json.message,
      'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3',
    );
    const badKey = await post(
      secret('s-key', { data: { 'has space': b64('v'), '..x': b64('v'), ['k'.repeat(254)]: b64('v') } }),
    );
    assert.equal(badKey.status, 422);
    assert.deepEqual(causes(badKey.json), [
      ['FieldValueInvalid', 'data[has space]'],
      ['FieldValueInvalid', 'data[..x]'],
      ['FieldValueInvalid', `data[${'k'.repeat(254)}]`],
    ]);
    assert.match(badKey.json.message, /regex used for validation is '\[-\._a-zA-Z0-9\]\+'/);
    const stringKey = await post(secret('s-string-key', { data: undefined, stringData: { 'a/b': 'v' } }));
    assert.deepEqual(causes(stringKey.json), [['FieldValueInvalid', 'data[a/b]']]);
    const big = await post(secret('s-big', { data: { k: b64('x'.repeat(1024 * 1024 + 1)) } }));
    assert.deepEqual(causes(big.json), [['FieldValueTooLong', 'data']]);
    const unknown = await post(secret('s-unknown', { immutible: true }));
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.message, 'strict decoding error: unknown field "immutible"');
    const wrongType = await post(secret('s-type', { immutable: 'yes' }));
    assert.equal(wrongType.status, 400);
    const badName = await post(secret('S_Secret'));
    assert.equal(badName.status, 422);

    const created = await post(secret('s-ok', { stringData: { 'file.x': 'plain' } }));
    assert.equal(created.status, 201);
    assert.deepEqual(created.json.data, { 'env.TOKEN': b64('value'), 'file.x': b64('plain') }, 'stringData folded');
    assert.equal(created.json.stringData, undefined);
    assert.ok(created.json.metadata.uid);
    const again = await post(secret('s-ok'));
    assert.equal(again.status, 409);
    assert.equal(again.json.reason, 'AlreadyExists');
    assert.equal(again.json.message, 'secrets "s-ok" already exists');
  });

  it("refuses to change an immutable Secret's data, type or immutability; its metadata may change", async () => {
    assert.equal((await post(secret('s-frozen'))).status, 201);
    const data = await patch('s-frozen', [{ op: 'replace', path: '/data/env.TOKEN', value: b64('other') }]);
    assert.equal(data.status, 422);
    assert.deepEqual(causes(data.json), [['FieldValueForbidden', 'data']]);
    assert.match(data.json.message, /field is immutable when `immutable` is set/);
    const added = await patch('s-frozen', { stringData: { more: 'x' } }, 'application/merge-patch+json');
    assert.deepEqual(causes(added.json), [['FieldValueForbidden', 'data']]);
    const thawed = await patch('s-frozen', [{ op: 'replace', path: '/immutable', value: false }]);
    assert.deepEqual(causes(thawed.json), [['FieldValueForbidden', 'immutable']]);
    const retyped = await patch('s-frozen', [{ op: 'replace', path: '/type', value: 'kubernetes.io/basic-auth' }]);
    assert.deepEqual(causes(retyped.json), [['FieldValueInvalid', 'type']]);
    const labelled = await patch('s-frozen', [{ op: 'add', path: '/metadata/labels/extra', value: 'yes' }]);
    assert.equal(labelled.status, 200);
    assert.equal(cluster.secrets.get('runs/s-frozen').metadata.labels.extra, 'yes');
    assert.equal(cluster.secrets.get('runs/s-frozen').data['env.TOKEN'], b64('value'));
    assert.equal((await request('DELETE', `${secrets}/s-frozen`)).status, 200);
    assert.equal((await request('DELETE', `${secrets}/s-frozen`)).status, 404);
    assert.equal((await request('GET', `${secrets}/s-frozen`)).status, 404);
  });

  it('collects a Secret with its owner Job (deleted with propagation), orphans it otherwise, and collects one whose owner is not there', async () => {
    const job = (runId: string) => plainJobJson(runId);
    const jobs = '/apis/batch/v1/namespaces/runs/jobs';
    const owned = async (runId: string, name: string) => {
      const made = await request('POST', `${jobs}?fieldValidation=Strict`, job(runId));
      assert.equal(made.status, 201);
      const ref = { apiVersion: 'batch/v1', kind: 'Job', name: made.json.metadata.name, uid: made.json.metadata.uid };
      assert.equal((await post(secret(name))).status, 201);
      assert.equal((await patch(name, [{ op: 'add', path: '/metadata/ownerReferences', value: [ref] }])).status, 200);
      return made.json.metadata.name as string;
    };
    // A Secret whose owner is not there is collected; the collector works in order, so once it has collected
    // one made later, it has looked at every Secret before it.
    const collected = async (name: string) => {
      assert.equal((await post(secret(name))).status, 201);
      const ghost = { apiVersion: 'batch/v1', kind: 'Job', name: 'gone', uid: 'f'.repeat(32) };
      assert.equal((await patch(name, [{ op: 'add', path: '/metadata/ownerReferences', value: [ghost] }])).status, 200);
      await waitFor(
        async () => cluster.secrets.has(`runs/${name}`),
        (present) => !present,
      );
    };
    const background = await owned('run_gc_background', 's-owned-background');
    const orphan = await owned('run_gc_orphan', 's-owned-orphan');
    await collected('s-no-owner-1');
    assert.ok(cluster.secrets.has('runs/s-owned-background'), 'an owner that is there keeps its Secret');
    await request('DELETE', `${jobs}/${background}?propagationPolicy=Background`);
    await waitFor(
      async () => cluster.secrets.has('runs/s-owned-background'),
      (present) => !present,
    );
    await request('DELETE', `${jobs}/${orphan}`);
    await collected('s-no-owner-2');
    assert.equal(cluster.secrets.get('runs/s-owned-orphan').metadata.ownerReferences, undefined, 'orphaned, kept');
    const missingUid = await patch('s-owned-orphan', [
      { op: 'add', path: '/metadata/ownerReferences', value: [{ apiVersion: 'batch/v1', kind: 'Job', name: 'x' }] },
    ]);
    assert.deepEqual(causes(missingUid.json), [['FieldValueRequired', 'metadata.ownerReferences[0].uid']]);
  });

  it('refuses a pod env entry with both a value and a source, and a secret volume path that climbs out', async () => {
    const base = runJob(
      {
        runId: 'run_env',
        prompt: 'p',
        project: { workspace: '/tmp', command: ['true'], network: false },
        limits: defaultSandboxLimits,
        timeoutMs: 60_000,
        credentials: [
          { as: 'env', target: 'T', value: 'v' },
          { as: 'file', target: 'f', value: 'v' },
        ],
      },
      settings,
    );
    const body = JSON.parse(JSON.stringify(base));
    body.spec.template.spec.containers[0].env.at(-1).value = 'inline';
    body.spec.template.spec.volumes.at(-1).secret.items[0].path = '../escape';
    const refused = await request('POST', '/apis/batch/v1/namespaces/runs/jobs?fieldValidation=Strict', body);
    assert.equal(refused.status, 422);
    assert.deepEqual(causes(refused.json), [
      ['FieldValueInvalid', 'spec.template.spec.volumes[2].secret.items[0].path'],
      ['FieldValueInvalid', 'spec.template.spec.containers[0].env[3].valueFrom'],
    ]);
  });
});

describe('runs: credentials on the Kubernetes backend', function () {
  this.timeout(120_000);
  let workspace: string;
  let redis: TestRedis;
  let api: TestApi;
  let cluster: KubernetesApiStandIn;
  let worker: AgentWorker;
  const workerLog = memoryLogger();
  const workerLogs: LogLine[] = workerLog.lines;

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-k8s-creds-ws-'));
    const scripts: Record<string, string> = {
      // Waits (bounded) for the test's go file, so the test sees the Secret while the run runs; then shows what
      // it was given: the values (masked on their way to the events), their digests, the file's mode, and that
      // the file cannot be written.
      'creds.sh': [
        '#!/bin/sh',
        'i=0; while [ ! -e "go-$1" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done',
        '[ -e "go-$1" ] || { echo "no go file"; exit 9; }',
        'echo "env=$GITEA_TOKEN"',
        'echo "file=$(cat /run/secrets/model-key)"',
        'echo "env-sha256=$(printf %s "$GITEA_TOKEN" | sha256sum | cut -c1-64)"',
        'echo "file-sha256=$(sha256sum < /run/secrets/model-key | cut -c1-64)"',
        'echo "mode=$(stat -c %a /run/secrets/model-key)"',
        '(echo x > /run/secrets/model-key) 2>/dev/null && echo "file=writable" || echo "file=read-only"',
      ].join('\n'),
      'plain.sh': '#!/bin/sh\necho "plain: $1"\n',
    };
    for (const [name, text] of Object.entries(scripts)) {
      writeFileSync(path.join(workspace, name), text);
      chmodSync(path.join(workspace, name), 0o755);
    }
    redis = await startTestRedis();
    api = await startTestApi({ redisUrl: redis.url, config: { sseKeepAliveMs: 150 } });
    cluster = await startKubernetesApiStandIn();
    worker = await startAgentWorker({
      redisUrl: redis.url,
      store: api.store,
      secretKey: testSecretKey,
      log: workerLog.logger,
      concurrency: 2,
      runTimeoutMs: 30_000,
      backend: new KubernetesBackend(cluster.kubeConfig(), settings),
    });
    for (const [category, name, value] of [
      ['gitea', 'bot', token],
      ['model', 'stand-in', modelKey],
    ] as const) {
      assert.equal((await api.call('POST', '/credentials', { body: { category, name, value } })).status, 201);
    }
  });
  after(async () => {
    await worker?.close();
    await cluster?.close();
    await api?.close();
    await redis?.stop();
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  const createProject = async (command: string[], extra: Json = {}) => {
    const created = await api.call('POST', '/projects', { body: { name: 'k8s', workspace, command, ...extra } });
    assert.equal(created.status, 201, created.text);
    return created;
  };
  const startRun = async (projectId: string, prompt: string) => {
    const accepted = await api.call('POST', `/projects/${projectId}/commands`, { body: { prompt } });
    assert.equal(accepted.status, 202, accepted.text);
    return {
      runId: accepted.json.runId as string,
      reading: readSse(api, accepted.json.streamUrl as string, {}, 60_000),
      accepted,
    };
  };
  const requestsFor = (kind: string) => cluster.requests.filter((request) => request.path.includes(`/${kind}`));
  const audit = {
    injected: [
      { category: 'gitea', name: 'bot', as: 'env', target: 'GITEA_TOKEN' },
      { category: 'model', name: 'stand-in', as: 'file', target: '/run/secrets/model-key' },
    ],
  };

  it('gives the command its env and file credentials through a per-run Secret the pod only references, masks them, and deletes the Secret', async () => {
    const project = await createProject(['./creds.sh'], credentialProject);
    const { runId, reading, accepted } = await startRun(project.json.id, 'creds-1');
    const key = `runs/${secretName(runId)}`;

    // While the run runs: the Secret holds the values, and the Job owns it.
    const secret = await waitFor(
      async () => cluster.secrets.get(key),
      (found) => found?.metadata.ownerReferences !== undefined,
    );
    const job = cluster.jobs.get(`runs/${jobName(runId)}`);
    assert.ok(job, 'the Job exists while its Secret does');
    assert.equal(secret.type, 'Opaque');
    assert.equal(secret.immutable, true);
    assert.equal(secret.metadata.labels['svc.dev/run-id'], runId);
    assert.deepEqual(secret.data, { 'env.GITEA_TOKEN': b64(token), 'file.model-key': b64(modelKey) });
    assert.deepEqual(secret.metadata.ownerReferences, [
      { apiVersion: 'batch/v1', kind: 'Job', name: jobName(runId), uid: job.metadata.uid },
    ]);
    const posts = cluster.requests.filter((request) => request.method === 'POST');
    const secretPost = posts.findIndex(
      (request) => request.path.endsWith('/secrets') && request.body.metadata.name === secretName(runId),
    );
    const jobPost = posts.findIndex(
      (request) => request.path.endsWith('/jobs') && request.body.metadata.name === jobName(runId),
    );
    assert.ok(secretPost >= 0 && secretPost < jobPost, 'the Secret is created before the Job');
    assert.equal(posts[secretPost]!.query.get('fieldValidation'), 'Strict');

    // The pod spec holds references only.
    const container = job.spec.template.spec.containers[0];
    assert.deepEqual(
      container.env.find((item: Json) => item.name === 'GITEA_TOKEN'),
      {
        name: 'GITEA_TOKEN',
        valueFrom: { secretKeyRef: { name: secretName(runId), key: 'env.GITEA_TOKEN', optional: false } },
      },
    );
    assert.deepEqual(
      container.volumeMounts.find((mount: Json) => mount.name === 'credentials'),
      { name: 'credentials', mountPath: '/run/secrets', readOnly: true },
    );
    assert.deepEqual(
      job.spec.template.spec.volumes.find((volume: Json) => volume.name === 'credentials'),
      {
        name: 'credentials',
        secret: {
          secretName: secretName(runId),
          optional: false,
          defaultMode: 0o444,
          items: [{ key: 'file.model-key', path: 'model-key' }],
        },
      },
    );

    writeFileSync(path.join(workspace, 'go-creds-1'), '');
    const { events } = await reading;
    const complete = events.at(-1)!;
    assert.equal((complete.data as Json).status, 'succeeded', outputText(events, 'stdout'));
    const stdout = outputText(events, 'stdout');
    assert.match(stdout, /^env=••••••$/m, 'the printed env value is masked');
    assert.match(stdout, /^file=••••••$/m, 'the printed file value is masked');
    assert.match(stdout, new RegExp(`^env-sha256=${sha256(token)}$`, 'm'), 'the command got the env value');
    assert.match(stdout, new RegExp(`^file-sha256=${sha256(modelKey)}$`, 'm'), 'the command got the file');
    assert.match(stdout, /^mode=444$/m);
    assert.match(stdout, /^file=read-only$/m);
    assert.deepEqual(
      events.map((event) => event.event).filter((name) => name !== 'output'),
      ['queued', 'started', 'credentials', 'complete'],
    );
    assert.equal((events.find((event) => event.event === 'started')!.data as Json).sandbox.backend, 'kubernetes');
    assert.deepEqual(
      events.find((event) => event.event === 'credentials')!.data,
      audit,
      'the same audit as a local run',
    );
    const logged = workerLogs.find((line) => line.event === 'run.credentials_injected' && line.fields.runId === runId);
    assert.deepEqual(logged?.fields.credentials, audit.injected);

    // Gone when the run ends, deleted by the backend (not left to the garbage collector).
    await waitFor(
      async () => cluster.secrets.has(key),
      (present) => !present,
    );
    assert.ok(
      cluster.requests.some(
        (request) =>
          request.method === 'DELETE' && request.path === `/api/v1/namespaces/runs/secrets/${secretName(runId)}`,
      ),
      'the backend deletes the Secret itself',
    );

    // No value anywhere but in the Secret: events, logs, API responses, every other request to the cluster,
    // the Job and its pod.
    const responses = [
      accepted.text,
      project.text,
      (await api.call('GET', `/runs/${runId}`)).text,
      (await api.call('GET', `/projects/${project.json.id}`)).text,
      (await api.call('GET', '/credentials')).text,
    ];
    const toCluster = cluster.requests.filter(
      (request) => !(request.method === 'POST' && request.path.endsWith('/secrets')),
    );
    const pods = [...cluster.pods.values()].filter((pod) => pod.metadata.labels['svc.dev/run-id'] === runId);
    const everything = [
      JSON.stringify(events satisfies SseEvent[]),
      JSON.stringify(api.logs),
      JSON.stringify(workerLogs),
      ...responses,
      JSON.stringify(toCluster),
      JSON.stringify(job),
      JSON.stringify(pods),
    ].join('\n');
    for (const form of everyForm) assert.ok(!everything.includes(form), `${form} appears outside the Secret`);
  });

  it('deletes the Secret of a cancelled run', async () => {
    const project = await createProject(['./creds.sh'], credentialProject);
    const { runId, reading } = await startRun(project.json.id, 'creds-cancelled');
    const key = `runs/${secretName(runId)}`;
    await waitFor(
      async () => cluster.secrets.get(key)?.metadata.ownerReferences,
      (owners) => owners !== undefined,
    );
    assert.equal((await api.call('POST', `/runs/${runId}/cancel`)).status, 202);
    const { events } = await reading;
    assert.equal((events.at(-1)!.data as Json).status, 'cancelled');
    await waitFor(
      async () => cluster.secrets.has(key),
      (present) => !present,
    );
    assert.ok(
      cluster.requests.some(
        (request) =>
          request.method === 'DELETE' && request.path === `/api/v1/namespaces/runs/secrets/${secretName(runId)}`,
      ),
    );
  });

  it('deletes the Secret when the Job cannot be created', async () => {
    const refusing = new KubernetesBackend(cluster.kubeConfig(), { ...settings, cpuCores: 'lots' });
    const otherRedis = await startTestRedis();
    const otherApi = await startTestApi({ redisUrl: otherRedis.url });
    const otherWorker = await startAgentWorker({
      redisUrl: otherRedis.url,
      store: otherApi.store,
      secretKey: testSecretKey,
      runTimeoutMs: 30_000,
      backend: refusing,
    });
    try {
      for (const [category, name, value] of [
        ['gitea', 'bot', token],
        ['model', 'stand-in', modelKey],
      ] as const) {
        assert.equal((await otherApi.call('POST', '/credentials', { body: { category, name, value } })).status, 201);
      }
      const project = await otherApi.call('POST', '/projects', {
        body: { name: 'k8s', workspace, command: ['./creds.sh'], ...credentialProject },
      });
      const accepted = await otherApi.call('POST', `/projects/${project.json.id}/commands`, { body: { prompt: 'x' } });
      const runId = accepted.json.runId as string;
      const { events } = await readSse(otherApi, accepted.json.streamUrl as string, {}, 60_000);
      assert.equal((events.at(-1)!.data as Json).status, 'failed');
      assert.match(
        outputText(events, 'stderr') + outputText(events, 'stdout'),
        /could not create the Kubernetes Job: 400/,
      );
      const forRun = requestsFor('secrets').filter(
        (request) => request.path.includes(secretName(runId)) || request.body?.metadata?.name === secretName(runId),
      );
      assert.deepEqual(
        forRun.map((request) => request.method),
        ['POST', 'DELETE'],
        'created, then deleted once the Job was refused',
      );
      assert.ok(!cluster.secrets.has(`runs/${secretName(runId)}`));
      assert.ok(!cluster.jobs.has(`runs/${jobName(runId)}`));
    } finally {
      await otherWorker.close();
      await otherApi.close();
      await otherRedis.stop();
    }
  });

  it('creates no Secret for a run without credentials', async () => {
    const before = requestsFor('secrets').length;
    const project = await createProject(['./plain.sh']);
    const { runId, reading } = await startRun(project.json.id, 'hello');
    const { events } = await reading;
    assert.equal((events.at(-1)!.data as Json).status, 'succeeded');
    assert.equal(outputText(events, 'stdout'), 'plain: hello\n');
    assert.equal(requestsFor('secrets').length, before);
    const job = cluster.requests.find(
      (request) => request.method === 'POST' && request.body?.metadata?.name === jobName(runId),
    )!.body;
    assert.deepEqual(
      job.spec.template.spec.volumes.map((volume: Json) => volume.name),
      ['workspace', 'tmp'],
    );
    assert.ok(!JSON.stringify(job).includes('secretKeyRef'));
  });
});
