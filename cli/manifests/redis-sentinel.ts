// `svc manifests render --redis sentinel`: Redis that fails over, as Kubernetes objects. One StatefulSet of
// `redisReplicas` pods (3 by default), each running a Redis server and a Sentinel beside it; the first pod starts
// as the primary, the others as its replicas, and the sentinels (a majority is the quorum) promote a replica
// when the primary is gone. The API reaches them by the redis+sentinel:// URL `svc manifests secrets --redis
// sentinel` writes (api/redis/redis-target.ts).
//
// Why a start script and not static configuration: who is primary changes at run time. A pod that starts (or a
// container that restarts) asks the sentinels which server is primary now and starts as its replica; only
// when no sentinel answers does it ask the servers themselves (ROLE), and only when none of those answers
// either (the set's first start) does the first pod become primary. A static `replicaof` would start a
// restarted old primary as a second primary beside the promoted one.
//
// The script reads every address and path from its environment (the pod spec sets them), so
// test/deploy/redis-sentinel-manifests.test.ts runs this very script against real redis-server processes on
// loopback ports and kills the primary.
import type {
  V1ConfigMap,
  V1Container,
  V1PodDisruptionBudget,
  V1Service,
  V1StatefulSet,
  V1Volume,
} from '@kubernetes/client-node';
import { MOUNTS, REDIS_PORT, SECRET_KEYS, type DeploymentNames } from './layout.js';

/** SENTINEL_PORT is each pod's Sentinel port (Redis' usual one). */
export const SENTINEL_PORT = 26379;
/** SENTINEL_PRIMARY_NAME is the name the sentinels monitor the primary by (the URL's path names it). */
export const SENTINEL_PRIMARY_NAME = 'primary';
/** REDIS_SENTINEL_REPLICAS_DEFAULT: three pods lose one and still hold a sentinel majority and a replica. */
export const REDIS_SENTINEL_REPLICAS_DEFAULT = 3;
export const REDIS_SENTINEL_REPLICAS_MIN = 3;
export const REDIS_SENTINEL_REPLICAS_MAX = 9;
/** SENTINEL_DOWN_AFTER_MS_DEFAULT: a primary silent this long is judged down (Sentinel's own default is 30 s). */
export const SENTINEL_DOWN_AFTER_MS_DEFAULT = 5_000;
/** SENTINEL_FAILOVER_TIMEOUT_MS_DEFAULT bounds one failover attempt before another sentinel may try. */
export const SENTINEL_FAILOVER_TIMEOUT_MS_DEFAULT = 60_000;
/** The ConfigMap key of the start script, and where the pod keeps the configuration it writes. */
export const REDIS_START_SCRIPT_KEY = 'start.sh';
export const REDIS_RUN_DIR = '/run/redis';

/** sentinelQuorum is how many sentinels must agree the primary is down: a majority of them. */
export const sentinelQuorum = (replicas: number): number => Math.floor(replicas / 2) + 1;

/** redisPodHost is a Redis pod's stable DNS name under the (headless) Redis Service. */
export function redisPodHost(names: DeploymentNames, ordinal: number): string {
  return `${names.redis}-${ordinal}.${names.redis}.${names.namespace}.svc.${names.clusterDomain}`;
}

/** sentinelRedisUrl is the API's REDIS_URL for this set: every sentinel, the primary's name, both passwords. */
export function sentinelRedisUrl(
  names: DeploymentNames,
  replicas: number,
  password: string,
  sentinelPassword: string,
): string {
  const hosts = Array.from({ length: replicas }, (_, ordinal) => `${redisPodHost(names, ordinal)}:${SENTINEL_PORT}`);
  return `redis+sentinel://:${password}@${hosts.join(',')}/${SENTINEL_PRIMARY_NAME}?sentinelPassword=${sentinelPassword}`;
}

/**
 * REDIS_START_SCRIPT starts this pod's `redis` or `sentinel` (its one argument), POSIX sh with redis-cli and
 * coreutils (both in the official Redis image). Passwords come from files of the Secret and go into 0600 files
 * under the run directory, never onto a command line.
 */
export const REDIS_START_SCRIPT = `#!/bin/sh
set -eu
what="$1"
run_dir="\${REDIS_SET_RUN_DIR:-${REDIS_RUN_DIR}}"
auth_dir="\${REDIS_SET_AUTH_DIR:-${MOUNTS.redisAuth}}"
config_dir="\${REDIS_SET_CONFIG_DIR:-${MOUNTS.redisConfig}}"
data_dir="\${REDIS_SET_DATA_DIR:-${MOUNTS.redisData}}"
bind="\${REDIS_SET_BIND:-* -::*}"
name="$REDIS_SET_PRIMARY_NAME"
ordinal="\${POD_NAME##*-}"
nth() { n="$1"; shift; eval "echo \\"\\\${$n}\\""; }
self_redis="$(nth $((ordinal + 1)) $REDIS_SET_ADDRS)"
self_sentinel="$(nth $((ordinal + 1)) $REDIS_SET_SENTINEL_ADDRS)"
[ -n "$self_redis" ] && [ -n "$self_sentinel" ] || { echo "no address for pod $POD_NAME" >&2; exit 2; }
password="$(cat "$auth_dir/${SECRET_KEYS.redisPassword}")"
sentinel_password="$(cat "$auth_dir/${SECRET_KEYS.redisSentinelPassword}")"
ask() { # ask PASSWORD HOST:PORT COMMAND...: one line per reply element, nothing when it does not answer
  auth="$1"; at="$2"; shift 2
  REDISCLI_AUTH="$auth" timeout 3 redis-cli --no-auth-warning -h "\${at%:*}" -p "\${at##*:}" "$@" 2>/dev/null || true
}
primary=""
for sentinel in $REDIS_SET_SENTINEL_ADDRS; do
  answer="$(ask "$sentinel_password" "$sentinel" SENTINEL get-master-addr-by-name "$name" | tr '\\n' ' ')"
  set -- $answer
  if [ $# -eq 2 ] && [ -n "$1" ] && [ "$2" -gt 0 ] 2>/dev/null; then primary="$1:$2"; break; fi
done
if [ -z "$primary" ]; then
  for server in $REDIS_SET_ADDRS; do
    [ "$server" = "$self_redis" ] && continue
    if [ "$(ask "$password" "$server" ROLE | head -n 1)" = master ]; then primary="$server"; break; fi
  done
fi
[ -n "$primary" ] || primary="$(nth 1 $REDIS_SET_ADDRS)"
umask 077
if [ "$what" = redis ]; then
  {
    echo "include $config_dir/redis.conf"
    echo "port \${self_redis##*:}"
    echo "bind $bind"
    echo "dir $data_dir"
    echo "requirepass $password"
    echo "masterauth $password"
    echo "replica-announce-ip \${self_redis%:*}"
    echo "replica-announce-port \${self_redis##*:}"
    if [ "$primary" != "$self_redis" ]; then echo "replicaof \${primary%:*} \${primary##*:}"; fi
  } > "$run_dir/redis.conf"
  echo "redis: starting as $([ "$primary" = "$self_redis" ] && echo primary || echo "replica of $primary")" >&2
  exec redis-server "$run_dir/redis.conf"
fi
if [ "$what" = sentinel ]; then
  # Kept across container restarts (Sentinel rewrites it with what it learned); its id is the pod's, so a
  # pod that comes back is the sentinel its peers knew, not one more to count toward a majority.
  if [ ! -s "$run_dir/sentinel.conf" ]; then
    {
      echo "port \${self_sentinel##*:}"
      echo "bind $bind"
      echo "dir $run_dir"
      echo "sentinel myid $(printf '%s' "$POD_NAME" | sha1sum | cut -c1-40)"
      echo "sentinel resolve-hostnames yes"
      echo "sentinel announce-hostnames yes"
      echo "sentinel announce-ip \${self_sentinel%:*}"
      echo "sentinel announce-port \${self_sentinel##*:}"
      echo "requirepass $sentinel_password"
      echo "sentinel sentinel-pass $sentinel_password"
      echo "sentinel monitor $name \${primary%:*} \${primary##*:} $REDIS_SET_QUORUM"
      echo "sentinel auth-pass $name $password"
      echo "sentinel down-after-milliseconds $name $REDIS_SET_DOWN_AFTER_MS"
      echo "sentinel failover-timeout $name $REDIS_SET_FAILOVER_TIMEOUT_MS"
      echo "sentinel parallel-syncs $name 1"
    } > "$run_dir/sentinel.conf"
  fi
  exec redis-server "$run_dir/sentinel.conf" --sentinel
fi
echo "usage: start.sh redis|sentinel" >&2
exit 2
`;

export interface SentinelSetOptions {
  replicas: number;
  image: string;
  memoryBytes: number;
  volumeSize: string;
  storageClass?: string;
  /** staticConfig is redis.conf without its password, port or dir (the start script adds them). */
  staticConfig: string;
  labels: Record<string, string>;
  /** podSecurity and containerSecurity (a fresh object per container) are the single-Redis pod's contexts. */
  podSecurity: object;
  containerSecurity: () => object;
}

/** sentinelEnvironment is what the start script reads, for pod `ordinal`'s peers (all of them, itself included). */
export function sentinelEnvironment(names: DeploymentNames, replicas: number): Array<{ name: string; value: string }> {
  const hosts = Array.from({ length: replicas }, (_, ordinal) => redisPodHost(names, ordinal));
  return [
    { name: 'REDIS_SET_ADDRS', value: hosts.map((host) => `${host}:${REDIS_PORT}`).join(' ') },
    { name: 'REDIS_SET_SENTINEL_ADDRS', value: hosts.map((host) => `${host}:${SENTINEL_PORT}`).join(' ') },
    { name: 'REDIS_SET_PRIMARY_NAME', value: SENTINEL_PRIMARY_NAME },
    { name: 'REDIS_SET_QUORUM', value: String(sentinelQuorum(replicas)) },
    { name: 'REDIS_SET_DOWN_AFTER_MS', value: String(SENTINEL_DOWN_AFTER_MS_DEFAULT) },
    { name: 'REDIS_SET_FAILOVER_TIMEOUT_MS', value: String(SENTINEL_FAILOVER_TIMEOUT_MS_DEFAULT) },
  ];
}

/** servedPort is a container's named TCP port with the probes that it accepts connections. */
function servedPort(name: string, port: number): Pick<V1Container, 'ports' | 'readinessProbe' | 'livenessProbe'> {
  return {
    ports: [{ name, containerPort: port, protocol: 'TCP' }],
    readinessProbe: { tcpSocket: { port: name }, periodSeconds: 5, failureThreshold: 3 },
    livenessProbe: { tcpSocket: { port: name }, periodSeconds: 10, failureThreshold: 6 },
  };
}

/** redisConfigVolumes: the ConfigMap, and these keys of the Redis auth Secret (group-readable, Redis' group). */
export function redisConfigVolumes(names: DeploymentNames, keys: readonly string[]): V1Volume[] {
  return [
    { name: 'config', configMap: { name: names.redisConfigMap } },
    {
      name: 'auth',
      secret: {
        secretName: names.redisAuthSecret,
        defaultMode: 0o440,
        items: keys.map((key) => ({ key, path: key })),
      },
    },
  ];
}

function meta(names: DeploymentNames, name: string, labels: Record<string, string>) {
  return { name, namespace: names.namespace, labels };
}

function sentinelContainers(names: DeploymentNames, options: SentinelSetOptions): V1Container[] {
  const memoryLimitMi = Math.ceil((options.memoryBytes * 1.5) / (1024 * 1024));
  const env = [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ...sentinelEnvironment(names, options.replicas),
  ];
  const mounts = [
    { name: 'config', mountPath: MOUNTS.redisConfig, readOnly: true },
    { name: 'auth', mountPath: MOUNTS.redisAuth, readOnly: true },
    { name: 'run', mountPath: REDIS_RUN_DIR },
  ];
  const start = (what: 'redis' | 'sentinel') => ['sh', `${MOUNTS.redisConfig}/${REDIS_START_SCRIPT_KEY}`, what];
  return [
    {
      name: 'redis',
      image: options.image,
      imagePullPolicy: 'IfNotPresent',
      command: start('redis'),
      env,
      ...servedPort('redis', REDIS_PORT),
      resources: {
        requests: { cpu: '100m', memory: `${memoryLimitMi}Mi` },
        limits: { cpu: '1', memory: `${memoryLimitMi}Mi` },
      },
      securityContext: options.containerSecurity(),
      volumeMounts: [{ name: 'data', mountPath: MOUNTS.redisData }, ...mounts],
    },
    {
      name: 'sentinel',
      image: options.image,
      imagePullPolicy: 'IfNotPresent',
      command: start('sentinel'),
      env,
      ...servedPort('sentinel', SENTINEL_PORT),
      resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '250m', memory: '64Mi' } },
      securityContext: options.containerSecurity(),
      volumeMounts: mounts,
    },
  ];
}

/** sentinelRedis renders the ConfigMap, headless Service, StatefulSet and disruption budget of the set. */
export function sentinelRedis(
  names: DeploymentNames,
  options: SentinelSetOptions,
): [V1ConfigMap, V1Service, V1StatefulSet, V1PodDisruptionBudget] {
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: meta(names, names.redisConfigMap, options.labels),
      data: { 'redis.conf': options.staticConfig, [REDIS_START_SCRIPT_KEY]: REDIS_START_SCRIPT },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(names, names.redis, options.labels),
      spec: {
        // Headless: each pod's own DNS name is its address in the sentinels' reports and the API's URL.
        clusterIP: 'None',
        // A pod must find its peers' sentinels before it is ready: it asks them who is primary.
        publishNotReadyAddresses: true,
        selector: options.labels,
        ports: [
          { name: 'redis', port: REDIS_PORT, targetPort: 'redis', protocol: 'TCP' },
          { name: 'sentinel', port: SENTINEL_PORT, targetPort: 'sentinel', protocol: 'TCP' },
        ],
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: meta(names, names.redis, options.labels),
      spec: {
        serviceName: names.redis,
        replicas: options.replicas,
        // Every pod asks the others; none waits for another to be ready first.
        podManagementPolicy: 'Parallel',
        selector: { matchLabels: options.labels },
        template: {
          metadata: { labels: options.labels },
          spec: {
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            securityContext: options.podSecurity,
            topologySpreadConstraints: [
              {
                maxSkew: 1,
                topologyKey: 'kubernetes.io/hostname',
                whenUnsatisfiable: 'ScheduleAnyway',
                labelSelector: { matchLabels: options.labels },
              },
            ],
            containers: sentinelContainers(names, options),
            volumes: [
              ...redisConfigVolumes(names, [SECRET_KEYS.redisPassword, SECRET_KEYS.redisSentinelPassword]),
              // The configuration the script writes (passwords in it): memory, never a disk.
              { name: 'run', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
            ],
          },
        },
        volumeClaimTemplates: [
          {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: 'data', labels: options.labels },
            spec: {
              accessModes: ['ReadWriteOnce'],
              ...(options.storageClass === undefined ? {} : { storageClassName: options.storageClass }),
              resources: { requests: { storage: options.volumeSize } },
            },
          },
        ],
      },
    },
    {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(names, names.redis, options.labels),
      // One pod down at a time keeps a sentinel majority and a replica to promote.
      spec: { maxUnavailable: 1, selector: { matchLabels: options.labels } },
    },
  ];
}
