// runBackendFromConfig builds the configured run backend: none for `bubblewrap` (the worker's built-in
// default), a KubernetesBackend for `kubernetes`, whose settings come from the environment (declared, with their
// kinds and defaults, in ../env-settings.ts):
//   SVC_K8S_RUN_IMAGE (required)      the container image of runs (with the agents' tools)
//   SVC_K8S_NAMESPACE                 default: this pod's namespace in a cluster, else `default`
//   SVC_K8S_WORKSPACE_CLAIM           a ReadWriteMany PVC holding the workspaces under SVC_WORKSPACE_ROOT
//                                     (without it: hostPath volumes, for a single-node development cluster)
//   SVC_K8S_RUN_CPU                   CPU limit per run in cores (default 1)
//   SVC_K8S_RUN_UID / SVC_K8S_RUN_GID the unprivileged uid/gid of runs (default 65534; never 0)
//   SVC_K8S_RUN_TMP_BYTES             size limit of a run's /tmp (default runTmpBytesMaxKubernetes)
//   SVC_K8S_SERVICE_ACCOUNT           the run pods' service account (its token is never mounted)
// The Kubernetes API is reached with the in-cluster service account, else KUBECONFIG or ~/.kube/config.
import { existsSync, readFileSync } from 'node:fs';
import type { ApiConfig } from '../config.js';
import { runJobTtlSeconds } from '../limits.js';
import { envSetting } from '../env-settings.js';
import type { RunBackend } from './run-backend.js';
import type { KubernetesRunSettings } from './kubernetes-job-spec.js';

const serviceAccountNamespaceFile = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export function kubernetesSettingsFromEnv(env: NodeJS.ProcessEnv, workspaceRoot?: string): KubernetesRunSettings {
  const image = envSetting<string | undefined>(env, 'SVC_K8S_RUN_IMAGE');
  if (!image) throw new Error('SVC_RUN_BACKEND=kubernetes needs SVC_K8S_RUN_IMAGE, the container image of runs');
  const namespace =
    envSetting<string | undefined>(env, 'SVC_K8S_NAMESPACE') ??
    (existsSync(serviceAccountNamespaceFile) ? readFileSync(serviceAccountNamespaceFile, 'utf8').trim() : 'default');
  return {
    namespace,
    image,
    cpuCores: envSetting<string>(env, 'SVC_K8S_RUN_CPU'),
    workspaceClaim: envSetting<string | undefined>(env, 'SVC_K8S_WORKSPACE_CLAIM'),
    workspaceRoot,
    runAsUser: envSetting<number>(env, 'SVC_K8S_RUN_UID'),
    runAsGroup: envSetting<number>(env, 'SVC_K8S_RUN_GID'),
    tmpBytesMax: envSetting<number>(env, 'SVC_K8S_RUN_TMP_BYTES'),
    jobTtlSeconds: runJobTtlSeconds,
    serviceAccountName: envSetting<string | undefined>(env, 'SVC_K8S_SERVICE_ACCOUNT'),
  };
}

/**
 * runBackendFromConfig builds the configured backend. The Kubernetes client is loaded only for the `kubernetes`
 * backend: it is the largest module of the API (a third of a node's module load, bench/restart.ts), which a
 * node starting with the default backend would load for nothing on its start path.
 */
export async function runBackendFromConfig(
  config: Pick<ApiConfig, 'runBackend' | 'workspaceRoot'>,
  env: NodeJS.ProcessEnv,
): Promise<RunBackend | undefined> {
  if (config.runBackend === 'bubblewrap') return undefined;
  const settings = kubernetesSettingsFromEnv(env, config.workspaceRoot);
  const { KubernetesBackend, kubeConfigFromCluster } = await import('./kubernetes-backend.js');
  return new KubernetesBackend(kubeConfigFromCluster(), settings);
}
