// The Kubernetes backend's leftover sweep: what a worker that died mid-run leaves in the namespace. A run's Secret
// (credential values) is made before its Job and given the Job as owner only once the Job exists, so a worker
// that dies between the two leaves a Secret nothing else will ever delete; a Job whose run already ended (its
// worker died, another path marked the run) may still be running a pod. The sweep lists the run Secrets and run
// Jobs by label (runObjectSelector, paged with limit/continue) and deletes:
// - a Secret or Job whose run is final in the replicated store, or missing from it (records are made before a
//   run is queued and removed only past their retention, so a missing record is a run long over);
// - a Secret without an ownerReference made more than runKubernetesOrphanGraceMs ago, whatever its run's status.
//   A live worker gives its run's Secret an owner, or gives up the run and deletes it, within
//   runKubernetesSecretOwnDeadlineMs of sending it (kubernetes-backend.ts), so an unowned Secret that old was left
//   by a worker that died before the owner patch; a run still `running` on a live worker never has one. The age
//   is the API server's creationTimestamp against this process's clock: the grace is many times the deadline, so
//   clock skew of minutes would still not reach a live run's Secret.
// Everything else stays: an owned Secret of a queued or running run goes with its Job (the Job's deadline and TTL
// end it without a worker), and a Job of a running run is its worker's to stop. Each delete carries the uid and
// resourceVersion the decision was made on as preconditions, so an object that changed meanwhile (the owner patch
// landing) is not deleted but judged again by the next sweep. A Job goes with propagationPolicy Background, so
// its pods go too. The lists ask for metadata only, so no Secret's values reach the sweep; only names are
// reported.
import { ApiException, Observable } from '@kubernetes/client-node';
import type { BatchV1Api, ConfigurationOptions, CoreV1Api, V1ObjectMeta } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import {
  runKubernetesOrphanGraceMs,
  runKubernetesSecretOwnDeadlineMs,
  runKubernetesSweepPageItemsMax,
} from '../limits.js';
import { jobName, runLabels, runObjectSelector, secretName } from './kubernetes-job-spec.js';
import type { LeftoverReason, LeftoverSweepOptions, LeftoverSweepOutcome, RunStatusLookup } from './run-backend.js';
import type { RunStatus } from './run-records.js';
import { finalRunStatuses, runIdPattern } from './run-records.js';

export type {
  LeftoverDeletion,
  LeftoverReason,
  LeftoverSweepOptions,
  LeftoverSweepOutcome,
  RunStatusLookup,
} from './run-backend.js';

/**
 * metadataOnly asks the API server for the objects' metadata alone (PartialObjectMetadataList, served by every
 * API server since 1.15), so the sweep's list of Secrets never carries their values to this process. A server
 * that cannot answers in full (the fallback type), which the sweep reads the same way.
 */
const metadataOnly: ConfigurationOptions = {
  middleware: [
    {
      pre: (context) => {
        context.setHeaderParam(
          'Accept',
          'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json',
        );
        return new Observable(Promise.resolve(context));
      },
      post: (context) => new Observable(Promise.resolve(context)),
    },
  ],
  middlewareMergeStrategy: 'append',
};

/** listPagesMax bounds the pages of one list, should a server keep answering with a continue token. */
const listPagesMax = 10_000;

interface Listed {
  metadata?: V1ObjectMeta;
}

/**
 * listAll pages through a list call (limit, continue). A continue token the server no longer serves (410
 * Expired) comes back with one that continues from the latest state: the sweep takes it, since each delete is
 * checked against the object's uid and resourceVersion anyway.
 */
async function* listAll<T extends Listed>(
  list: (page: { limit: number; _continue?: string }) => Promise<{ items: T[]; metadata?: { _continue?: string } }>,
  limit: number,
): AsyncGenerator<T> {
  let token: string | undefined;
  for (let page = 0; page < listPagesMax; page++) {
    let result: { items: T[]; metadata?: { _continue?: string } };
    try {
      result = await list({ limit, ...(token ? { _continue: token } : {}) });
    } catch (error) {
      const next = token !== undefined ? expiredContinue(error) : undefined;
      if (next === undefined) throw error;
      if (next === '') return;
      token = next;
      continue;
    }
    yield* result.items;
    token = result.metadata?._continue || undefined;
    if (token === undefined) return;
  }
  throw new Error(`a list went on for more than ${listPagesMax} pages`);
}

/** expiredContinue reads the fresh continue token of a 410 Expired answer ('' when nothing is left), if it is one. */
function expiredContinue(error: unknown): string | undefined {
  if (!(error instanceof ApiException) || error.code !== 410) return undefined;
  try {
    const body = (typeof error.body === 'string' ? JSON.parse(error.body) : error.body) as {
      metadata?: { continue?: unknown };
    };
    return typeof body?.metadata?.continue === 'string' ? body.metadata.continue : undefined;
  } catch {
    return undefined;
  }
}

/** runIdOf is the run an object was made for: its run-id label, when that is a run id and the name fits it. */
function runIdOf(metadata: V1ObjectMeta | undefined, nameOf: (runId: string) => string): string | null {
  const runId = metadata?.labels?.[runLabels.runId];
  if (typeof runId !== 'string' || !runIdPattern.test(runId)) return null;
  // Only what the backend would have named for that run: a stranger carrying the labels is not the sweep's.
  return metadata?.name === nameOf(runId) ? runId : null;
}

/** deleted says how a delete went: done, already gone, or refused by its preconditions (the object changed). */
async function deleted(remove: () => Promise<unknown>): Promise<'deleted' | 'gone' | 'conflict'> {
  try {
    await remove();
    return 'deleted';
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return 'gone';
    if (error instanceof ApiException && error.code === 409) return 'conflict';
    throw error;
  }
}

export async function sweepKubernetesLeftovers(
  clients: { core: CoreV1Api; batch: BatchV1Api },
  namespace: string,
  statusOf: RunStatusLookup,
  nowMs: number,
  options: LeftoverSweepOptions = {},
): Promise<LeftoverSweepOutcome> {
  const graceMs = options.graceMs ?? runKubernetesOrphanGraceMs;
  // The rule above holds only while a live worker owns (or drops) its Secret well within the grace.
  assert.ok(graceMs > runKubernetesSecretOwnDeadlineMs, 'the orphan grace must exceed the owner deadline');
  const limit = options.pageItemsMax ?? runKubernetesSweepPageItemsMax;
  const outcome: LeftoverSweepOutcome = {
    secretsExamined: 0,
    secretsDeleted: 0,
    jobsExamined: 0,
    jobsDeleted: 0,
    conflicts: 0,
  };
  const statuses = new Map<string, RunStatus | null>();
  const status = async (runId: string) => {
    if (!statuses.has(runId)) statuses.set(runId, await statusOf(runId));
    return statuses.get(runId)!;
  };
  const judged = (runStatus: RunStatus | null): LeftoverReason | null =>
    runStatus === null ? 'run-missing' : finalRunStatuses.includes(runStatus) ? 'run-final' : null;

  const secrets = listAll(
    (page) => clients.core.listNamespacedSecret({ namespace, labelSelector: runObjectSelector, ...page }, metadataOnly),
    limit,
  );
  for await (const secret of secrets) {
    outcome.secretsExamined++;
    const runId = runIdOf(secret.metadata, secretName);
    if (runId === null) continue;
    let reason = judged(await status(runId));
    if (reason === null && (secret.metadata?.ownerReferences ?? []).length === 0) {
      const createdMs = secret.metadata?.creationTimestamp?.getTime() ?? Number.NaN;
      if (Number.isFinite(createdMs) && createdMs + graceMs <= nowMs) reason = 'unowned-past-grace';
    }
    if (reason === null) continue;
    const name = secret.metadata!.name!;
    const result = await deleted(() =>
      clients.core.deleteNamespacedSecret({
        name,
        namespace,
        body: {
          preconditions: { uid: secret.metadata?.uid, resourceVersion: secret.metadata?.resourceVersion },
        },
      }),
    );
    if (result === 'conflict') outcome.conflicts++;
    if (result !== 'deleted') continue;
    outcome.secretsDeleted++;
    options.onDeleted?.({ kind: 'Secret', name, runId, reason });
  }

  const jobs = listAll(
    (page) => clients.batch.listNamespacedJob({ namespace, labelSelector: runObjectSelector, ...page }, metadataOnly),
    limit,
  );
  for await (const job of jobs) {
    outcome.jobsExamined++;
    const runId = runIdOf(job.metadata, jobName);
    if (runId === null) continue;
    const reason = judged(await status(runId));
    if (reason === null) continue;
    const name = job.metadata!.name!;
    const result = await deleted(() =>
      clients.batch.deleteNamespacedJob({
        name,
        namespace,
        // Jobs deleted through the API orphan their pods unless told otherwise.
        propagationPolicy: 'Background',
        body: { propagationPolicy: 'Background', preconditions: { uid: job.metadata?.uid } },
      }),
    );
    if (result === 'conflict') outcome.conflicts++;
    if (result !== 'deleted') continue;
    outcome.jobsDeleted++;
    options.onDeleted?.({ kind: 'Job', name, runId, reason });
  }
  return outcome;
}
