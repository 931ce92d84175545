// The Kubernetes run backend: each run is one batch/v1 Job (kubernetes-job-spec.ts) created with the official
// client (@kubernetes/client-node) and strict field validation. The backend watches the Job's pod, follows the
// container's log into the run's output, and closes with the container's exit code, like a local process would,
// so the worker (agent-worker.ts) gives the run the same events and limits as with bubblewrap. Kubernetes' log
// API merges the container's stdout and stderr, so a Kubernetes run's output all arrives as stdout.
// kill(SIGTERM) deletes the Job with its pod (the pod gets its termination grace); kill(SIGKILL) deletes the pod
// at once. A finished Job is deleted; ttlSecondsAfterFinished catches one the worker could not.
// A run's credentials go into one immutable Secret, created before the Job and referenced by its pod; the worker
// masks their values in the output it reads from the log, as for a local run. What a worker that died mid-run
// leaves behind (a Secret without an owner, a Job of an ended run) is deleted by sweepLeftovers
// (kubernetes-sweep.ts), which the worker runs when it starts and, on one worker at a time, periodically.
import { EventEmitter, once } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { ApiException, BatchV1Api, CoreV1Api, KubeConfig, Log, NetworkingV1Api, Watch } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { runKubernetesSecretOwnDeadlineMs } from '../limits.js';
import type { RunBackend, RunProcess, RunSpec } from './run-backend.js';
import type { LeftoverSweepOptions, LeftoverSweepOutcome, RunStatusLookup } from './kubernetes-sweep.js';
import { sweepKubernetesLeftovers } from './kubernetes-sweep.js';
import type { KubernetesRunSettings } from './kubernetes-job-spec.js';
import {
  jobName,
  runContainerName,
  runJob,
  runLabels,
  runNetworkPolicies,
  runSecret,
  secretName,
  secretOwnerReference,
} from './kubernetes-job-spec.js';

/** startFailureReasons: a container waiting for one of these will not start without someone changing something. */
const startFailureReasons = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
]);
/** watchRetryMs paces re-opening a pod watch the API server closed; watchRetriesMax bounds them per run. */
const watchRetryMs = 1000;
const watchRetriesMax = 30;

/** statusMessage reads a Kubernetes API failure without its request (which may carry the prompt). */
function statusMessage(error: unknown): string {
  if (error instanceof ApiException) {
    let body: { message?: unknown } = {};
    try {
      body = (typeof error.body === 'string' ? JSON.parse(error.body) : error.body) as { message?: unknown };
    } catch {
      // Not JSON: the status alone.
    }
    return `${error.code}${typeof body.message === 'string' ? `: ${body.message.slice(0, 500)}` : ''}`;
  }
  return error instanceof Error ? error.message.slice(0, 500) : String(error);
}

export class KubernetesBackend implements RunBackend {
  readonly name = 'kubernetes';
  private readonly batch: BatchV1Api;
  private readonly core: CoreV1Api;
  private readonly networking: NetworkingV1Api;
  private policies: Promise<void> | null = null;

  constructor(
    readonly kubeConfig: KubeConfig,
    readonly settings: KubernetesRunSettings,
  ) {
    this.batch = kubeConfig.makeApiClient(BatchV1Api);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.networking = kubeConfig.makeApiClient(NetworkingV1Api);
  }

  /** ensurePolicies creates the run NetworkPolicies once, before the first Job, so no run pod starts unfenced. */
  ensurePolicies(): Promise<void> {
    this.policies ??= (async () => {
      for (const body of runNetworkPolicies(this.settings.namespace)) {
        try {
          await this.networking.createNamespacedNetworkPolicy({
            namespace: this.settings.namespace,
            body,
            fieldValidation: 'Strict',
          });
        } catch (error) {
          // One made by an earlier worker (or the manifests) is kept.
          if (!(error instanceof ApiException && error.code === 409)) throw error;
        }
      }
    })().catch((error: unknown) => {
      this.policies = null;
      throw error;
    });
    return this.policies;
  }

  start(spec: RunSpec): RunProcess {
    return new KubernetesRun(this, this.batch, this.core, spec);
  }

  /** sweepLeftovers deletes the run Secrets and Jobs that outlived their runs (kubernetes-sweep.ts). */
  sweepLeftovers(
    statusOf: RunStatusLookup,
    nowMs: number,
    options: LeftoverSweepOptions = {},
  ): Promise<LeftoverSweepOutcome> {
    return sweepKubernetesLeftovers(
      { core: this.core, batch: this.batch },
      this.settings.namespace,
      statusOf,
      nowMs,
      options,
    );
  }
}

class KubernetesRun extends EventEmitter implements RunProcess {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  readonly pid = undefined;
  exitCode: number | null = null;
  readonly signalCode = null;
  private readonly name: string;
  private readonly namespace: string;
  private created = false;
  /** secretMade: the run's Secret exists (or may: its creation was sent) and is the backend's to delete. */
  private secretMade = false;
  private stopping: NodeJS.Signals | null = null;
  private podName: string | null = null;
  private exit: { code: number | null } | null = null;
  private logStarted = false;
  private logEnded: Promise<void> | null = null;
  private bytesSeen = 0;
  private watchAbort: AbortController | null = null;
  private closed = false;
  private exitKnown!: () => void;
  private readonly exited = new Promise<void>((resolve) => {
    this.exitKnown = resolve;
  });

  constructor(
    private readonly backend: KubernetesBackend,
    private readonly batch: BatchV1Api,
    private readonly core: CoreV1Api,
    private readonly spec: RunSpec,
  ) {
    super();
    this.name = jobName(spec.runId);
    this.namespace = backend.settings.namespace;
    void this.drive();
  }

  kill(signal: NodeJS.Signals | number = 'SIGTERM'): boolean {
    if (this.closed) return false;
    const now = signal === 'SIGKILL' || signal === 9 ? 'SIGKILL' : 'SIGTERM';
    if (this.stopping === 'SIGKILL') return true;
    this.stopping = now;
    if (this.created) void this.stop(now);
    return true;
  }

  private async drive(): Promise<void> {
    let step = 'create the Kubernetes Job';
    try {
      const body = runJob(this.spec, this.backend.settings);
      const secret = runSecret(this.spec, this.backend.settings);
      await this.backend.ensurePolicies();
      // The Secret comes first, so the pod never waits on a missing one.
      const secretSentMs = performance.now();
      if (secret) {
        step = "create the run's Secret";
        this.secretMade = true;
        await this.core.createNamespacedSecret({ namespace: this.namespace, body: secret, fieldValidation: 'Strict' });
        step = 'create the Kubernetes Job';
      }
      const job = await this.batch.createNamespacedJob({ namespace: this.namespace, body, fieldValidation: 'Strict' });
      this.created = true;
      if (secret) {
        step = "give the run's Secret to its Job";
        // Past the deadline the leftover sweep may take this Secret for a dead worker's (kubernetes-sweep.ts):
        // the run gives up instead of owning it late. A patch sent in time that the sweep's delete beats fails
        // (404), which ends the run the same way.
        const elapsedMs = performance.now() - secretSentMs;
        const deadlineMs = this.backend.settings.secretOwnDeadlineMs ?? runKubernetesSecretOwnDeadlineMs;
        if (elapsedMs > deadlineMs)
          throw new Error(`the Job was made ${Math.round(elapsedMs)} ms after the Secret (at most ${deadlineMs} ms)`);
        await this.ownSecret(job.metadata?.uid);
      }
    } catch (error) {
      // Nothing of the run may outlive it: a Job made before a later step failed goes, and so does the Secret
      // (before the Job exists, no owner reference would ever collect it).
      if (this.created) await this.stop('SIGKILL');
      await this.deleteSecret();
      this.fail(`could not ${step}: ${statusMessage(error)}`);
      return;
    }
    if (this.stopping) void this.stop(this.stopping);
    await this.watchPod(0);
    await this.exited;
    // The follow may have ended before the container did (or never begun): read the log once more for the rest.
    await this.logEnded;
    if (this.podName && this.exit?.code !== null) await this.readRest();
    await this.deleteSecret();
    this.finish();
  }

  /**
   * ownSecret makes the Job the owner of the run's Secret (immutable covers its data, not its metadata). Both
   * this and deleteSecret: the explicit delete removes the credentials the moment the run ends, whatever became
   * of its Job (one the worker could not delete lives until ttlSecondsAfterFinished); the owner reference
   * removes them with the Job when the worker is gone before it could delete them (a crash, a lost API server),
   * since the Job's deadline and TTL end the Job without the worker.
   */
  private async ownSecret(uid: string | undefined): Promise<void> {
    if (!uid) throw new Error('the API server gave the Job no uid');
    await this.core.patchNamespacedSecret({
      name: secretName(this.spec.runId),
      namespace: this.namespace,
      body: [{ op: 'add', path: '/metadata/ownerReferences', value: [secretOwnerReference({ name: this.name, uid })] }],
      fieldValidation: 'Strict',
    });
  }

  /** deleteSecret deletes the run's Secret, if it made one; one already gone is fine. */
  private async deleteSecret(): Promise<void> {
    if (!this.secretMade) return;
    try {
      await this.core.deleteNamespacedSecret({ name: secretName(this.spec.runId), namespace: this.namespace });
      this.secretMade = false;
    } catch (error) {
      if (error instanceof ApiException && error.code === 404) {
        this.secretMade = false;
        return;
      }
      // The owner reference (once the Job exists) is what is left to collect it.
      this.stderr.write(`the run's Secret could not be deleted: ${statusMessage(error)}\n`);
    }
  }

  private async watchPod(retries: number): Promise<void> {
    if (this.closed || this.exit) return;
    const watch = new Watch(this.backend.kubeConfig);
    const path = `/api/v1/namespaces/${this.namespace}/pods`;
    const ended = new Promise<unknown>((resolve) => {
      void watch
        .watch(
          path,
          { labelSelector: `${runLabels.runId}=${this.spec.runId}` },
          (phase, pod: V1Pod) => this.onPod(phase, pod),
          resolve,
        )
        .then((abort) => {
          this.watchAbort = abort;
        }, resolve);
    });
    await Promise.race([ended, this.exited]);
    if (this.exit || this.closed) {
      this.watchAbort?.abort();
      return;
    }
    // The API server ends watches now and then; a run outlives them.
    if (retries >= watchRetriesMax) {
      this.stderr.write('the Kubernetes pod watch kept closing; the run is given up\n');
      this.exit = { code: null };
      this.exitKnown();
      void this.stop('SIGKILL');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, watchRetryMs));
    await this.watchPod(retries + 1);
  }

  private onPod(phase: string, pod: V1Pod): void {
    if (this.exit) return;
    this.podName ??= pod.metadata?.name ?? null;
    if (pod.metadata?.name !== this.podName) return;
    const status = pod.status?.containerStatuses?.find((item) => item.name === runContainerName);
    const waiting = status?.state?.waiting;
    const terminated = status?.state?.terminated;
    if ((status?.state?.running || terminated) && !this.logStarted) this.followLog();
    if (terminated) {
      if (terminated.reason === 'OOMKilled') this.stderr.write('the run was killed: it went over its memory limit\n');
      this.exit = { code: terminated.exitCode ?? null };
    } else if (waiting?.reason && startFailureReasons.has(waiting.reason)) {
      this.stderr.write(
        `the run's pod could not start: ${waiting.reason}${waiting.message ? `: ${waiting.message.slice(0, 300)}` : ''}\n`,
      );
      this.exit = { code: null };
      void this.stop('SIGKILL');
    } else if (phase === 'DELETED' || pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') {
      // Gone or ended without a container result (deleted before it started, evicted, past its deadline).
      if (pod.status?.reason) this.stderr.write(`the run's pod ended: ${pod.status.reason}\n`);
      this.exit = { code: null };
    } else {
      return;
    }
    this.exitKnown();
  }

  /** followLog streams the container's log into stdout, counting bytes so a later read can continue it. */
  private followLog(): void {
    this.logStarted = true;
    const sink = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        this.bytesSeen += chunk.length;
        this.stdout.write(chunk);
        callback();
      },
    });
    this.logEnded = new Promise<void>((resolve) => {
      sink.on('finish', resolve);
      sink.on('error', () => resolve());
      new Log(this.backend.kubeConfig)
        .log(this.namespace, this.podName!, runContainerName, sink, { follow: true })
        .then(
          (abort) => {
            void this.exited.then(() => setTimeout(() => abort.abort(), 5000).unref());
          },
          () => resolve(),
        );
    });
  }

  /** readRest reads the finished container's whole log and passes on what the follow did not. */
  private async readRest(): Promise<void> {
    try {
      const text = await this.core.readNamespacedPodLog({
        name: this.podName!,
        namespace: this.namespace,
        container: runContainerName,
      });
      const rest = Buffer.from(text, 'utf8').subarray(this.bytesSeen);
      if (rest.length > 0) this.stdout.write(rest);
    } catch {
      // The pod is gone: what was followed is what there is.
    }
  }

  private async stop(signal: NodeJS.Signals): Promise<void> {
    try {
      // Jobs deleted through the API orphan their pods unless told otherwise.
      await this.batch.deleteNamespacedJob({
        name: this.name,
        namespace: this.namespace,
        propagationPolicy: 'Background',
      });
    } catch {
      // Already gone.
    }
    if (signal === 'SIGKILL' && this.podName) {
      try {
        await this.core.deleteNamespacedPod({ name: this.podName, namespace: this.namespace, gracePeriodSeconds: 0 });
      } catch {
        // Already gone.
      }
    }
  }

  private fail(message: string): void {
    this.closed = true;
    this.stdout.end();
    this.stderr.end();
    this.emit('error', new Error(message));
  }

  private finish(): void {
    if (this.closed) return;
    this.closed = true;
    this.exitCode = this.exit?.code ?? null;
    this.stdout.end();
    this.stderr.end();
    if (!this.stopping) void this.stop('SIGTERM');
    // Like a child process: `close` comes after the output streams have been read to their end.
    const drained = (stream: PassThrough) => (stream.readableFlowing ? once(stream, 'end') : Promise.resolve());
    void Promise.all([drained(this.stdout), drained(this.stderr)]).then(() => this.emit('close', this.exitCode, null));
  }
}

/** kubeConfigFromCluster loads the in-cluster service account, else KUBECONFIG or ~/.kube/config. */
export function kubeConfigFromCluster(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromDefault();
  return config;
}
