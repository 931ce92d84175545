// The Kubernetes objects of a run: one batch/v1 Job per run (one pod, no retries) with the run's limits in
// its spec, the run's credentials in one v1 Secret that the pod only references, and the two NetworkPolicies
// every run pod falls under. Pure functions of the run and the settings, so the spec can be read and tested
// without a cluster.
import path from 'node:path';
import type {
  V1EnvVar,
  V1Job,
  V1NetworkPolicy,
  V1OwnerReference,
  V1Secret,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { runKillGraceMs } from '../limits.js';
import type { RunCredential, RunSpec } from './run-backend.js';
import { secretsDir } from './sandbox.js';

export interface KubernetesRunSettings {
  namespace: string;
  /** image is the container image runs use: it holds the agents' tools (the host's /usr is not there). */
  image: string;
  /**
   * workspaceClaim is a PersistentVolumeClaim (ReadWriteMany) holding every workspace under workspaceRoot; a
   * run mounts its workspace from it by subPath. Without one, the workspace is a hostPath volume (a single node,
   * e.g. a development cluster; the `restricted` Pod Security Standard forbids hostPath).
   */
  workspaceClaim?: string;
  workspaceRoot?: string;
  /** cpuCores is the CPU limit (and request) of a run, in cores ("1", "500m"). */
  cpuCores: string;
  /** runAsUser and runAsGroup: the unprivileged uid/gid a run has (never 0). */
  runAsUser: number;
  runAsGroup: number;
  /** tmpBytesMax bounds the run's /tmp (a memory-backed emptyDir would count against memory; this is disk). */
  tmpBytesMax: number;
  /** jobTtlSeconds: Kubernetes deletes a finished Job after this, if the worker did not. */
  jobTtlSeconds: number;
  serviceAccountName?: string;
  /** secretOwnDeadlineMs: default runKubernetesSecretOwnDeadlineMs (tests shorten it). */
  secretOwnDeadlineMs?: number;
}

export const runContainerName = 'agent';
export const runLabels = {
  app: 'app.kubernetes.io/name',
  managedBy: 'app.kubernetes.io/managed-by',
  runId: 'svc.dev/run-id',
  network: 'svc.dev/run-network',
} as const;
export const runAppName = 'svc-run';
/**
 * runObjectSelector is a label selector for the run Jobs and run Secrets the backend makes (their pods match it
 * too): the app and managed-by labels they all carry, and a run id. The leftover sweep lists by it.
 */
export const runObjectSelector = `${runLabels.app}=${runAppName},${runLabels.managedBy}=svc,${runLabels.runId}`;
export const denyAllPolicyName = 'svc-run-deny-all';
export const egressPolicyName = 'svc-run-egress';
export const credentialsVolumeName = 'credentials';
/**
 * secretFileMode: credential files are readable by every uid in the container. The kubelet writes a secret
 * volume's files as root; the run's uid (runAsUser, never 0) can read a 0400 file only through a pod fsGroup,
 * and a pod fsGroup makes the kubelet chown every volume of the pod recursively, the shared workspace claim
 * included. The container holds the run's uid alone, so "others" are nobody else; the volume is mounted
 * read-only.
 */
export const secretFileMode = 0o444;
/** deadlineSlackSeconds: the Job's own deadline comes after the worker's, which kills first and says why. */
const deadlineSlackSeconds = 30;

/** jobName is a DNS-1123 label (run ids hold an underscore): Kubernetes puts it in a label, so at most 63. */
export function jobName(runId: string): string {
  const name = `svc-run-${runId.toLowerCase().replace(/[^a-z0-9-]/g, '-')}`.slice(0, 63).replace(/-+$/, '');
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name))
    throw new Error(`cannot name a Job for run ${JSON.stringify(runId)}`);
  return name;
}

/**
 * escapeExpansion keeps Kubernetes from expanding `$(NAME)` in a command or argument: it reads `$$` as `$`, so
 * doubling every `$` passes the text through unchanged (a prompt is the user's text, never a template).
 */
export function escapeExpansion(text: string): string {
  return text.replace(/\$/g, '$$$$');
}

/** secretName names the Secret holding a run's credentials (a DNS-1123 subdomain, like the Job's name). */
export function secretName(runId: string): string {
  return `${jobName(runId)}-credentials`;
}

/**
 * credentialKey is a credential's key in the run's Secret: `env.NAME` or `file.name`, so an environment
 * variable and a file of the same target stay apart. Both target patterns (run-credentials.ts) are within the
 * Secret key pattern [-._a-zA-Z0-9]+.
 */
export function credentialKey(credential: Pick<RunCredential, 'as' | 'target'>): string {
  return `${credential.as}.${credential.target}`;
}

function runLabelsOf(spec: RunSpec): Record<string, string> {
  return { [runLabels.app]: runAppName, [runLabels.managedBy]: 'svc', [runLabels.runId]: spec.runId };
}

/**
 * runSecret is the Secret of a run's credentials, or null for a run without any: Opaque, immutable (nothing may
 * change what a started run was given), labelled with the run id like the Job. The backend gives it to the Job
 * (secretOwnerReference) once the Job exists.
 */
export function runSecret(spec: RunSpec, settings: KubernetesRunSettings): V1Secret | null {
  const credentials = spec.credentials ?? [];
  if (credentials.length === 0) return null;
  const data: Record<string, string> = {};
  for (const credential of credentials)
    data[credentialKey(credential)] = Buffer.from(credential.value).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secretName(spec.runId), namespace: settings.namespace, labels: runLabelsOf(spec) },
    type: 'Opaque',
    immutable: true,
    data,
  };
}

/**
 * secretOwnerReference makes the Job the owner of the run's Secret: Kubernetes' garbage collector deletes the
 * Secret with the Job. Not blockOwnerDeletion (that needs update on jobs/finalizers) and not controller.
 */
export function secretOwnerReference(job: { name: string; uid: string }): V1OwnerReference {
  return { apiVersion: 'batch/v1', kind: 'Job', name: job.name, uid: job.uid };
}

/**
 * credentialReferences is what the pod spec holds of the credentials: env entries that name a key of the run's
 * Secret, and a secret volume of the file credentials at /run/secrets (where the local sandbox puts them).
 * Names only: the values are in the Secret.
 */
function credentialReferences(spec: RunSpec): { env: V1EnvVar[]; volumes: V1Volume[]; mounts: V1VolumeMount[] } {
  const credentials = spec.credentials ?? [];
  const name = secretName(spec.runId);
  const env = credentials
    .filter((credential) => credential.as === 'env')
    .map((credential) => ({
      name: credential.target,
      valueFrom: { secretKeyRef: { name, key: credentialKey(credential), optional: false } },
    }));
  const files = credentials.filter((credential) => credential.as === 'file');
  if (files.length === 0) return { env, volumes: [], mounts: [] };
  return {
    env,
    volumes: [
      {
        name: credentialsVolumeName,
        secret: {
          secretName: name,
          optional: false,
          defaultMode: secretFileMode,
          items: files.map((credential) => ({ key: credentialKey(credential), path: credential.target })),
        },
      },
    ],
    mounts: [{ name: credentialsVolumeName, mountPath: secretsDir, readOnly: true }],
  };
}

function workspaceVolume(spec: RunSpec, settings: KubernetesRunSettings): { volume: V1Volume; mount: V1VolumeMount } {
  const workspace = spec.project.workspace;
  const mount: V1VolumeMount = { name: 'workspace', mountPath: workspace };
  if (!settings.workspaceClaim) {
    return { volume: { name: 'workspace', hostPath: { path: workspace, type: 'Directory' } }, mount };
  }
  const root = settings.workspaceRoot ?? '/';
  const subPath = path.relative(root, workspace);
  if (subPath.startsWith('..') || path.isAbsolute(subPath)) {
    throw new Error(`the workspace ${workspace} is not under the workspace root ${root}`);
  }
  if (subPath !== '') mount.subPath = subPath;
  return { volume: { name: 'workspace', persistentVolumeClaim: { claimName: settings.workspaceClaim } }, mount };
}

/** runJob is the Job of one run: its command, its workspace, its limits, and references to its credentials. */
export function runJob(spec: RunSpec, settings: KubernetesRunSettings): V1Job {
  const name = jobName(spec.runId);
  const network = spec.project.network ? 'egress' : 'none';
  const labels = { ...runLabelsOf(spec), [runLabels.network]: network };
  const { volume, mount } = workspaceVolume(spec, settings);
  const credentials = credentialReferences(spec);
  const memory = String(spec.limits.memoryBytesMax);
  const storage = String(spec.limits.fileBytesMax + settings.tmpBytesMax);
  const [command, ...args] = spec.project.command.map(escapeExpansion);
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: settings.namespace, labels },
    spec: {
      // One attempt: a run is not retried behind the user's back.
      backoffLimit: 0,
      completions: 1,
      parallelism: 1,
      // A backstop for the wall-time limit should the worker die: the Job ends its pod itself.
      activeDeadlineSeconds: Math.ceil(spec.timeoutMs / 1000) + Math.ceil(runKillGraceMs / 1000) + deadlineSlackSeconds,
      ttlSecondsAfterFinished: settings.jobTtlSeconds,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          // The run gets no credentials for the Kubernetes API and no service addresses in its environment.
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          hostNetwork: false,
          hostPID: false,
          hostIPC: false,
          ...(settings.serviceAccountName ? { serviceAccountName: settings.serviceAccountName } : {}),
          terminationGracePeriodSeconds: Math.ceil(runKillGraceMs / 1000),
          securityContext: {
            runAsNonRoot: true,
            runAsUser: settings.runAsUser,
            runAsGroup: settings.runAsGroup,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: runContainerName,
              image: settings.image,
              command: [command!],
              args: [...args, escapeExpansion(spec.prompt)],
              workingDir: spec.project.workspace,
              env: [
                { name: 'PATH', value: '/usr/local/bin:/usr/bin:/bin' },
                { name: 'HOME', value: '/tmp' },
                { name: 'LANG', value: 'C.UTF-8' },
                ...credentials.env,
              ],
              resources: {
                limits: { memory, cpu: settings.cpuCores, 'ephemeral-storage': storage },
                requests: { memory, cpu: settings.cpuCores, 'ephemeral-storage': storage },
              },
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                privileged: false,
                runAsNonRoot: true,
                capabilities: { drop: ['ALL'] },
              },
              volumeMounts: [mount, { name: 'tmp', mountPath: '/tmp' }, ...credentials.mounts],
            },
          ],
          volumes: [
            volume,
            { name: 'tmp', emptyDir: { sizeLimit: String(settings.tmpBytesMax) } },
            ...credentials.volumes,
          ],
        },
      },
    },
  };
}

/**
 * runNetworkPolicies: every run pod is denied all traffic; a pod of a project that allows the network may
 * also reach public addresses (not private, link-local, loopback or shared ranges: no cluster, node or cloud
 * metadata addresses) and the cluster's DNS. Policies add up, so the second opens only what it names. They
 * take effect only where the cluster's network plugin enforces NetworkPolicy.
 */
export function runNetworkPolicies(namespace: string): V1NetworkPolicy[] {
  const selector = { matchLabels: { [runLabels.app]: runAppName } };
  return [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: denyAllPolicyName, namespace, labels: { [runLabels.managedBy]: 'svc' } },
      spec: { podSelector: selector, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] },
    },
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: egressPolicyName, namespace, labels: { [runLabels.managedBy]: 'svc' } },
      spec: {
        podSelector: { matchLabels: { [runLabels.app]: runAppName, [runLabels.network]: 'egress' } },
        policyTypes: ['Egress'],
        egress: [
          {
            to: [
              {
                ipBlock: {
                  cidr: '0.0.0.0/0',
                  except: [
                    '10.0.0.0/8',
                    '172.16.0.0/12',
                    '192.168.0.0/16',
                    '169.254.0.0/16',
                    '100.64.0.0/10',
                    '127.0.0.0/8',
                  ],
                },
              },
              { ipBlock: { cidr: '::/0', except: ['fc00::/7', 'fe80::/10', '::1/128'] } },
            ],
          },
          {
            to: [
              {
                namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
                podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
              },
            ],
            ports: [
              { protocol: 'UDP', port: 53 },
              { protocol: 'TCP', port: 53 },
            ],
          },
        ],
      },
    },
  ];
}
