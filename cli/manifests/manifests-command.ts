// `svc manifests render|secrets`: the Kubernetes objects of a deployment as YAML (deploy/kubernetes/README.md).
import { chmod, stat, writeFile } from 'node:fs/promises';
import { dump } from 'js-yaml';
import { intFlag, parseFlags, stringFlag, type FlagSpec } from '../flags.js';
import type { Io } from '../io.js';
import { EXIT_OK } from '../limits.js';
import { UsageError } from '../usage.js';
import { ManifestError, REDIS_MODES, renderManifests, type ManifestOptions, type RedisMode } from './render.js';
import { REDIS_SENTINEL_REPLICAS_MAX, REDIS_SENTINEL_REPLICAS_MIN } from './redis-sentinel.js';
import { buildSecrets } from './secrets.js';
import { REPLICA_COUNT_MAX } from './render.js';
import { BACKUP_KEEP_MAX } from '../backup/limits.js';

export const MANIFESTS_USAGE = `usage:
  svc manifests render  --namespace NS --cluster-id ID --image IMAGE --founders N [--replicas N] [--name NAME]
                        [--run-image IMAGE [--workspace-claim PVC] [--workspace-root DIR]] [--storage-class CLASS]
                        [--data-size 20Gi] [--redis-image IMAGE] [--redis-size 5Gi] [--redis-memory-mib N]
                        [--cluster-domain DOMAIN] [--log-level LEVEL] [--metrics-namespace NS]
                        [--api-tls secret|cert-manager [--cert-manager-issuer [Cluster]Issuer/NAME]]
                        [--backup-schedule CRON --backup-claim PVC [--backup-keep N]]
                        [--redis single|sentinel|external [--redis-replicas N]]
  svc manifests secrets --certs DIR --namespace NS --out FILE [--replicas N] [--name NAME] [--cluster-id ID]
                        [--cluster-domain DOMAIN] [--api-tls secret|cert-manager] [--backup-admin NAME] [--force]
                        [--redis single|sentinel [--redis-replicas N] | --redis external --redis-url URL]

render prints every object but the Secrets (YAML, for kubectl apply -f -): the node StatefulSet, its headless
peers Service (<name>-peers: the --peers-service of svc certs node) and client Service, a PodDisruptionBudget,
Redis, NetworkPolicies and, with --run-image, the run backend's RBAC. It holds no secret value.
  --founders N        the first N pods found the cluster (3 survives one lost node): never change it later,
                      a longer list would let fresh pods found a second roster
  --replicas N        nodes to run (default: the founders); pods beyond the founders join through them
  --api-tls MODE      where the API's HTTPS certificate (Secret <name>-api-tls) comes from: secret (default,
                      svc manifests secrets, from svc certs api) or cert-manager (a Certificate is rendered)
  --metrics-namespace NS   the namespace whose pods may scrape the metrics port 9090 (default monitoring)
  --backup-schedule CRON   add a CronJob running \`svc backup --out-dir /backups --keep N\` on this schedule, with
                      the admin certificate of the Secret <name>-backup-admin (secrets --backup-admin writes it)
  --backup-claim PVC  the PersistentVolumeClaim the backups are written into (yours to create)
  --backup-keep N     backups kept in it (default 7)
  --redis MODE        the API's Redis: single (default: one pod), sentinel (N pods, each a Redis server and a
                      Sentinel; the primary fails over to a replica) or external (none rendered: yours, named
                      by secrets --redis-url, e.g. redis+sentinel://:PW@host:26379,…/NAME; see docs/operations.md)
  --redis-replicas N  the Sentinel set's pods (default 3, 3..9); give secrets the same --redis and count
secrets WRITES SECRET VALUES to FILE (mode 0600; "--out -" prints them to stdout, for a pipe to kubectl):
the CA certificate and the peer pairs of pods <name>-0 … <name>-(N-1) from DIR (each checked: its own peer
certificate, of one cluster, covering its DNS name under <name>-peers.NS), the API's credential key and the
Redis password (both made once in DIR, 0600, and reused), and the API's HTTPS pair from DIR/api.crt, api.key
(svc certs api; checked: issued by the CA, covering the client Service and the pods; not with --api-tls
cert-manager). Never ca.key, and an admin certificate only when --backup-admin NAME asks: then
NAME.crt/NAME.key (an admin certificate of the cluster) go in <name>-backup-admin.`;

const RENDER_FLAGS: FlagSpec = {
  namespace: { type: 'string' },
  'cluster-id': { type: 'string' },
  image: { type: 'string' },
  replicas: { type: 'string' },
  founders: { type: 'string' },
  name: { type: 'string' },
  'run-image': { type: 'string' },
  'workspace-claim': { type: 'string' },
  'workspace-root': { type: 'string' },
  'storage-class': { type: 'string' },
  'data-size': { type: 'string' },
  'redis-image': { type: 'string' },
  'redis-size': { type: 'string' },
  'redis-memory-mib': { type: 'string' },
  'cluster-domain': { type: 'string' },
  'log-level': { type: 'string' },
  'backup-schedule': { type: 'string' },
  'backup-claim': { type: 'string' },
  'backup-keep': { type: 'string' },
  'api-tls': { type: 'string' },
  'cert-manager-issuer': { type: 'string' },
  'metrics-namespace': { type: 'string' },
  redis: { type: 'string' },
  'redis-replicas': { type: 'string' },
  help: { type: 'boolean' },
};

const SECRETS_FLAGS: FlagSpec = {
  certs: { type: 'string' },
  namespace: { type: 'string' },
  out: { type: 'string' },
  replicas: { type: 'string' },
  name: { type: 'string' },
  'cluster-id': { type: 'string' },
  'cluster-domain': { type: 'string' },
  'backup-admin': { type: 'string' },
  'api-tls': { type: 'string' },
  redis: { type: 'string' },
  'redis-replicas': { type: 'string' },
  'redis-url': { type: 'string' },
  force: { type: 'boolean' },
  help: { type: 'boolean' },
};

const REDIS_MEMORY_MIB_MAX = 1024 * 1024;

/** toYaml writes objects as one multi-document YAML stream. */
export function toYaml(objects: readonly object[]): string {
  return objects.map((object) => `---\n${dump(object, { noRefs: true, lineWidth: -1, sortKeys: false })}`).join('');
}

function required(values: Record<string, unknown>, names: string[]): void {
  const missing = names.filter((name) => values[name] === undefined);
  if (missing.length > 0) throw new UsageError(`needs ${missing.map((name) => `--${name}`).join(', ')}`);
}

/** renderOptionsFromArgs reads `svc manifests render`'s flags (the example's header line is parsed with it too). */
export function renderOptionsFromArgs(args: string[]): ManifestOptions | 'help' {
  const { values } = parseFlags(args, RENDER_FLAGS);
  if (values.help === true) return 'help';
  required(values, ['namespace', 'cluster-id', 'image', 'founders']);
  const memoryMib = intFlag(values, 'redis-memory-mib', 16, REDIS_MEMORY_MIB_MAX);
  const optional = (flag: string) => stringFlag(values, flag);
  const options: ManifestOptions = {
    namespace: stringFlag(values, 'namespace')!,
    clusterId: stringFlag(values, 'cluster-id')!,
    image: stringFlag(values, 'image')!,
    founders: intFlag(values, 'founders', 1, REPLICA_COUNT_MAX)!,
    replicas: 0,
  };
  options.replicas = intFlag(values, 'replicas', 1, REPLICA_COUNT_MAX) ?? options.founders;
  const fields: Array<[string, keyof ManifestOptions]> = [
    ['name', 'name'],
    ['run-image', 'runImage'],
    ['workspace-claim', 'workspaceClaim'],
    ['workspace-root', 'workspaceRoot'],
    ['storage-class', 'storageClass'],
    ['data-size', 'dataVolumeSize'],
    ['redis-image', 'redisImage'],
    ['redis-size', 'redisVolumeSize'],
    ['cluster-domain', 'clusterDomain'],
    ['log-level', 'logLevel'],
    ['backup-schedule', 'backupSchedule'],
    ['backup-claim', 'backupClaim'],
    ['api-tls', 'apiTls'],
    ['cert-manager-issuer', 'certManagerIssuer'],
    ['metrics-namespace', 'metricsNamespace'],
    ['redis', 'redis'],
  ];
  for (const [flag, field] of fields) {
    const value = optional(flag);
    if (value !== undefined) (options as unknown as Record<string, unknown>)[field] = value;
  }
  if (memoryMib !== undefined) options.redisMemoryBytes = memoryMib * 1024 * 1024;
  const backupKeep = intFlag(values, 'backup-keep', 1, BACKUP_KEEP_MAX);
  if (backupKeep !== undefined) options.backupKeep = backupKeep;
  const redisReplicas = intFlag(values, 'redis-replicas', REDIS_SENTINEL_REPLICAS_MIN, REDIS_SENTINEL_REPLICAS_MAX);
  if (redisReplicas !== undefined) options.redisReplicas = redisReplicas;
  if (options.runImage === undefined && (options.workspaceClaim ?? options.workspaceRoot) !== undefined)
    throw new UsageError('--workspace-claim and --workspace-root need --run-image');
  return options;
}

function apiTlsFlag(value: string | undefined): 'secret' | 'cert-manager' | undefined {
  if (value !== undefined && value !== 'secret' && value !== 'cert-manager')
    throw new UsageError(`--api-tls must be secret or cert-manager, got ${JSON.stringify(value)}`);
  return value;
}

function redisFlag(value: string | undefined): RedisMode | undefined {
  if (value !== undefined && !(REDIS_MODES as readonly string[]).includes(value))
    throw new UsageError(`--redis must be ${REDIS_MODES.join(', ')}; got ${JSON.stringify(value)}`);
  return value as RedisMode | undefined;
}

export async function runManifestsCommand(args: string[], io: Io): Promise<number> {
  const [command, ...rest] = args;
  if (command === 'render') {
    const options = renderOptionsFromArgs(rest);
    if (options === 'help') {
      io.out.write(`${MANIFESTS_USAGE}\n`);
      return EXIT_OK;
    }
    let objects;
    try {
      objects = renderManifests(options);
    } catch (err) {
      if (err instanceof ManifestError) throw new UsageError(err.message);
      throw err;
    }
    io.out.write(toYaml(objects));
    return EXIT_OK;
  }
  if (command === 'secrets') {
    const { values } = parseFlags(rest, SECRETS_FLAGS);
    if (values.help === true) {
      io.out.write(`${MANIFESTS_USAGE}\n`);
      return EXIT_OK;
    }
    required(values, ['certs', 'namespace', 'out']);
    const out = stringFlag(values, 'out')!;
    const secrets = await buildSecrets({
      certsDir: stringFlag(values, 'certs')!,
      namespace: stringFlag(values, 'namespace')!,
      name: stringFlag(values, 'name'),
      clusterDomain: stringFlag(values, 'cluster-domain'),
      clusterId: stringFlag(values, 'cluster-id'),
      backupAdmin: stringFlag(values, 'backup-admin'),
      replicas: intFlag(values, 'replicas', 1, REPLICA_COUNT_MAX) ?? 3,
      apiTls: apiTlsFlag(stringFlag(values, 'api-tls')),
      redis: redisFlag(stringFlag(values, 'redis')),
      redisReplicas: intFlag(values, 'redis-replicas', REDIS_SENTINEL_REPLICAS_MIN, REDIS_SENTINEL_REPLICAS_MAX),
      redisUrl: stringFlag(values, 'redis-url'),
    });
    const text = toYaml(secrets);
    if (out === '-') {
      io.out.write(text);
      return EXIT_OK;
    }
    if (values.force !== true && (await exists(out))) throw new UsageError(`${out} exists; pass --force to replace it`);
    await writeFile(out, text, { mode: 0o600 });
    await chmod(out, 0o600);
    io.err.write(`wrote ${secrets.map((secret) => secret.metadata!.name).join(', ')} to ${out} (mode 0600)\n`);
    return EXIT_OK;
  }
  if (command === undefined || command === '--help' || command === 'help') {
    (command === undefined ? io.err : io.out).write(`${MANIFESTS_USAGE}\n`);
    return command === undefined ? 2 : EXIT_OK;
  }
  throw new UsageError(`unknown subcommand ${JSON.stringify(command)} (render or secrets)`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}
