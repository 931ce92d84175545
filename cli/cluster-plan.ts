// The local cluster's layout under its directory (default .cluster/):
//
//   cluster.json            the cluster id, members (name, id, addresses, pid), TLS files, the admin API key
//   certs/                  ca.crt/ca.key, NAME.crt/NAME.key per node (peer certificates),
//                           admin.crt/admin.key (the CLI's admin certificate), api.crt/api.key (every
//                           node's HTTPS certificate: localhost, 127.0.0.1)
//   secret.key              the API's credential key (with --api), made once
//   NAME/node.json          the node's config (`svc node --config` reads it); rewritten every run
//   NAME/data/              the node's data directory
//   NAME/node.log           the node's JSON log and its stderr
//
// Ports are picked on the first run and kept in cluster.json: a founder's roster is fixed, so a
// restart must reuse them.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  createAdminCert,
  createApiCert,
  createClusterCa,
  createNodeCert,
  newClusterId,
  readCertIdentity,
} from './certs/certs.js';
import type { BootstrapMember, LogLevel, NodeApiConfig } from './node/config.js';
import {
  CLUSTER_FILE_VERSION,
  type ClusterFile,
  type ClusterMemberRecord,
  type ClusterTlsRecord,
} from './cluster-file.js';
import { freePorts, portIsFree } from './free-ports.js';
import type { NodeConfigWithApi } from './node-config.js';
import { UsageError } from './usage.js';

/** CLUSTER_HOST is where every local node listens and is dialled. */
export const CLUSTER_HOST = '127.0.0.1';
/** CLUSTER_TLS_SERVER_NAME is the name peers check: the node certificates name localhost and 127.0.0.1. */
export const CLUSTER_TLS_SERVER_NAME = 'localhost';
export const ADMIN_CERT_NAME = 'admin';
/** API_CERT_NAME is the HTTP port's certificate, shared by the local nodes (they all listen on 127.0.0.1). */
export const API_CERT_NAME = 'api';
const PEERS_SERVICE = 'peers';
const NAMESPACE = 'local';
const PORT_MAX = 65_535;

export interface ClusterOptions {
  dir: string;
  nodeCount: number;
  tickMs: number;
  basePort: number | null;
  insecure: boolean;
  api: boolean;
  logLevel: LogLevel;
}

export function memberNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `n${i + 1}`);
}

/** planCluster reuses the layout in an existing cluster.json, or lays a new one out. */
export async function planCluster(options: ClusterOptions, existing: ClusterFile | null): Promise<ClusterFile> {
  if (existing) {
    if (existing.members.length !== options.nodeCount) {
      throw new UsageError(
        `${options.dir} holds a ${existing.members.length}-node cluster; remove the directory to start a ${options.nodeCount}-node one`,
      );
    }
    if ((existing.tls.mode === 'insecure') !== options.insecure) {
      throw new UsageError(
        `${options.dir} holds a cluster made ${existing.tls.mode === 'insecure' ? 'with' : 'without'} --insecure; remove the directory to change that`,
      );
    }
    // A cluster.json from before cluster ids gets one now (ensureCertificates re-issues its certificates); one
    // from before HTTPS gets https:// HTTP addresses, the API certificate and metrics ports.
    const metricsPorts = existing.members.every((member) => member.metricsAddr !== undefined)
      ? []
      : await freePorts(existing.members.length, CLUSTER_HOST);
    const members = existing.members.map((member, i) => ({
      ...member,
      httpAddr: options.insecure ? member.httpAddr : member.httpAddr.replace(/^http:\/\//, 'https://'),
      metricsAddr: member.metricsAddr ?? `http://${CLUSTER_HOST}:${metricsPorts[i]!}`,
    }));
    return {
      ...existing,
      members,
      tls:
        existing.tls.mode === 'mtls' ? { ...existing.tls, ...apiCertFiles(join(options.dir, 'certs')) } : existing.tls,
      clusterId: existing.clusterId ?? newClusterId(),
      dir: options.dir,
      tickMs: options.tickMs,
      api: options.api,
    };
  }
  const names = memberNames(options.nodeCount);
  const ports =
    options.basePort !== null
      ? consecutivePorts(options.basePort, names.length * 3)
      : await freePorts(names.length * 3, CLUSTER_HOST);
  const members: ClusterMemberRecord[] = names.map((name, i) => {
    const nodeDir = join(options.dir, name);
    return {
      name,
      id: i + 1,
      grpcAddr: `${CLUSTER_HOST}:${ports[3 * i]!}`,
      httpAddr: `${options.insecure ? 'http' : 'https'}://${CLUSTER_HOST}:${ports[3 * i + 1]!}`,
      metricsAddr: `http://${CLUSTER_HOST}:${ports[3 * i + 2]!}`,
      dataDir: join(nodeDir, 'data'),
      configFile: join(nodeDir, 'node.json'),
      logFile: join(nodeDir, 'node.log'),
      pid: 0,
    };
  });
  const certs = join(options.dir, 'certs');
  const tls: ClusterTlsRecord = options.insecure
    ? { mode: 'insecure' }
    : {
        mode: 'mtls',
        caFile: join(certs, 'ca.crt'),
        adminCertFile: join(certs, `${ADMIN_CERT_NAME}.crt`),
        adminKeyFile: join(certs, `${ADMIN_CERT_NAME}.key`),
        serverName: CLUSTER_TLS_SERVER_NAME,
        ...apiCertFiles(certs),
      };
  return {
    version: CLUSTER_FILE_VERSION,
    dir: options.dir,
    tickMs: options.tickMs,
    clusterId: newClusterId(),
    tls,
    members,
    api: options.api,
    updatedAt: new Date().toISOString(),
  };
}

function apiCertFiles(certs: string): { apiCertFile: string; apiKeyFile: string } {
  return { apiCertFile: join(certs, `${API_CERT_NAME}.crt`), apiKeyFile: join(certs, `${API_CERT_NAME}.key`) };
}

function consecutivePorts(base: number, count: number): number[] {
  if (base + count - 1 > PORT_MAX) throw new UsageError(`--base-port ${base} leaves no room for ${count} ports`);
  return Array.from({ length: count }, (_, i) => base + i);
}

/** busyPorts names the planned ports something else already holds (another cluster still running?). */
export async function busyPorts(cluster: ClusterFile): Promise<string[]> {
  const busy: string[] = [];
  for (const m of cluster.members) {
    const urls = [m.httpAddr, ...(m.metricsAddr === undefined ? [] : [m.metricsAddr])];
    for (const address of [m.grpcAddr, ...urls.map((url) => url.replace(/^https?:\/\//, ''))]) {
      const port = Number(address.slice(address.lastIndexOf(':') + 1));
      if (!(await portIsFree(port, CLUSTER_HOST))) busy.push(`${m.name} ${address}`);
    }
  }
  return busy;
}

/**
 * ensureCertificates makes the CA, each node's peer certificate and the CLI's admin certificate, where
 * missing or not naming this cluster and role (a certificate from before cluster ids is re-issued).
 */
export async function ensureCertificates(cluster: ClusterFile): Promise<string[]> {
  if (cluster.tls.mode !== 'mtls') return [];
  const clusterId = clusterIdOf(cluster);
  const certs = join(cluster.dir, 'certs');
  const made: string[] = [];
  if (!existsSync(join(certs, 'ca.crt'))) {
    await createClusterCa({ dir: certs, commonName: 'svc-local-cluster-ca' });
    made.push('ca');
  }
  const wanted = [
    ...cluster.members.map((m) => ({ name: m.name, role: 'peer' as const })),
    { name: ADMIN_CERT_NAME, role: 'admin' as const },
  ];
  for (const { name, role } of wanted) {
    if (existsSync(join(certs, `${name}.key`))) {
      const identity = await readCertIdentity(join(certs, `${name}.crt`));
      if (
        typeof identity !== 'string' &&
        identity.role === role &&
        identity.clusterId === clusterId &&
        identity.name === name
      )
        continue;
    }
    if (role === 'peer')
      await createNodeCert({
        dir: certs,
        name,
        clusterId,
        peersService: PEERS_SERVICE,
        namespace: NAMESPACE,
        overwrite: true,
      });
    else await createAdminCert({ dir: certs, name, clusterId, overwrite: true });
    made.push(name);
  }
  if (!existsSync(join(certs, `${API_CERT_NAME}.key`)) || !existsSync(join(certs, `${API_CERT_NAME}.crt`))) {
    await createApiCert({
      dir: certs,
      name: API_CERT_NAME,
      dnsNames: [CLUSTER_TLS_SERVER_NAME],
      ipAddresses: [CLUSTER_HOST],
      overwrite: true,
    });
    made.push(API_CERT_NAME);
  }
  return made;
}

function clusterIdOf(cluster: ClusterFile): string {
  if (cluster.clusterId === undefined) throw new Error('the cluster plan has no cluster id');
  return cluster.clusterId;
}

/** ensureSecretKey makes the API's 32-byte credential key once (hex, 0600). */
export async function ensureSecretKey(cluster: ClusterFile): Promise<string> {
  const path = join(cluster.dir, 'secret.key');
  if (!existsSync(path)) await writeFile(path, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  return path;
}

/** nodeConfigFor is one member's config: loopback addresses, the shared founder list, its certificate. */
export function nodeConfigFor(
  cluster: ClusterFile,
  member: ClusterMemberRecord,
  extra: { logLevel: LogLevel; api: NodeApiConfig | null },
): NodeConfigWithApi {
  const bootstrap: BootstrapMember[] = cluster.members.map((m) => ({
    name: m.name,
    grpcAddr: m.grpcAddr,
    httpAddr: m.httpAddr,
  }));
  const certs = join(cluster.dir, 'certs');
  return {
    name: member.name,
    dataDir: member.dataDir,
    grpcListen: member.grpcAddr,
    httpListen: member.httpAddr.replace(/^https?:\/\//, ''),
    ...(member.metricsAddr === undefined ? {} : { metricsListen: member.metricsAddr.replace(/^https?:\/\//, '') }),
    bootstrap,
    ...(cluster.clusterId === undefined ? {} : { clusterId: cluster.clusterId }),
    tls:
      cluster.tls.mode === 'mtls'
        ? {
            mode: 'mtls',
            caFile: cluster.tls.caFile,
            certFile: join(certs, `${member.name}.crt`),
            keyFile: join(certs, `${member.name}.key`),
            serverNameOverride: cluster.tls.serverName,
          }
        : { mode: 'insecure' },
    // --insecure makes the whole node plaintext; otherwise the HTTP port serves HTTPS with the API certificate.
    ...(cluster.tls.mode === 'mtls'
      ? {
          httpTls: {
            mode: 'https' as const,
            certFile: cluster.tls.apiCertFile ?? join(certs, `${API_CERT_NAME}.crt`),
            keyFile: cluster.tls.apiKeyFile ?? join(certs, `${API_CERT_NAME}.key`),
          },
        }
      : {}),
    tickMs: cluster.tickMs,
    logLevel: extra.logLevel,
    ...(extra.api ? { api: extra.api } : {}),
  };
}

export async function writeNodeConfig(member: ClusterMemberRecord, config: NodeConfigWithApi): Promise<void> {
  await mkdir(join(member.configFile, '..'), { recursive: true });
  // 0600: the config may carry the Redis URL with its password.
  await writeFile(member.configFile, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(member.configFile, 0o600);
}
