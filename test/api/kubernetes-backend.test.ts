// The Kubernetes run backend against a STAND-IN API server (test/api/kubernetes-api-stand-in.ts): no real
// cluster can run on this machine. The stand-in validates what it is sent against the Kubernetes OpenAPI schema
// (strict fields, required fields, names) and runs a Job's container as a local process, so a run goes through
// the real worker and the official client end to end: same events as the bubblewrap backend, limits in the Job.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startAgentWorker } from '../../api/runs/agent-worker.js';
import type { AgentWorker } from '../../api/runs/agent-worker.js';
import { KubernetesBackend } from '../../api/runs/kubernetes-backend.js';
import { escapeExpansion, jobName, runJob } from '../../api/runs/kubernetes-job-spec.js';
import { kubernetesSettingsFromEnv, runBackendFromConfig } from '../../api/runs/run-backend-config.js';
import { defaultSandboxLimits } from '../../api/runs/sandbox.js';
import { configFromEnv } from '../../api/config.js';
import { startTestApi, startTestRedis, waitFor } from './harness.js';
import type { TestApi, TestRedis } from './harness.js';
import { startKubernetesApiStandIn } from './kubernetes-api-stand-in.js';
import type { KubernetesApiStandIn } from './kubernetes-api-stand-in.js';
import type { Json } from './kubernetes-test-fixtures.js';
import { plainJobJson, standInRequest, testRunSettings } from './kubernetes-test-fixtures.js';

const settings = testRunSettings;

interface SseEvent {
  event: string;
  data: Json;
}

async function readEvents(api: TestApi, streamUrl: string): Promise<SseEvent[]> {
  const response = await fetch(api.baseUrl + streamUrl, {
    headers: { 'x-api-key': api.adminKey, accept: 'text/event-stream' },
    signal: AbortSignal.timeout(30_000),
  });
  const events: SseEvent[] = [];
  for (const block of (await response.text()).split('\n\n')) {
    const lines = block.split('\n').filter((line) => line && !line.startsWith(':'));
    if (lines.length === 0) continue;
    const field = (name: string) => lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2) ?? '';
    events.push({ event: field('event'), data: JSON.parse(field('data')) });
  }
  return events;
}

const outputOf = (events: SseEvent[]) =>
  events
    .filter((event) => event.event === 'output')
    .map((event) => event.data.text)
    .join('');
const namesOf = (events: SseEvent[]) => events.map((event) => event.event).filter((name) => name !== 'output');

describe('runs: the Kubernetes Job spec', () => {
  const spec = {
    runId: 'run_0abcdefgh0123456789abcdef',
    prompt: 'fix $(HOME) and $PATH, cost $$5',
    project: { workspace: '/srv/ws/p1', command: ['./agent.sh', '--model=$(MODEL)'], network: false },
    limits: defaultSandboxLimits,
    timeoutMs: 600_000,
  };

  it("holds the run's limits, a locked-down pod and the command passed through unexpanded", () => {
    const job = runJob(spec, { ...settings, workspaceClaim: 'workspaces', workspaceRoot: '/srv/ws' });
    assert.equal(job.metadata!.name, 'svc-run-run-0abcdefgh0123456789abcdef');
    assert.equal(job.spec!.backoffLimit, 0);
    assert.equal(job.spec!.activeDeadlineSeconds, 600 + 2 + 30, 'wall time, then the kill grace, then slack');
    const pod = job.spec!.template.spec!;
    assert.equal(pod.restartPolicy, 'Never');
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.enableServiceLinks, false);
    assert.deepEqual(pod.securityContext, {
      runAsNonRoot: true,
      runAsUser: 65534,
      runAsGroup: 65534,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const container = pod.containers[0]!;
    assert.deepEqual(container.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      privileged: false,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    assert.deepEqual(container.resources!.limits, {
      memory: String(defaultSandboxLimits.memoryBytesMax),
      cpu: '1',
      'ephemeral-storage': String(defaultSandboxLimits.fileBytesMax + settings.tmpBytesMax),
    });
    assert.deepEqual(container.resources!.requests, container.resources!.limits);
    assert.deepEqual(container.volumeMounts, [
      { name: 'workspace', mountPath: '/srv/ws/p1', subPath: 'p1' },
      { name: 'tmp', mountPath: '/tmp' },
    ]);
    assert.deepEqual(pod.volumes![0], { name: 'workspace', persistentVolumeClaim: { claimName: 'workspaces' } });
    assert.equal(pod.volumes![1]!.emptyDir!.sizeLimit, String(settings.tmpBytesMax));
    assert.deepEqual(container.command, ['./agent.sh']);
    assert.deepEqual(container.args, ['--model=$$(MODEL)', 'fix $$(HOME) and $$PATH, cost $$$$5']);
    assert.equal(job.spec!.template.metadata!.labels!['svc.dev/run-network'], 'none');
    assert.equal(
      runJob({ ...spec, project: { ...spec.project, network: true } }, settings).spec!.template.metadata!.labels![
        'svc.dev/run-network'
      ],
      'egress',
    );
    assert.throws(
      () =>
        runJob(
          { ...spec, project: { ...spec.project, workspace: '/elsewhere' } },
          { ...settings, workspaceClaim: 'w', workspaceRoot: '/srv/ws' },
        ),
      /not under/,
    );
    assert.equal(escapeExpansion('a$b'), 'a$$b');
    assert.ok(jobName('run_' + 'x'.repeat(80)).length <= 63);
  });

  it('is selected by configuration; bubblewrap stays the default', async () => {
    assert.equal(configFromEnv({}).runBackend, 'bubblewrap');
    assert.equal(await runBackendFromConfig(configFromEnv({}), {}), undefined);
    assert.equal(configFromEnv({ SVC_RUN_BACKEND: 'kubernetes' }).runBackend, 'kubernetes');
    assert.throws(() => configFromEnv({ SVC_RUN_BACKEND: 'docker' }), /bubblewrap, kubernetes/);
    assert.throws(() => kubernetesSettingsFromEnv({}), /SVC_K8S_RUN_IMAGE/);
    const fromEnv = kubernetesSettingsFromEnv(
      { SVC_K8S_RUN_IMAGE: 'img', SVC_K8S_NAMESPACE: 'agents', SVC_K8S_WORKSPACE_CLAIM: 'ws', SVC_K8S_RUN_CPU: '500m' },
      '/srv/ws',
    );
    assert.deepEqual(
      [fromEnv.namespace, fromEnv.workspaceClaim, fromEnv.cpuCores, fromEnv.workspaceRoot, fromEnv.runAsUser],
      ['agents', 'ws', '500m', '/srv/ws', 65534],
    );
    assert.throws(
      () => kubernetesSettingsFromEnv({ SVC_K8S_RUN_IMAGE: 'img', SVC_K8S_RUN_UID: '0' }),
      /positive integer/,
    );
  });
});

describe('runs: the Kubernetes API stand-in refuses what the API server refuses', function () {
  this.timeout(30_000);
  let cluster: KubernetesApiStandIn;
  before(async () => {
    cluster = await startKubernetesApiStandIn();
  });
  after(async () => {
    await cluster?.close();
  });

  const post = (body: Json, query = '?fieldValidation=Strict', token = cluster.token) =>
    standInRequest(cluster, 'POST', `/apis/batch/v1/namespaces/runs/jobs${query}`, body, undefined, token);
  const validJob = (runId: string): Json => plainJobJson(runId);

  it('refuses unknown fields under strict validation, missing required fields, invalid names and a second Job of a name', async () => {
    const unknown = validJob('run_unknown');
    unknown.spec.template.spec.containers[0].cpuLimit = '1';
    unknown.spec.activeDeadline = 5;
    const strict = await post(unknown);
    assert.equal(strict.status, 400);
    assert.equal(strict.json.kind, 'Status');
    assert.equal(strict.json.reason, 'BadRequest');
    assert.equal(
      strict.json.message,
      'strict decoding error: unknown field "spec.template.spec.containers[0].cpuLimit", unknown field "spec.activeDeadline"',
    );

    const missing = validJob('run_missing');
    delete missing.spec.template.spec.containers[0].name;
    delete missing.spec.template;
    const required = await post(missing);
    assert.equal(required.status, 422);
    assert.equal(required.json.reason, 'Invalid');
    assert.deepEqual(
      required.json.details.causes.map((cause: Json) => [cause.reason, cause.field]),
      [['FieldValueRequired', 'spec.template']],
    );
    const noName = validJob('run_noname');
    delete noName.spec.template.spec.containers[0].name;
    assert.deepEqual(
      (await post(noName)).json.details.causes.map((cause: Json) => cause.field),
      ['spec.template.spec.containers[0].name'],
    );

    const badName = validJob('run_badname');
    badName.metadata.name = 'Svc_Run';
    const named = await post(badName);
    assert.equal(named.status, 422);
    assert.match(
      named.json.message,
      /^Job.batch "Svc_Run" is invalid: metadata.name: Invalid value: "Svc_Run": a lowercase RFC 1123 subdomain/,
    );
    const longName = validJob('run_long');
    longName.metadata.name = 'a'.repeat(64);
    assert.equal((await post(longName)).status, 422, 'a Job name is at most 63 characters (it becomes a label)');
    const badLabel = validJob('run_label');
    badLabel.spec.template.metadata.labels['svc.dev/run-id'] = 'not a label value';
    assert.equal((await post(badLabel)).status, 422);
    const always = validJob('run_always');
    always.spec.template.spec.restartPolicy = 'Always';
    assert.equal((await post(always)).json.details.causes[0].field, 'spec.template.spec.restartPolicy');
    const wrongType = validJob('run_type');
    wrongType.spec.backoffLimit = '0';
    assert.equal((await post(wrongType)).status, 400);
    const badQuantity = validJob('run_quantity');
    badQuantity.spec.template.spec.containers[0].resources.limits.memory = '4 gigabytes';
    const quantity = await post(badQuantity);
    assert.equal(quantity.status, 400);
    assert.match(quantity.json.message, /^Job in version "v1" cannot be handled as a Job: quantities must match/);

    assert.equal((await post(validJob('run_valid'))).status, 201);
    const again = await post(validJob('run_valid'));
    assert.equal(again.status, 409);
    assert.equal(again.json.reason, 'AlreadyExists');
    assert.equal((await post(validJob('run_token'), '?fieldValidation=Strict', 'wrong')).status, 401);
    // Without Strict the real server drops unknown fields (with a warning) and creates the Job.
    const lenient = validJob('run_lenient');
    lenient.spec.template.spec.containers[0].cpuLimit = '1';
    assert.equal((await post(lenient, '')).status, 201);
  });
});

describe('runs: a run through the Kubernetes backend', function () {
  this.timeout(120_000);
  let workspace: string;

  before(() => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'svc-k8s-ws-'));
    writeFileSync(
      path.join(workspace, 'agent.sh'),
      [
        '#!/bin/sh',
        'echo "prompt: $1"',
        'echo "$1" > answer.txt',
        'case "$1" in',
        '  sleep*) i=0; while [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done ;;',
        '  fail*) echo "failing"; exit 3 ;;',
        'esac',
        'echo done',
      ].join('\n'),
    );
    chmodSync(path.join(workspace, 'agent.sh'), 0o755);
  });
  after(() => {
    if (workspace) rmSync(workspace, { recursive: true, force: true });
  });

  interface Stack {
    redis: TestRedis;
    api: TestApi;
    worker: AgentWorker;
    cluster?: KubernetesApiStandIn;
  }

  async function startStack(kubernetes: boolean): Promise<Stack> {
    const redis = await startTestRedis();
    const api = await startTestApi({ redisUrl: redis.url, config: { sseKeepAliveMs: 150 } });
    const cluster = kubernetes ? await startKubernetesApiStandIn() : undefined;
    const backend = cluster ? new KubernetesBackend(cluster.kubeConfig(), settings) : undefined;
    const worker = await startAgentWorker({
      redisUrl: redis.url,
      store: api.store,
      concurrency: 2,
      runTimeoutMs: 3000,
      backend,
    });
    return { redis, api, worker, cluster };
  }
  async function stopStack(stack: Stack | undefined): Promise<void> {
    await stack?.worker.close();
    await stack?.cluster?.close();
    await stack?.api.close();
    await stack?.redis.stop();
  }
  async function runOnce(stack: Stack, prompt: string): Promise<{ runId: string; events: SseEvent[] }> {
    const project = await stack.api.call('POST', '/projects', {
      body: { name: 'agent', workspace, command: ['./agent.sh'], network: false },
    });
    assert.equal(project.status, 201, project.text);
    const accepted = await stack.api.call('POST', `/projects/${project.json.id}/commands`, { body: { prompt } });
    assert.equal(accepted.status, 202, accepted.text);
    return { runId: accepted.json.runId, events: await readEvents(stack.api, accepted.json.streamUrl) };
  }

  let local: Stack | undefined;
  let pods: Stack | undefined;
  before(async () => {
    local = await startStack(false);
    pods = await startStack(true);
  });
  after(async () => {
    await stopStack(local);
    await stopStack(pods);
  });

  it('gives the same events as the bubblewrap backend for a run that succeeds and one that fails', async () => {
    for (const prompt of ['hello $(HOME) world', 'fail now']) {
      const expected = await runOnce(local!, prompt);
      const got = await runOnce(pods!, prompt);
      assert.deepEqual(namesOf(got.events), namesOf(expected.events), prompt);
      assert.deepEqual(namesOf(got.events), ['queued', 'started', 'complete']);
      assert.equal(outputOf(got.events), outputOf(expected.events), prompt);
      const [want, have] = [expected.events.at(-1)!.data, got.events.at(-1)!.data];
      assert.deepEqual([have.status, have.exitCode], [want.status, want.exitCode], prompt);
    }
    assert.equal(
      outputOf((await runOnce(pods!, 'cost $$5')).events),
      'prompt: cost $$5\ndone\n',
      'the prompt reaches the agent unexpanded',
    );
  });

  it("creates each Job with strict field validation, the run's limits and the network fence, and deletes it with its pod", async () => {
    const cluster = pods!.cluster!;
    const { runId } = await runOnce(pods!, 'hello');
    const created = cluster.requests.filter(
      (request) => request.method === 'POST' && request.path === '/apis/batch/v1/namespaces/runs/jobs',
    );
    assert.ok(created.length > 0);
    assert.ok(created.every((request) => request.query.get('fieldValidation') === 'Strict'));
    const job = created.find((request) => request.body.metadata.labels['svc.dev/run-id'] === runId)!.body;
    assert.equal(job.metadata.name, jobName(runId));
    const container = job.spec.template.spec.containers[0];
    assert.equal(container.resources.limits.memory, String(defaultSandboxLimits.memoryBytesMax));
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(job.spec.activeDeadlineSeconds, 3 + 2 + 30);
    assert.deepEqual([...cluster.networkPolicies.keys()].sort(), ['runs/svc-run-deny-all', 'runs/svc-run-egress']);
    await waitFor(
      async () => cluster.jobs.has(`runs/${jobName(runId)}`),
      (present) => !present,
    );
    const deletion = cluster.requests.find(
      (request) => request.method === 'DELETE' && request.path.endsWith(`/jobs/${jobName(runId)}`),
    )!;
    assert.equal(deletion.query.get('propagationPolicy'), 'Background', 'a Job deleted without it orphans its pod');
    assert.deepEqual(cluster.orphanedPods, []);
  });

  it('ends a run past its wall time as timed_out and a cancelled one as cancelled, stopping the pod', async () => {
    const cluster = pods!.cluster!;
    const timedOut = await runOnce(pods!, 'sleep long');
    assert.deepEqual(namesOf(timedOut.events), ['queued', 'started', 'complete']);
    assert.equal(timedOut.events.at(-1)!.data.status, 'timed_out');
    await waitFor(
      async () =>
        [...cluster.pods.values()].filter((pod) => pod.metadata.labels['svc.dev/run-id'] === timedOut.runId).length,
      (count) => count === 0,
    );

    const project = await pods!.api.call('POST', '/projects', {
      body: { name: 'agent', workspace, command: ['./agent.sh'], network: false },
    });
    const accepted = await pods!.api.call('POST', `/projects/${project.json.id}/commands`, {
      body: { prompt: 'sleep again' },
    });
    const reading = readEvents(pods!.api, accepted.json.streamUrl);
    await waitFor(
      async () =>
        [...cluster.pods.values()].find((pod) => pod.metadata.labels['svc.dev/run-id'] === accepted.json.runId)?.status
          .phase,
      (phase) => phase === 'Running',
    );
    assert.equal((await pods!.api.call('POST', `/runs/${accepted.json.runId}/cancel`)).status, 202);
    const events = await reading;
    assert.equal(events.at(-1)!.data.status, 'cancelled');
    assert.deepEqual(cluster.orphanedPods, []);
  });

  it("stopLost (a run whose worker was lost) deletes the run's Job with its pods; a Job already gone is fine", async () => {
    const cluster = pods!.cluster!;
    const project = await pods!.api.call('POST', '/projects', {
      body: { name: 'agent', workspace, command: ['./agent.sh'], network: false },
    });
    const accepted = await pods!.api.call('POST', `/projects/${project.json.id}/commands`, {
      body: { prompt: 'sleep lost' },
    });
    const runId = accepted.json.runId as string;
    const reading = readEvents(pods!.api, accepted.json.streamUrl);
    await waitFor(
      async () =>
        [...cluster.pods.values()].find((pod) => pod.metadata.labels['svc.dev/run-id'] === runId)?.status.phase,
      (phase) => phase === 'Running',
    );
    // Another worker's backend, as the worker that takes the job back uses it.
    const other = new KubernetesBackend(cluster.kubeConfig(), settings);
    await other.stopLost(runId);
    assert.equal(cluster.jobs.has(`runs/${jobName(runId)}`), false);
    const deletion = cluster.requests.find(
      (request) => request.method === 'DELETE' && request.path.endsWith(`/jobs/${jobName(runId)}`),
    )!;
    assert.equal(deletion.query.get('propagationPolicy'), 'Background', 'a Job deleted without it orphans its pod');
    await waitFor(
      async () => [...cluster.pods.values()].filter((pod) => pod.metadata.labels['svc.dev/run-id'] === runId).length,
      (count) => count === 0,
    );
    assert.deepEqual(cluster.orphanedPods, []);
    await other.stopLost(runId);
    assert.notEqual((await reading).at(-1)!.data.status, 'succeeded');
  });

  it('fails a run whose Job the API server refuses, saying why', async () => {
    const cluster = pods!.cluster!;
    const refusing = new KubernetesBackend(cluster.kubeConfig(), { ...settings, cpuCores: 'lots' });
    const redis = await startTestRedis();
    const api = await startTestApi({ redisUrl: redis.url });
    const worker = await startAgentWorker({
      redisUrl: redis.url,
      store: api.store,
      runTimeoutMs: 3000,
      backend: refusing,
    });
    try {
      const { events } = await runOnce({ redis, api, worker }, 'hello');
      assert.deepEqual(namesOf(events), ['queued', 'started', 'complete']);
      assert.equal(events.at(-1)!.data.status, 'failed');
      assert.match(
        outputOf(events),
        /could not create the Kubernetes Job: 400: Job in version "v1" cannot be handled as a Job: quantities must match/,
      );
    } finally {
      await worker.close();
      await api.close();
      await redis.stop();
    }
  });
});
