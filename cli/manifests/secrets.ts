// The deployment's Secrets, built from a `svc certs` output directory: the cluster CA certificate and every
// node's peer pair (never ca.key, and no admin certificate unless the backup CronJob's is asked for with
// backupAdmin: the others stay with the operator), the developer API's credential key and Redis' password. The key and the password are made once, kept 0600 in that
// directory, and reused: a new API key would make every stored credential unreadable.
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { pemIdentity } from '../../transports/grpc/peer-identity.js';
import { parseSecretKey } from '../../api/secret-key.js';
import { CA_CERT_FILE } from '../certs/certs.js';
import {
  API_CERT_NAME,
  apiDnsNames,
  deploymentNames,
  nodeCertFile,
  nodeKeyFile,
  podHost,
  podName,
  redisHost,
  REDIS_PORT,
  SECRET_KEYS,
  type DeploymentNames,
} from './layout.js';
import { ManifestError, REDIS_MODES, type RedisMode } from './render.js';
import { REDIS_SENTINEL_REPLICAS_DEFAULT, sentinelRedisUrl } from './redis-sentinel.js';
import { parseRedisUrl, RedisUrlError } from '../../api/redis/redis-target.js';

/** Files kept beside the certificates (0600), made on first use. */
export const API_SECRET_KEY_FILE = 'api-secret-key';
export const REDIS_PASSWORD_FILE = 'redis-password';
export const REDIS_SENTINEL_PASSWORD_FILE = 'redis-sentinel-password';
const SECRET_FILE_MODE = 0o600;
/** REDIS_PASSWORD_BYTES: 32 random bytes, hex (no character a URL or redis.conf would need escaped). */
const REDIS_PASSWORD_BYTES = 32;
const REDIS_PASSWORD = /^[0-9a-f]{32,128}$/;

export interface SecretOptions {
  /** certsDir is the `svc certs --out` directory: ca.crt and <pod>.crt/.key for each pod. */
  certsDir: string;
  namespace: string;
  name?: string;
  clusterDomain?: string;
  /** replicas: the pods whose pairs go in (<name>-0 … <name>-(replicas-1)); issue ahead for planned scale-ups. */
  replicas: number;
  /** clusterId, when given, must be the one every certificate names. */
  clusterId?: string;
  /** backupAdmin names an admin certificate (<name>.crt/.key) for the backup CronJob's Secret; absent: none. */
  backupAdmin?: string;
  /**
   * apiTls 'secret' (default) puts DIR's api.crt/api.key (`svc certs api`) in the API TLS Secret; 'cert-manager'
   * leaves that Secret to cert-manager (render --api-tls cert-manager).
   */
  apiTls?: 'secret' | 'cert-manager';
  /** redis and redisReplicas must be render's (--redis, --redis-replicas): the URL names what render made. */
  redis?: RedisMode;
  redisReplicas?: number;
  /** redisUrl is the API's Redis with --redis external (redis://, rediss:// or redis+sentinel://). */
  redisUrl?: string;
}

async function readText(path: string, what: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new ManifestError(`cannot read ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** keptSecret reads a secret file made earlier, or makes it (0600) with make(); check refuses a malformed one. */
async function keptSecret(path: string, make: () => string, check: (text: string) => void): Promise<string> {
  let exists = true;
  try {
    await stat(path);
  } catch {
    exists = false;
  }
  if (!exists) {
    // wx: two runs at once never both write (the second fails and says so).
    await writeFile(path, `${make()}\n`, { mode: SECRET_FILE_MODE, flag: 'wx' });
    await chmod(path, SECRET_FILE_MODE);
  }
  const text = (await readText(path, 'secret file')).trim();
  try {
    check(text);
  } catch (err) {
    // The message never holds the value.
    throw new ManifestError(`${path}: ${(err as Error).message}`);
  }
  return text;
}

/** checkNodePair: a node's certificate is its own peer certificate, of this cluster, for these DNS names. */
function checkNodePair(
  names: DeploymentNames,
  pod: string,
  certPem: string,
  keyPem: string,
  caPem: string,
  clusterId: string | undefined,
): string {
  const where = `${pod}'s certificate`;
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) throw new Error(`${nodeKeyFile(pod)} is not its key`);
    if (!cert.checkIssued(new X509Certificate(caPem))) throw new Error(`it is not issued by ${CA_CERT_FILE}`);
  } catch (err) {
    throw new ManifestError(`${where}: ${(err as Error).message}`);
  }
  const identity = pemIdentity(certPem);
  if (typeof identity === 'string') throw new ManifestError(`${where}: ${identity}`);
  if (identity.role !== 'peer' || identity.name !== pod)
    throw new ManifestError(
      `${where} is a ${identity.role} certificate of ${identity.name}, not ${pod}'s peer certificate`,
    );
  if (clusterId !== undefined && identity.clusterId !== clusterId)
    throw new ManifestError(`${where} names cluster ${identity.clusterId}, not ${clusterId}`);
  const host = podHost(names, pod);
  if (cert.checkHost(host) === undefined)
    throw new ManifestError(
      `${where} does not cover ${host}: issue it with --peers-service ${names.peersService} --namespace ${names.namespace}`,
    );
  return identity.clusterId;
}

/** checkAdminPair: the backup's certificate is an admin certificate of this cluster, with its key, from the CA. */
function checkAdminPair(
  name: string,
  certPem: string,
  keyPem: string,
  caPem: string,
  clusterId: string | undefined,
): void {
  const where = `the backup admin certificate ${name}.crt`;
  try {
    const cert = new X509Certificate(certPem);
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) throw new Error(`${name}.key is not its key`);
    if (!cert.checkIssued(new X509Certificate(caPem))) throw new Error(`it is not issued by ${CA_CERT_FILE}`);
  } catch (err) {
    throw new ManifestError(`${where}: ${(err as Error).message}`);
  }
  const identity = pemIdentity(certPem);
  if (typeof identity === 'string') throw new ManifestError(`${where}: ${identity}`);
  if (identity.role !== 'admin')
    throw new ManifestError(`${where} is a ${identity.role} certificate; issue one with \`svc certs admin\``);
  if (clusterId !== undefined && identity.clusterId !== clusterId)
    throw new ManifestError(`${where} names cluster ${identity.clusterId}, not ${clusterId}`);
}

/** checkApiPair: the API certificate is issued by the cluster CA, matches its key and covers every API name. */
function checkApiPair(names: DeploymentNames, certPem: string, keyPem: string, caPem: string): void {
  const issue = `issue it with \`svc certs api --out DIR ${apiDnsNames(names)
    .map((name) => `--dns '${name}'`)
    .join(' ')}\``;
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) throw new Error(`${API_CERT_NAME}.key is not its key`);
    if (!cert.checkIssued(new X509Certificate(caPem))) throw new Error(`it is not issued by ${CA_CERT_FILE}`);
  } catch (err) {
    throw new ManifestError(`the API certificate: ${(err as Error).message}`);
  }
  for (const host of [apiDnsNames(names)[3]!, podHost(names, podName(names, 0))]) {
    if (cert.checkHost(host) === undefined)
      throw new ManifestError(`the API certificate does not cover ${host}: ${issue}`);
  }
}

const base64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');

/** buildSecrets reads and checks the directory and returns the three Secrets (values base64, as Kubernetes keeps them). */
export async function buildSecrets(options: SecretOptions): Promise<V1Secret[]> {
  const names = deploymentNames(options);
  if (!Number.isSafeInteger(options.replicas) || options.replicas < 1)
    throw new ManifestError('replicas must be a positive whole number');
  const caPem = await readText(join(options.certsDir, CA_CERT_FILE), 'the CA certificate');
  const tls: Record<string, string> = { [SECRET_KEYS.caCert]: base64(caPem) };
  let clusterId = options.clusterId;
  for (let ordinal = 0; ordinal < options.replicas; ordinal++) {
    const pod = podName(names, ordinal);
    const certPem = await readText(join(options.certsDir, nodeCertFile(pod)), `${pod}'s certificate`);
    const keyPem = await readText(join(options.certsDir, nodeKeyFile(pod)), `${pod}'s key`);
    clusterId = checkNodePair(names, pod, certPem, keyPem, caPem, clusterId);
    tls[nodeCertFile(pod)] = base64(certPem);
    tls[nodeKeyFile(pod)] = base64(keyPem);
  }
  const apiKey = await keptSecret(
    join(options.certsDir, API_SECRET_KEY_FILE),
    () => randomBytes(32).toString('hex'),
    (text) => void parseSecretKey(text),
  );
  const redis = await redisSecrets(options, names);
  let apiTls: Record<string, string> | null = null;
  if (options.apiTls !== 'cert-manager') {
    const certPem = await readText(join(options.certsDir, `${API_CERT_NAME}.crt`), 'the API certificate');
    const keyPem = await readText(join(options.certsDir, `${API_CERT_NAME}.key`), 'the API key');
    checkApiPair(names, certPem, keyPem, caPem);
    apiTls = {
      [SECRET_KEYS.tlsCert]: base64(certPem),
      [SECRET_KEYS.tlsKey]: base64(keyPem),
      [SECRET_KEYS.caCert]: base64(caPem),
    };
  }
  const secret = (name: string, data: Record<string, string>, type = 'Opaque'): V1Secret => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: names.namespace, labels: { 'app.kubernetes.io/instance': names.statefulSet } },
    type,
    data,
  });
  const backup: V1Secret[] = [];
  if (options.backupAdmin !== undefined) {
    const name = options.backupAdmin;
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/.test(name))
      throw new ManifestError(`backup admin ${JSON.stringify(name)} is not a certificate name`);
    const certPem = await readText(join(options.certsDir, `${name}.crt`), 'the backup admin certificate');
    const keyPem = await readText(join(options.certsDir, `${name}.key`), 'the backup admin key');
    checkAdminPair(name, certPem, keyPem, caPem, clusterId);
    backup.push(
      secret(names.backupAdminSecret, {
        [SECRET_KEYS.caCert]: base64(caPem),
        [SECRET_KEYS.backupAdminCert]: base64(certPem),
        [SECRET_KEYS.backupAdminKey]: base64(keyPem),
      }),
    );
  }
  return [
    secret(names.tlsSecret, tls),
    ...(apiTls ? [secret(names.apiTlsSecret, apiTls, 'kubernetes.io/tls')] : []),
    secret(names.apiSecret, {
      [SECRET_KEYS.apiSecretKey]: base64(`${apiKey}\n`),
      [SECRET_KEYS.redisUrl]: base64(redis.url),
    }),
    ...(redis.auth === null ? [] : [secret(names.redisAuthSecret, redis.auth)]),
    ...backup,
  ];
}

const keptPassword = (certsDir: string, file: string): Promise<string> =>
  keptSecret(
    join(certsDir, file),
    () => randomBytes(REDIS_PASSWORD_BYTES).toString('hex'),
    (text) => {
      if (!REDIS_PASSWORD.test(text)) throw new Error('not a password this command made (32-128 hex digits)');
    },
  );

/**
 * redisSecrets: the API's Redis URL and the Redis pods' auth Secret (base64 values; null when the Redis is
 * external, whose passwords are its operator's and travel only inside the URL).
 */
async function redisSecrets(
  options: SecretOptions,
  names: DeploymentNames,
): Promise<{ url: string; auth: Record<string, string> | null }> {
  const mode = options.redis ?? 'single';
  if (!REDIS_MODES.includes(mode))
    throw new ManifestError(`redis ${JSON.stringify(mode)} must be one of ${REDIS_MODES.join(', ')}`);
  if ((options.redisUrl !== undefined) !== (mode === 'external'))
    throw new ManifestError('a Redis URL goes with redis external, and redis external needs one');
  if (options.redisReplicas !== undefined && mode !== 'sentinel')
    throw new ManifestError('redis replicas need redis sentinel');
  if (mode === 'external') {
    try {
      parseRedisUrl(options.redisUrl!);
    } catch (err) {
      if (err instanceof RedisUrlError) throw new ManifestError(`the Redis URL: ${err.message}`);
      throw err;
    }
    return { url: options.redisUrl!, auth: null };
  }
  const password = await keptPassword(options.certsDir, REDIS_PASSWORD_FILE);
  if (mode === 'single') {
    return {
      url: `redis://:${password}@${redisHost(names)}:${REDIS_PORT}`,
      auth: {
        [SECRET_KEYS.redisAuthConf]: base64(`requirepass ${password}\n`),
        [SECRET_KEYS.redisPassword]: base64(password),
      },
    };
  }
  const sentinelPassword = await keptPassword(options.certsDir, REDIS_SENTINEL_PASSWORD_FILE);
  const replicas = options.redisReplicas ?? REDIS_SENTINEL_REPLICAS_DEFAULT;
  return {
    url: sentinelRedisUrl(names, replicas, password, sentinelPassword),
    auth: {
      [SECRET_KEYS.redisPassword]: base64(password),
      [SECRET_KEYS.redisSentinelPassword]: base64(sentinelPassword),
    },
  };
}
