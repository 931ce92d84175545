// The names every Kubernetes object of a deployment shares, derived from one set of options: the renderer
// (render.ts) and the Secret writer (secrets.ts) both read them here, so a Secret's name, its keys and the pod's
// references to them cannot drift apart, and the peers Service is the one `svc certs node --peers-service` names.
import { CLUSTER_DOMAIN_DEFAULT } from '../certs/certs.js';

/** DEPLOYMENT_NAME_DEFAULT names the StatefulSet; its pods are <name>-0, <name>-1, … (the node names). */
export const DEPLOYMENT_NAME_DEFAULT = 'svc';
/** GRPC_PORT is the peer port (replication, svc.store.v1, svc.admin.v1); HTTP_PORT the node's HTTP surface and API. */
export const GRPC_PORT = 7000;
export const HTTP_PORT = 8080;
/** METRICS_PORT is the node's metrics listener (/metrics, /status; plaintext), off the client Service. */
export const METRICS_PORT = 9090;
/** CLIENT_SERVICE_PORT: the client Service speaks HTTPS on the usual port (to the pods' HTTP_PORT). */
export const CLIENT_SERVICE_PORT = 443;
export const REDIS_PORT = 6379;

/** Where the node's container finds what the manifests mount. */
export const MOUNTS = {
  data: '/var/lib/svc',
  tls: '/etc/svc/tls',
  /** tlsPairs holds every pod's pair (the TLS Secret): mounted into the init container only (render.ts). */
  tlsPairs: '/etc/svc/tls-pairs',
  apiSecret: '/etc/svc/api',
  /** apiTls holds the HTTP port's certificate pair (tls.crt, tls.key) from the API TLS Secret. */
  apiTls: '/etc/svc/api-tls',
  tmp: '/tmp',
  redisData: '/data',
  redisConfig: '/etc/redis',
  redisAuth: '/etc/redis-auth',
  /** backupAdmin holds the backup CronJob's admin certificate (the backup admin Secret); backups its volume. */
  backupAdmin: '/etc/svc/backup-admin',
  backups: '/backups',
} as const;

/** Keys inside the Secrets (secrets.ts writes them, render.ts references them). */
export const SECRET_KEYS = {
  caCert: 'ca.crt',
  /** tlsCert and tlsKey are a kubernetes.io/tls Secret's keys (cert-manager writes the same). */
  tlsCert: 'tls.crt',
  tlsKey: 'tls.key',
  apiSecretKey: 'secret-key',
  redisUrl: 'redis-url',
  redisAuthConf: 'auth.conf',
  redisPassword: 'password',
  /** redisSentinelPassword: the sentinels' own password (--redis sentinel), beside the servers'. */
  redisSentinelPassword: 'sentinel-password',
  /** The backup admin Secret's admin certificate and key (beside caCert). */
  backupAdminCert: 'admin.crt',
  backupAdminKey: 'admin.key',
} as const;
export const REDIS_CONFIG_KEY = 'redis.conf';

export interface DeploymentNames {
  namespace: string;
  /** statefulSet is the StatefulSet's name, and the prefix of every other object's. */
  statefulSet: string;
  /** peersService is the headless Service of the pods' DNS names: the `--peers-service` of `svc certs node`. */
  peersService: string;
  clientService: string;
  serviceAccount: string;
  tlsSecret: string;
  /** apiTlsSecret holds the HTTP API's certificate pair (kubernetes.io/tls), from svc manifests secrets or cert-manager. */
  apiTlsSecret: string;
  apiSecret: string;
  redisAuthSecret: string;
  redisConfigMap: string;
  redis: string;
  /** backup names the backup CronJob; backupAdminSecret the Secret of its admin certificate. */
  backup: string;
  backupAdminSecret: string;
  clusterDomain: string;
}

export function deploymentNames(options: {
  namespace: string;
  name?: string;
  clusterDomain?: string;
}): DeploymentNames {
  const name = options.name ?? DEPLOYMENT_NAME_DEFAULT;
  return {
    namespace: options.namespace,
    statefulSet: name,
    peersService: `${name}-peers`,
    clientService: name,
    serviceAccount: name,
    tlsSecret: `${name}-tls`,
    apiTlsSecret: `${name}-api-tls`,
    apiSecret: `${name}-api`,
    redisAuthSecret: `${name}-redis-auth`,
    redisConfigMap: `${name}-redis`,
    redis: `${name}-redis`,
    backup: `${name}-backup`,
    backupAdminSecret: `${name}-backup-admin`,
    clusterDomain: options.clusterDomain ?? CLUSTER_DOMAIN_DEFAULT,
  };
}

/** podName is the name of the StatefulSet's pod of this ordinal, which is also its node's name. */
export function podName(names: DeploymentNames, ordinal: number): string {
  return `${names.statefulSet}-${ordinal}`;
}

/** podHost is a pod's stable DNS name under the peers Service (covered by the certificate's wildcard). */
export function podHost(names: DeploymentNames, pod: string): string {
  return `${pod}.${names.peersService}.${names.namespace}.svc.${names.clusterDomain}`;
}

export function redisHost(names: DeploymentNames): string {
  return `${names.redis}.${names.namespace}.svc.${names.clusterDomain}`;
}

/** nodeCertFile and nodeKeyFile are a node's files in the TLS Secret (the names `svc certs node --name` writes). */
export const nodeCertFile = (pod: string): string => `${pod}.crt`;
export const nodeKeyFile = (pod: string): string => `${pod}.key`;

/** API_CERT_NAME is the API certificate's base name in the certs directory (`svc certs api --name api`). */
export const API_CERT_NAME = 'api';

/**
 * apiDnsNames are the names the API certificate must cover: the client Service's (short and full) and every pod's
 * under the peers Service (the wildcard: peers' status polls, and a client that picks a pod).
 */
export function apiDnsNames(names: DeploymentNames): string[] {
  const service = names.clientService;
  return [
    service,
    `${service}.${names.namespace}`,
    `${service}.${names.namespace}.svc`,
    `${service}.${names.namespace}.svc.${names.clusterDomain}`,
    `*.${names.peersService}.${names.namespace}.svc.${names.clusterDomain}`,
  ];
}
