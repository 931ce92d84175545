// .cluster/cluster.json: what `svc cluster` writes about the local cluster it runs, and what the
// admin commands read to find it (addresses, the admin client certificate, the admin API key).
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { CLUSTER_FILE_BYTES_MAX } from './limits.js';
import { UsageError } from './usage.js';

export const CLUSTER_FILE_NAME = 'cluster.json';
export const CLUSTER_FILE_VERSION = 1;

export interface ClusterMemberRecord {
  name: string;
  /** id is the member id (founders are 1..n in roster order); 0 until the node has answered /status. */
  id: number;
  grpcAddr: string;
  /** httpAddr is the node's HTTP port: https://127.0.0.1:PORT (its certificate chains to tls.caFile), http:// with --insecure. */
  httpAddr: string;
  /** metricsAddr is the node's metrics listener, http://127.0.0.1:PORT (/metrics, /status); added to older files. */
  metricsAddr?: string;
  dataDir: string;
  configFile: string;
  logFile: string;
  /** pid is the node's process id while `svc cluster` runs it (0 when stopped). */
  pid: number;
}

/**
 * ClusterTlsRecord: under mTLS, caFile is the cluster CA, which the peers' certificates, the admin certificate and
 * the HTTP API's certificate (apiCertFile, one for every node, naming localhost and 127.0.0.1) chain to.
 */
export type ClusterTlsRecord =
  | {
      mode: 'mtls';
      caFile: string;
      adminCertFile: string;
      adminKeyFile: string;
      serverName: string;
      apiCertFile?: string;
      apiKeyFile?: string;
    }
  | { mode: 'insecure' };

export interface ClusterFile {
  version: number;
  /** dir is the cluster directory (absolute); every path below is absolute too. */
  dir: string;
  tickMs: number;
  /** clusterId names the cluster in its certificates and its peer calls (made at creation; added to older files). */
  clusterId?: string;
  tls: ClusterTlsRecord;
  members: ClusterMemberRecord[];
  /** api says whether the nodes serve the developer API; adminKey is its first admin key (shown once at creation). */
  api: boolean;
  adminKey?: string;
  updatedAt: string;
}

export async function readClusterFile(path: string): Promise<ClusterFile> {
  let text: string;
  try {
    const info = await stat(path);
    if (info.size > CLUSTER_FILE_BYTES_MAX) throw new Error(`larger than ${CLUSTER_FILE_BYTES_MAX} bytes`);
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read cluster file ${path}: ${(err as Error).message}`);
  }
  let parsed: ClusterFile;
  try {
    parsed = JSON.parse(text) as ClusterFile;
  } catch (err) {
    throw new UsageError(`cluster file ${path} is not JSON: ${(err as Error).message}`);
  }
  if (
    parsed?.version !== CLUSTER_FILE_VERSION ||
    !Array.isArray(parsed.members) ||
    typeof parsed.tls !== 'object' ||
    parsed.tls === null
  ) {
    throw new UsageError(`cluster file ${path} is not a version ${CLUSTER_FILE_VERSION} cluster.json`);
  }
  for (const [i, m] of parsed.members.entries()) {
    if (typeof m?.name !== 'string' || typeof m.grpcAddr !== 'string' || typeof m.httpAddr !== 'string')
      throw new UsageError(`cluster file ${path}: members[${i}] lacks name, grpcAddr or httpAddr`);
  }
  return parsed;
}

/** writeClusterFile replaces the file atomically (temp file, rename), so a reader never sees half of it. */
export async function writeClusterFile(path: string, file: ClusterFile): Promise<void> {
  const temp = `${path}.tmp-${process.pid}`;
  await writeFile(temp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, path);
}
