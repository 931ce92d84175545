// renderManifests: every Kubernetes object of a production deployment, as plain objects, from a handful of
// options (a pure function: no clock, no randomness, no files). Secret *values* are never here: secrets.ts
// writes the Secrets from the `svc certs` directory; these objects only reference them by name and key.
//
// Why the shape it has (docs/operations.md, "On Kubernetes"):
// - a StatefulSet gives each node a stable name (<set>-N, the node's member name) and DNS name under the
//   headless peers Service, and its own data volume;
// - podManagementPolicy Parallel: the founders elect a leader only when a majority of them runs, and a pod is
//   Ready (/ready) only once a leader is known, so OrderedReady would wait for <set>-0's readiness forever;
// - every pod gets the same flags: the founders' list and seeds. A founder finds itself in the list; a pod added
//   by scaling up is not in it and joins through the seeds (cli/node/config.ts);
// - secrets reach the pod as files (certificates, the API's key) or as a secretKeyRef (REDIS_URL), never as flag
//   values, which `ps` and the pod spec would show.
import type {
  V1ConfigMap,
  V1CronJob,
  V1Container,
  V1EnvVar,
  V1NetworkPolicy,
  V1PodDisruptionBudget,
  V1Role,
  V1RoleBinding,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { runNetworkPolicies } from '../../api/runs/kubernetes-job-spec.js';
import { NODE_STOP_TIMEOUT_MS } from '../limits.js';
import { BACKUP_KEEP_MAX } from '../backup/limits.js';
import { backupCronJob } from './backup-cronjob.js';
import {
  REDIS_SENTINEL_REPLICAS_DEFAULT,
  REDIS_SENTINEL_REPLICAS_MAX,
  REDIS_SENTINEL_REPLICAS_MIN,
  redisConfigVolumes,
  SENTINEL_PORT,
  sentinelRedis,
} from './redis-sentinel.js';
import { DEFAULT_NODE_LIMITS } from '../../transports/node/limits.js';
import {
  apiDnsNames,
  CLIENT_SERVICE_PORT,
  deploymentNames,
  GRPC_PORT,
  HTTP_PORT,
  METRICS_PORT,
  MOUNTS,
  nodeCertFile,
  nodeKeyFile,
  podHost,
  podName,
  REDIS_CONFIG_KEY,
  REDIS_PORT,
  SECRET_KEYS,
  type DeploymentNames,
} from './layout.js';

export interface ManifestOptions {
  namespace: string;
  /** clusterId is the id every certificate of the cluster names (`svc certs cluster-id`). */
  clusterId: string;
  /** replicas is how many nodes run. */
  replicas: number;
  /**
   * founders is how many of the first pods found the cluster. It must never change once the cluster exists: a
   * fresh pod in a longer founders' list would found with its peers a roster the cluster never had. Hence no
   * default: it is said on every render.
   */
  founders: number;
  /** image is the node image (deploy/Containerfile). */
  image: string;
  /** name names the StatefulSet (default svc) and prefixes every other object. */
  name?: string;
  clusterDomain?: string;
  /** storageClass of the data volumes (default: the cluster's default class). */
  storageClass?: string;
  dataVolumeSize?: string;
  redisImage?: string;
  redisVolumeSize?: string;
  /** redisMemoryBytes is Redis' maxmemory; its container's memory limit leaves room above it. */
  redisMemoryBytes?: number;
  /** runImage turns on agent runs as Kubernetes Jobs (SVC_RUN_BACKEND=kubernetes); without it, runs are off. */
  runImage?: string;
  /** workspaceClaim is the ReadWriteMany claim holding the workspaces (SVC_K8S_WORKSPACE_CLAIM). */
  workspaceClaim?: string;
  workspaceRoot?: string;
  logLevel?: string;
  /** backupSchedule turns on the backup CronJob (backup-cronjob.ts), on this cron schedule; backupClaim is required with it. */
  backupSchedule?: string;
  /** backupClaim is the PersistentVolumeClaim the backups go into. */
  backupClaim?: string;
  /** backupKeep is how many backups the CronJob keeps in the claim (default BACKUP_KEEP_DEFAULT). */
  backupKeep?: number;
  /**
   * apiTls says where the HTTP API's certificate (the Secret <name>-api-tls) comes from: 'secret' (default: `svc
   * manifests secrets`, from `svc certs api`) or 'cert-manager' (a cert-manager Certificate is rendered, signed by
   * certManagerIssuer).
   */
  apiTls?: 'secret' | 'cert-manager';
  /** certManagerIssuer is `Issuer/NAME` or `ClusterIssuer/NAME` (a bare NAME is an Issuer in the namespace). */
  certManagerIssuer?: string;
  /** metricsNamespace is the namespace whose pods may scrape the metrics port (default monitoring). */
  metricsNamespace?: string;
  /**
   * redis is the API's Redis: 'single' (default: one pod), 'sentinel' (redisReplicas pods, each a server and a
   * Sentinel: redis-sentinel.ts) or 'external' (none rendered: `svc manifests secrets --redis-url` names yours).
   */
  redis?: RedisMode;
  /** redisReplicas is the Sentinel set's pod count (REDIS_SENTINEL_REPLICAS_DEFAULT); only with redis sentinel. */
  redisReplicas?: number;
}

export type RedisMode = 'single' | 'sentinel' | 'external';
export const REDIS_MODES: readonly RedisMode[] = ['single', 'sentinel', 'external'];

export const METRICS_NAMESPACE_DEFAULT = 'monitoring';

/** Labels: the run pods the Kubernetes backend makes are app.kubernetes.io/name=svc-run, never these. */
export const APP_LABEL = 'app.kubernetes.io/name';
export const APP_NAME = 'svc';
export const COMPONENT_LABEL = 'app.kubernetes.io/component';
export const INSTANCE_LABEL = 'app.kubernetes.io/instance';

/** NODE_UID is the node container's uid and gid (no passwd entry needed; the image sets the same). */
export const NODE_UID = 10001;
/** REDIS_UID is the `redis` user of the official Redis image. */
export const REDIS_UID = 999;
/**
 * TERMINATION_GRACE_SECONDS covers `svc node`'s leadership handoff (handoffTimeoutMs), then its clean stop
 * (NODE_STOP_TIMEOUT_MS), with room to exit.
 */
export const TERMINATION_GRACE_SECONDS =
  Math.ceil((DEFAULT_NODE_LIMITS.handoffTimeoutMs + NODE_STOP_TIMEOUT_MS) / 1000) + 5;
/** READINESS_PATH is served 200 when the node is healthy and knows a leader; LIVENESS_PATH 200 whenever it runs. */
export const READINESS_PATH = '/ready';
export const LIVENESS_PATH = '/status';
export const DATA_VOLUME_SIZE_DEFAULT = '20Gi';
export const REDIS_VOLUME_SIZE_DEFAULT = '5Gi';
export const REDIS_IMAGE_DEFAULT = 'docker.io/library/redis:7.2-bookworm';
export const REDIS_MEMORY_BYTES_DEFAULT = 512 * 1024 * 1024;
export const WORKSPACE_ROOT_DEFAULT = '/srv/workspaces';
/** TMP_SIZE_LIMIT bounds the node's /tmp (the root file system is read-only; the temp dir is the only scratch space). */
export const TMP_SIZE_LIMIT = '256Mi';
/** NODE_* are the node container's resources: the engine and store are memory-resident. */
export const NODE_RESOURCES = {
  requests: { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '256Mi' },
  limits: { cpu: '2', memory: '2Gi', 'ephemeral-storage': '1Gi' },
};

/** OWN_PAIR_RESOURCES are the init container's: it copies three small files. */
export const OWN_PAIR_RESOURCES = {
  requests: { cpu: '50m', memory: '64Mi' },
  limits: { cpu: '200m', memory: '128Mi' },
};

/**
 * OWN_PAIR_SCRIPT is what the init container runs (`node -e OWN_PAIR_SCRIPT <pod> <from> <to>`): it copies the
 * CA certificate and the pod's own certificate and key out of the TLS Secret (every pod's pair: a StatefulSet has
 * one pod template) into the memory volume the node container mounts. The node container never mounts the
 * Secret, so a compromised node process holds its own key only and cannot speak as another member. A pod with
 * no pair in the Secret fails here, naming what to do, before the node starts.
 */
export const OWN_PAIR_SCRIPT = [
  "const fs = require('node:fs'); const path = require('node:path');",
  'const [pod, from, to] = process.argv.slice(1);',
  "if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(pod || '')) { console.error('not a pod name: ' + pod); process.exit(2); }",
  `for (const file of ['${SECRET_KEYS.caCert}', pod + '.crt', pod + '.key']) {`,
  '  const source = path.join(from, file);',
  "  if (!fs.existsSync(source)) { console.error('the TLS Secret holds no ' + file + ': issue the pod a certificate (svc certs node) and re-run svc manifests secrets with enough --replicas'); process.exit(1); }",
  '  fs.copyFileSync(source, path.join(to, file)); fs.chmodSync(path.join(to, file), 0o400);',
  '}',
].join('\n');

export type ManifestObject =
  | V1ServiceAccount
  | V1Role
  | V1RoleBinding
  | V1ConfigMap
  | V1Service
  | V1StatefulSet
  | V1PodDisruptionBudget
  | V1NetworkPolicy
  | V1CronJob
  | CertManagerCertificate;

export class ManifestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ManifestError';
  }
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const QUANTITY = /^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|[kMGTPE])?$/;
/** REPLICA_COUNT_MAX matches the certificates' pod-name bound and more than any sane cluster. */
export const REPLICA_COUNT_MAX = 99;

/** checkOptions names the first option that would render an object Kubernetes or the node refuses. */
export function checkOptions(options: ManifestOptions): void {
  for (const [what, value] of [
    ['namespace', options.namespace],
    ['cluster id', options.clusterId],
    ['name', options.name ?? 'svc'],
  ] as const) {
    if (!DNS_LABEL.test(value)) throw new ManifestError(`${what} ${JSON.stringify(value)} must be a DNS label`);
  }
  // The pod name <name>-NN must stay a label, and the peers Service <name>-peers too.
  if ((options.name ?? 'svc').length > 50) throw new ManifestError('name must be at most 50 characters');
  const founders = options.founders;
  if (!Number.isSafeInteger(options.replicas) || options.replicas < 1 || options.replicas > REPLICA_COUNT_MAX)
    throw new ManifestError(`replicas must be 1..${REPLICA_COUNT_MAX}, got ${options.replicas}`);
  if (!Number.isSafeInteger(founders) || founders < 1 || founders > options.replicas)
    throw new ManifestError(`founders must be 1..replicas (${options.replicas}), got ${founders}`);
  if (options.image.trim() === '' || /\s/.test(options.image))
    throw new ManifestError(`image ${JSON.stringify(options.image)} is not an image reference`);
  if (options.runImage !== undefined && (options.runImage.trim() === '' || /\s/.test(options.runImage)))
    throw new ManifestError(`run image ${JSON.stringify(options.runImage)} is not an image reference`);
  for (const [what, value] of [
    ['data volume size', options.dataVolumeSize],
    ['redis volume size', options.redisVolumeSize],
  ] as const) {
    if (value !== undefined && !QUANTITY.test(value))
      throw new ManifestError(`${what} ${JSON.stringify(value)} is not a quantity such as 20Gi`);
  }
  const memory = options.redisMemoryBytes ?? REDIS_MEMORY_BYTES_DEFAULT;
  if (!Number.isSafeInteger(memory) || memory < 16 * 1024 * 1024)
    throw new ManifestError('redis memory must be at least 16 MiB');
  if (options.workspaceClaim !== undefined && !DNS_LABEL.test(options.workspaceClaim))
    throw new ManifestError(`workspace claim ${JSON.stringify(options.workspaceClaim)} must be a DNS label`);
  if (options.workspaceRoot !== undefined && !options.workspaceRoot.startsWith('/'))
    throw new ManifestError('workspace root must be an absolute path');
  const backup = options.backupSchedule !== undefined;
  if (!backup && (options.backupClaim ?? options.backupKeep) !== undefined)
    throw new ManifestError('the backup claim and keep count need a backup schedule');
  if (backup && options.backupClaim === undefined) throw new ManifestError('a backup schedule needs a backup claim');
  if (options.backupClaim !== undefined && !DNS_LABEL.test(options.backupClaim))
    throw new ManifestError(`backup claim ${JSON.stringify(options.backupClaim)} must be a DNS label`);
  // Five fields of cron syntax (or a macro such as @daily); the API server checks the rest.
  if (backup && !/^(@[a-z]+|\S+( \S+){4})$/.test(options.backupSchedule!))
    throw new ManifestError(`backup schedule ${JSON.stringify(options.backupSchedule)} is not a cron schedule`);
  if (
    options.backupKeep !== undefined &&
    (!Number.isSafeInteger(options.backupKeep) || options.backupKeep < 1 || options.backupKeep > BACKUP_KEEP_MAX)
  )
    throw new ManifestError(`backup keep must be 1..${BACKUP_KEEP_MAX}`);
  if (options.apiTls !== undefined && options.apiTls !== 'secret' && options.apiTls !== 'cert-manager')
    throw new ManifestError(`api TLS ${JSON.stringify(options.apiTls)} must be secret or cert-manager`);
  if (options.apiTls === 'cert-manager') certManagerIssuer(options);
  else if (options.certManagerIssuer !== undefined)
    throw new ManifestError('a cert-manager issuer needs api TLS cert-manager');
  if (options.metricsNamespace !== undefined && !DNS_LABEL.test(options.metricsNamespace))
    throw new ManifestError(`metrics namespace ${JSON.stringify(options.metricsNamespace)} must be a DNS label`);
  checkRedisOptions(options);
}

function checkRedisOptions(options: ManifestOptions): void {
  const mode = options.redis ?? 'single';
  if (!REDIS_MODES.includes(mode))
    throw new ManifestError(`redis ${JSON.stringify(mode)} must be one of ${REDIS_MODES.join(', ')}`);
  const replicas = options.redisReplicas;
  if (replicas !== undefined && mode !== 'sentinel') throw new ManifestError('redis replicas need redis sentinel');
  if (
    replicas !== undefined &&
    (!Number.isSafeInteger(replicas) ||
      replicas < REDIS_SENTINEL_REPLICAS_MIN ||
      replicas > REDIS_SENTINEL_REPLICAS_MAX)
  )
    throw new ManifestError(`redis replicas must be ${REDIS_SENTINEL_REPLICAS_MIN}..${REDIS_SENTINEL_REPLICAS_MAX}`);
  const single = ['redisImage', 'redisVolumeSize', 'redisMemoryBytes'] as const;
  if (mode === 'external' && single.some((field) => options[field] !== undefined))
    throw new ManifestError('redis external renders no Redis: its image, size and memory do not apply');
}

/** certManagerIssuer reads `[Issuer/|ClusterIssuer/]NAME`. */
function certManagerIssuer(options: ManifestOptions): { kind: string; name: string } {
  const match = /^(?:(Issuer|ClusterIssuer)\/)?([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/.exec(
    options.certManagerIssuer ?? '',
  );
  if (!match)
    throw new ManifestError(
      `api TLS cert-manager needs a cert-manager issuer: Issuer/NAME or ClusterIssuer/NAME, got ${JSON.stringify(options.certManagerIssuer ?? '')}`,
    );
  return { kind: match[1] ?? 'Issuer', name: match[2]! };
}

function labels(names: DeploymentNames, component: 'node' | 'redis' | 'backup'): Record<string, string> {
  return { [APP_LABEL]: APP_NAME, [INSTANCE_LABEL]: names.statefulSet, [COMPONENT_LABEL]: component };
}

const metadata = (names: DeploymentNames, name: string, component: 'node' | 'redis') => ({
  name,
  namespace: names.namespace,
  labels: labels(names, component),
});

/** nodeArgs is the container's argument list: `svc node` and its flags, with Kubernetes' $(POD_NAME) expansion. */
export function nodeArgs(options: ManifestOptions, names: DeploymentNames): string[] {
  const founders = options.founders;
  const self = '$(POD_NAME)';
  const founderPods = Array.from({ length: founders }, (_, ordinal) => podName(names, ordinal));
  return [
    'node',
    '--name',
    self,
    '--data-dir',
    MOUNTS.data,
    '--grpc-listen',
    `0.0.0.0:${GRPC_PORT}`,
    '--grpc-advertise',
    `${podHost(names, self)}:${GRPC_PORT}`,
    '--http-listen',
    `0.0.0.0:${HTTP_PORT}`,
    '--http-advertise',
    `https://${podHost(names, self)}:${HTTP_PORT}`,
    // HTTPS with the API certificate (the API TLS Secret); peers' status polls check it against the cluster CA.
    '--http-tls-cert',
    `${MOUNTS.apiTls}/${SECRET_KEYS.tlsCert}`,
    '--http-tls-key',
    `${MOUNTS.apiTls}/${SECRET_KEYS.tlsKey}`,
    '--metrics-listen',
    `0.0.0.0:${METRICS_PORT}`,
    ...founderPods.flatMap((pod) => [
      '--founder',
      `${pod},${podHost(names, pod)}:${GRPC_PORT},https://${podHost(names, pod)}:${HTTP_PORT}`,
    ]),
    // Pods beyond the founders join through them (any member redirects to the leader).
    ...founderPods.flatMap((pod) => ['--seed', `${podHost(names, pod)}:${GRPC_PORT}`]),
    '--cluster-id',
    options.clusterId,
    '--tls-ca',
    `${MOUNTS.tls}/${SECRET_KEYS.caCert}`,
    '--tls-cert',
    `${MOUNTS.tls}/${nodeCertFile(self)}`,
    '--tls-key',
    `${MOUNTS.tls}/${nodeKeyFile(self)}`,
    '--log-level',
    options.logLevel ?? 'info',
    '--api',
    // REDIS_URL comes from the Secret; a missing one must not start a Redis of this pod alone.
    '--api-no-local-redis',
    '--api-secret-key-file',
    `${MOUNTS.apiSecret}/${SECRET_KEYS.apiSecretKey}`,
  ];
}

function nodeEnv(options: ManifestOptions, names: DeploymentNames): V1EnvVar[] {
  const env: V1EnvVar[] = [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    {
      name: 'REDIS_URL',
      valueFrom: { secretKeyRef: { name: names.apiSecret, key: SECRET_KEYS.redisUrl, optional: false } },
    },
    { name: 'NODE_ENV', value: 'production' },
  ];
  if (options.runImage === undefined) {
    // No run image: agent runs stay queued for another worker rather than run in this locked-down pod.
    env.push({ name: 'SVC_RUN_WORKER', value: '0' });
    return env;
  }
  env.push(
    { name: 'SVC_RUN_BACKEND', value: 'kubernetes' },
    { name: 'SVC_K8S_RUN_IMAGE', value: options.runImage },
    { name: 'SVC_K8S_NAMESPACE', value: names.namespace },
    { name: 'SVC_WORKSPACE_ROOT', value: options.workspaceRoot ?? WORKSPACE_ROOT_DEFAULT },
  );
  if (options.workspaceClaim !== undefined)
    env.push({ name: 'SVC_K8S_WORKSPACE_CLAIM', value: options.workspaceClaim });
  return env;
}

/** lockedDown is a container's security context: a fresh object each (YAML would alias a shared one). */
const lockedDown = () => ({
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  privileged: false,
  capabilities: { drop: ['ALL'] },
});

/** ownPairContainer copies the pod's own TLS pair out of the Secret before the node starts (OWN_PAIR_SCRIPT). */
function ownPairContainer(options: ManifestOptions): V1Container {
  return {
    name: 'own-tls-pair',
    image: options.image,
    imagePullPolicy: 'IfNotPresent',
    command: ['node', '-e', OWN_PAIR_SCRIPT, '$(POD_NAME)', MOUNTS.tlsPairs, MOUNTS.tls],
    env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
    resources: OWN_PAIR_RESOURCES,
    securityContext: lockedDown(),
    volumeMounts: [
      { name: 'tls-pairs', mountPath: MOUNTS.tlsPairs, readOnly: true },
      { name: 'tls', mountPath: MOUNTS.tls },
    ],
  };
}

function nodeContainer(options: ManifestOptions, names: DeploymentNames): V1Container {
  const mounts: V1VolumeMount[] = [
    { name: 'data', mountPath: MOUNTS.data },
    { name: 'tls', mountPath: MOUNTS.tls, readOnly: true },
    { name: 'api-secret', mountPath: MOUNTS.apiSecret, readOnly: true },
    { name: 'api-tls', mountPath: MOUNTS.apiTls, readOnly: true },
    { name: 'tmp', mountPath: MOUNTS.tmp },
  ];
  if (options.runImage !== undefined && options.workspaceClaim !== undefined)
    mounts.push({ name: 'workspaces', mountPath: options.workspaceRoot ?? WORKSPACE_ROOT_DEFAULT });
  return {
    name: 'node',
    image: options.image,
    imagePullPolicy: 'IfNotPresent',
    args: nodeArgs(options, names),
    env: nodeEnv(options, names),
    ports: [
      { name: 'grpc', containerPort: GRPC_PORT, protocol: 'TCP' },
      { name: 'http', containerPort: HTTP_PORT, protocol: 'TCP' },
      { name: 'metrics', containerPort: METRICS_PORT, protocol: 'TCP' },
    ],
    // The probes speak HTTPS to the HTTP port (the kubelet does not check the certificate).
    // /ready: healthy and a leader known. A pod leaves the client Service during an election, and a rolling
    // update moves on only once the restarted node can serve again.
    readinessProbe: {
      httpGet: { path: READINESS_PATH, port: 'http', scheme: 'HTTPS' },
      periodSeconds: 5,
      timeoutSeconds: 3,
      failureThreshold: 2,
    },
    // /status answers 200 whenever the node runs, whatever its role: elections, catching up and a removed
    // member never fail it; a wedged event loop does.
    livenessProbe: {
      httpGet: { path: LIVENESS_PATH, port: 'http', scheme: 'HTTPS' },
      periodSeconds: 10,
      timeoutSeconds: 5,
      failureThreshold: 6,
    },
    // Recovery (WAL replay, snapshot verification) happens before /status answers: up to ten minutes.
    startupProbe: {
      httpGet: { path: LIVENESS_PATH, port: 'http', scheme: 'HTTPS' },
      periodSeconds: 5,
      timeoutSeconds: 3,
      failureThreshold: 120,
    },
    resources: NODE_RESOURCES,
    securityContext: lockedDown(),
    volumeMounts: mounts,
  };
}

function nodeVolumes(options: ManifestOptions, names: DeploymentNames): V1Volume[] {
  const volumes: V1Volume[] = [
    // Every node's pair is in the one Secret (a StatefulSet has one pod template): only the init container
    // mounts it, and copies the pod's own pair into `tls`, in memory, which the node container mounts.
    { name: 'tls-pairs', secret: { secretName: names.tlsSecret, defaultMode: 0o440 } },
    { name: 'tls', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
    {
      name: 'api-secret',
      secret: {
        secretName: names.apiSecret,
        defaultMode: 0o440,
        items: [{ key: SECRET_KEYS.apiSecretKey, path: SECRET_KEYS.apiSecretKey }],
      },
    },
    {
      name: 'api-tls',
      secret: {
        secretName: names.apiTlsSecret,
        defaultMode: 0o440,
        items: [
          { key: SECRET_KEYS.tlsCert, path: SECRET_KEYS.tlsCert },
          { key: SECRET_KEYS.tlsKey, path: SECRET_KEYS.tlsKey },
        ],
      },
    },
    { name: 'tmp', emptyDir: { sizeLimit: TMP_SIZE_LIMIT } },
  ];
  if (options.runImage !== undefined && options.workspaceClaim !== undefined)
    volumes.push({ name: 'workspaces', persistentVolumeClaim: { claimName: options.workspaceClaim } });
  return volumes;
}

function statefulSet(options: ManifestOptions, names: DeploymentNames): V1StatefulSet {
  const runs = options.runImage !== undefined;
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: metadata(names, names.statefulSet, 'node'),
    spec: {
      serviceName: names.peersService,
      replicas: options.replicas,
      podManagementPolicy: 'Parallel',
      // One pod at a time, the next only once the restarted one is Ready (/ready).
      updateStrategy: { type: 'RollingUpdate' },
      // A removed member's volume is deleted by hand after `svc members remove` (its name cannot rejoin).
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
      selector: { matchLabels: labels(names, 'node') },
      template: {
        metadata: { labels: labels(names, 'node') },
        spec: {
          serviceAccountName: names.serviceAccount,
          // The token is needed only to create run Jobs.
          automountServiceAccountToken: runs,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: NODE_UID,
            runAsGroup: NODE_UID,
            fsGroup: NODE_UID,
            fsGroupChangePolicy: 'OnRootMismatch',
            seccompProfile: { type: 'RuntimeDefault' },
          },
          // Voters on separate hosts: one host lost costs one vote.
          affinity: {
            podAntiAffinity: {
              preferredDuringSchedulingIgnoredDuringExecution: [
                {
                  weight: 100,
                  podAffinityTerm: {
                    topologyKey: 'kubernetes.io/hostname',
                    labelSelector: { matchLabels: labels(names, 'node') },
                  },
                },
              ],
            },
          },
          initContainers: [ownPairContainer(options)],
          containers: [nodeContainer(options, names)],
          volumes: nodeVolumes(options, names),
        },
      },
      volumeClaimTemplates: [
        {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: 'data', labels: labels(names, 'node') },
          spec: {
            accessModes: ['ReadWriteOnce'],
            ...(options.storageClass === undefined ? {} : { storageClassName: options.storageClass }),
            resources: { requests: { storage: options.dataVolumeSize ?? DATA_VOLUME_SIZE_DEFAULT } },
          },
        },
      ],
    },
  };
}

function services(names: DeploymentNames): V1Service[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: metadata(names, names.peersService, 'node'),
      spec: {
        // Headless: a DNS name per pod (<pod>.<peers>.<ns>.svc.<domain>), covered by the certificates' wildcard.
        clusterIP: 'None',
        // Peers must find each other before any is ready: readiness needs a leader, a leader needs peers.
        publishNotReadyAddresses: true,
        selector: labels(names, 'node'),
        ports: [
          { name: 'grpc', port: GRPC_PORT, targetPort: 'grpc', protocol: 'TCP' },
          { name: 'http', port: HTTP_PORT, targetPort: 'http', protocol: 'TCP' },
          // For a scraper's endpoint discovery (a ServiceMonitor on this Service): never on the client Service.
          { name: 'metrics', port: METRICS_PORT, targetPort: 'metrics', protocol: 'TCP' },
        ],
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: metadata(names, names.clientService, 'node'),
      spec: {
        type: 'ClusterIP',
        selector: labels(names, 'node'),
        // HTTPS only: the API and /health, /ready, /status; /metrics is on the pods' metrics port, not here.
        ports: [{ name: 'https', port: CLIENT_SERVICE_PORT, targetPort: 'http', protocol: 'TCP' }],
      },
    },
  ];
}

function redisService(names: DeploymentNames): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(names, names.redis, 'redis'),
    spec: {
      type: 'ClusterIP',
      selector: labels(names, 'redis'),
      ports: [{ name: 'redis', port: REDIS_PORT, targetPort: 'redis', protocol: 'TCP' }],
    },
  };
}

/** redisConfig is Redis' configuration without its password, which it includes from the Secret's file. */
export function redisConfig(memoryBytes: number): string {
  return [
    `port ${REDIS_PORT}`,
    'bind * -::*',
    'protected-mode yes',
    `dir ${MOUNTS.redisData}`,
    ...redisPolicyConfig(memoryBytes),
    // The password: `requirepass …` in a file of the Secret, never on the command line.
    `include ${MOUNTS.redisAuth}/${SECRET_KEYS.redisAuthConf}`,
    '',
  ].join('\n');
}

/** redisPolicyConfig is what every Redis of the API runs with, single or in a Sentinel set. */
function redisPolicyConfig(memoryBytes: number): string[] {
  return [
    // BullMQ's queues must never lose a key to eviction: a full Redis refuses writes instead.
    `maxmemory ${memoryBytes}`,
    'maxmemory-policy noeviction',
    'appendonly yes',
    'appendfsync everysec',
  ];
}

const redisPodSecurity = () => ({
  runAsNonRoot: true,
  runAsUser: REDIS_UID,
  runAsGroup: REDIS_UID,
  fsGroup: REDIS_UID,
  fsGroupChangePolicy: 'OnRootMismatch',
  seccompProfile: { type: 'RuntimeDefault' },
});

/** redisObjects are the Redis the API uses, by mode: one pod, a Sentinel set, or none (external). */
function redisObjects(
  options: ManifestOptions,
  names: DeploymentNames,
): Record<'config' | 'service' | 'late', ManifestObject[]> {
  const mode = options.redis ?? 'single';
  if (mode === 'external') return { config: [], service: [], late: [] };
  if (mode === 'single') {
    const [configMap, statefulSet] = redis(options, names);
    return { config: [configMap], service: [redisService(names)], late: [statefulSet] };
  }
  const memory = options.redisMemoryBytes ?? REDIS_MEMORY_BYTES_DEFAULT;
  const [configMap, service, statefulSet, budget] = sentinelRedis(names, {
    replicas: options.redisReplicas ?? REDIS_SENTINEL_REPLICAS_DEFAULT,
    image: options.redisImage ?? REDIS_IMAGE_DEFAULT,
    memoryBytes: memory,
    volumeSize: options.redisVolumeSize ?? REDIS_VOLUME_SIZE_DEFAULT,
    storageClass: options.storageClass,
    staticConfig: ['protected-mode yes', ...redisPolicyConfig(memory), ''].join('\n'),
    labels: labels(names, 'redis'),
    podSecurity: redisPodSecurity(),
    containerSecurity: lockedDown,
  });
  return { config: [configMap], service: [service], late: [statefulSet, budget] };
}

function redis(options: ManifestOptions, names: DeploymentNames): [V1ConfigMap, V1StatefulSet] {
  const memory = options.redisMemoryBytes ?? REDIS_MEMORY_BYTES_DEFAULT;
  const memoryLimitMi = Math.ceil((memory * 1.5) / (1024 * 1024));
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: metadata(names, names.redisConfigMap, 'redis'),
      data: { [REDIS_CONFIG_KEY]: redisConfig(memory) },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: metadata(names, names.redis, 'redis'),
      spec: {
        serviceName: names.redis,
        replicas: 1,
        selector: { matchLabels: labels(names, 'redis') },
        template: {
          metadata: { labels: labels(names, 'redis') },
          spec: {
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            securityContext: redisPodSecurity(),
            containers: [
              {
                name: 'redis',
                image: options.redisImage ?? REDIS_IMAGE_DEFAULT,
                imagePullPolicy: 'IfNotPresent',
                command: ['redis-server', `${MOUNTS.redisConfig}/${REDIS_CONFIG_KEY}`],
                ports: [{ name: 'redis', containerPort: REDIS_PORT, protocol: 'TCP' }],
                readinessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 5, failureThreshold: 3 },
                livenessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 10, failureThreshold: 6 },
                resources: {
                  requests: { cpu: '100m', memory: `${memoryLimitMi}Mi` },
                  limits: { cpu: '1', memory: `${memoryLimitMi}Mi` },
                },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  runAsNonRoot: true,
                  privileged: false,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: [
                  { name: 'data', mountPath: MOUNTS.redisData },
                  { name: 'config', mountPath: MOUNTS.redisConfig, readOnly: true },
                  { name: 'auth', mountPath: MOUNTS.redisAuth, readOnly: true },
                ],
              },
            ],
            volumes: redisConfigVolumes(names, [SECRET_KEYS.redisAuthConf]),
          },
        },
        volumeClaimTemplates: [
          {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: 'data', labels: labels(names, 'redis') },
            spec: {
              accessModes: ['ReadWriteOnce'],
              ...(options.storageClass === undefined ? {} : { storageClassName: options.storageClass }),
              resources: { requests: { storage: options.redisVolumeSize ?? REDIS_VOLUME_SIZE_DEFAULT } },
            },
          },
        ],
      },
    },
  ];
}

/**
 * networkPolicies are written as the API server reads them: the client library's model calls an ingress rule's
 * `from` `_from` (its serializer renames it), so these plain objects are typed by hand where they differ.
 */
function networkPolicies(options: ManifestOptions, names: DeploymentNames): V1NetworkPolicy[] {
  const nodes = { matchLabels: labels(names, 'node') };
  const backup = options.backupSchedule !== undefined;
  // The backup CronJob's pods call svc.admin.v1 on the peer port (with the admin certificate).
  const peerPortFrom = backup
    ? [{ podSelector: nodes }, { podSelector: { matchLabels: labels(names, 'backup') } }]
    : [{ podSelector: nodes }];
  const policies = [
    ...redisNetworkPolicies(options, names),
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: metadata(names, names.statefulSet, 'node'),
      spec: {
        podSelector: nodes,
        policyTypes: ['Ingress'],
        ingress: [
          // The peer port (replication, the internal store, admin calls) from the nodes alone; operators reach
          // svc.admin.v1 with `kubectl port-forward`, which a NetworkPolicy does not see.
          { from: peerPortFrom, ports: [{ protocol: 'TCP', port: GRPC_PORT }] },
          // The HTTP surface and developer API (HTTPS) from anywhere the cluster routes.
          { ports: [{ protocol: 'TCP', port: HTTP_PORT }] },
          // The metrics listener from the monitoring namespace alone.
          {
            from: [
              {
                namespaceSelector: {
                  matchLabels: {
                    'kubernetes.io/metadata.name': options.metricsNamespace ?? METRICS_NAMESPACE_DEFAULT,
                  },
                },
              },
            ],
            ports: [{ protocol: 'TCP', port: METRICS_PORT }],
          },
        ],
      },
    },
  ];
  return policies as unknown as V1NetworkPolicy[];
}

/**
 * redisNetworkPolicies: Redis from the nodes alone; in a Sentinel set also from its own pods (replication and
 * the sentinels' gossip), and the sentinels' port from the nodes (the API asks them where the primary is).
 */
function redisNetworkPolicies(options: ManifestOptions, names: DeploymentNames): object[] {
  const mode = options.redis ?? 'single';
  if (mode === 'external') return [];
  const nodes = { podSelector: { matchLabels: labels(names, 'node') } };
  const own = { podSelector: { matchLabels: labels(names, 'redis') } };
  const ingress =
    mode === 'single'
      ? [{ from: [nodes], ports: [{ protocol: 'TCP', port: REDIS_PORT }] }]
      : [
          {
            from: [nodes, own],
            ports: [
              { protocol: 'TCP', port: REDIS_PORT },
              { protocol: 'TCP', port: SENTINEL_PORT },
            ],
          },
        ];
  return [
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: metadata(names, names.redis, 'redis'),
      spec: { podSelector: own.podSelector, policyTypes: ['Ingress'], ingress },
    },
  ];
}

/**
 * RUN_BACKEND_RULES are exactly the Kubernetes API calls of the run backend (api/runs/kubernetes-backend.ts and
 * its leftover sweep, api/runs/kubernetes-sweep.ts); test/deploy/manifests.test.ts reads those files' calls and
 * fails when they and this list disagree.
 */
export const RUN_BACKEND_RULES: ReadonlyArray<{ apiGroup: string; resource: string; verbs: readonly string[] }> = [
  // list: the leftover sweep finds the Jobs of ended runs by label.
  { apiGroup: 'batch', resource: 'jobs', verbs: ['create', 'delete', 'list'] },
  { apiGroup: '', resource: 'pods', verbs: ['watch', 'delete'] },
  { apiGroup: '', resource: 'pods/log', verbs: ['get'] },
  { apiGroup: 'networking.k8s.io', resource: 'networkpolicies', verbs: ['create'] },
  // Per-run Secrets for a run's credentials (created before its Job, owned by it, deleted after); list: the
  // leftover sweep finds those a dead worker left (it asks for metadata only, but RBAC has no narrower verb).
  { apiGroup: '', resource: 'secrets', verbs: ['create', 'patch', 'delete', 'list'] },
];

function rbac(names: DeploymentNames, runs: boolean): Array<V1ServiceAccount | V1Role | V1RoleBinding> {
  const account: V1ServiceAccount = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: metadata(names, names.serviceAccount, 'node'),
    automountServiceAccountToken: false,
  };
  if (!runs) return [account];
  const roleName = `${names.statefulSet}-runs`;
  return [
    account,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: metadata(names, roleName, 'node'),
      rules: RUN_BACKEND_RULES.map((rule) => ({
        apiGroups: [rule.apiGroup],
        resources: [rule.resource],
        verbs: [...rule.verbs],
      })),
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: metadata(names, roleName, 'node'),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: roleName },
      subjects: [{ kind: 'ServiceAccount', name: names.serviceAccount, namespace: names.namespace }],
    },
  ];
}

function disruptionBudget(names: DeploymentNames): V1PodDisruptionBudget {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata: metadata(names, names.statefulSet, 'node'),
    // One voter down at a time keeps a majority of three (and of five, with room).
    spec: { maxUnavailable: 1, selector: { matchLabels: labels(names, 'node') } },
  };
}

/** renderManifests lists every object but the Secrets, in the order `kubectl apply -f` should create them. */
export function renderManifests(options: ManifestOptions): ManifestObject[] {
  checkOptions(options);
  const names = deploymentNames(options);
  const runs = options.runImage !== undefined;
  const redisParts = redisObjects(options, names);
  return [
    ...rbac(names, runs),
    ...redisParts.config,
    ...services(names),
    ...redisParts.service,
    ...networkPolicies(options, names),
    // The run pods' fence, the same objects the backend would create before its first Job (it keeps these).
    ...(runs ? runNetworkPolicies(names.namespace) : []),
    ...(options.apiTls === 'cert-manager' ? [apiCertificate(options, names)] : []),
    ...redisParts.late,
    statefulSet(options, names),
    disruptionBudget(names),
    ...(options.backupSchedule === undefined
      ? []
      : [
          backupCronJob(
            {
              image: options.image,
              founders: options.founders,
              schedule: options.backupSchedule,
              claim: options.backupClaim!,
              keep: options.backupKeep,
              uid: NODE_UID,
              labels: labels(names, 'backup'),
              securityContext: lockedDown,
            },
            names,
          ),
        ]),
  ];
}

/**
 * CertManagerCertificate is cert-manager's Certificate (cert-manager.io/v1), which writes the API TLS Secret and
 * renews it; typed here, as the Kubernetes client library has no model for custom resources.
 */
export interface CertManagerCertificate {
  apiVersion: 'cert-manager.io/v1';
  kind: 'Certificate';
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: {
    secretName: string;
    dnsNames: string[];
    issuerRef: { kind: string; name: string; group: string };
    privateKey: { algorithm: string; size: number; rotationPolicy: string };
    usages: string[];
  };
}

function apiCertificate(options: ManifestOptions, names: DeploymentNames): CertManagerCertificate {
  return {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: metadata(names, names.apiTlsSecret, 'node'),
    spec: {
      secretName: names.apiTlsSecret,
      dnsNames: apiDnsNames(names),
      issuerRef: { ...certManagerIssuer(options), group: 'cert-manager.io' },
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      usages: ['server auth', 'digital signature'],
    },
  };
}
