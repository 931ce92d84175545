// Which running node the admin commands talk to, and with which credentials: --node and --tls-*
// flags, or a cluster.json (default .cluster/cluster.json) that lists every member and the admin
// client certificate `svc cluster` made. The node's peer server demands a client certificate from
// the cluster CA, so that certificate is the admin surface's authentication.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ChannelCredentials, ChannelOptions } from '@grpc/grpc-js';
import { parseHostPort } from './node/config.js';
import { clientCredentials, insecureClientCredentials } from '../transports/grpc/tls.js';
import { readClusterFile, CLUSTER_FILE_NAME, type ClusterFile } from './cluster-file.js';
import { intFlag, listFlag, stringFlag, type FlagSpec, type FlagValues } from './flags.js';
import { ADMIN_TIMEOUT_MS_DEFAULT, CLUSTER_DIR_DEFAULT } from './limits.js';
import { UsageError } from './usage.js';

export const ADMIN_TARGET_FLAGS: FlagSpec = {
  node: { type: 'string', multiple: true },
  'cluster-file': { type: 'string' },
  'tls-ca': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'tls-server-name': { type: 'string' },
  insecure: { type: 'boolean' },
  'timeout-ms': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
};

const TIMEOUT_MS_MAX = 600_000;

export interface AdminTarget {
  /** addresses are members' gRPC addresses, tried in order. */
  addresses: string[];
  credentials: ChannelCredentials;
  channelOptions: ChannelOptions;
  /** deadlineAt bounds the whole command (ms since the epoch). */
  deadlineAt: number;
  json: boolean;
  /** cluster is the cluster.json the target came from, if any. */
  cluster: ClusterFile | null;
  clusterFilePath: string | null;
}

export function defaultClusterFilePath(): string {
  return resolve(join(CLUSTER_DIR_DEFAULT, CLUSTER_FILE_NAME));
}

export async function adminTarget(values: FlagValues): Promise<AdminTarget> {
  const timeoutMs = intFlag(values, 'timeout-ms', 1, TIMEOUT_MS_MAX) ?? ADMIN_TIMEOUT_MS_DEFAULT;
  const nodes = listFlag(values, 'node');
  for (const node of nodes) {
    try {
      parseHostPort(node, '--node');
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  const explicitFile = stringFlag(values, 'cluster-file');
  const clusterFilePath =
    explicitFile !== undefined
      ? resolve(explicitFile)
      : existsSync(defaultClusterFilePath())
        ? defaultClusterFilePath()
        : null;
  const cluster = clusterFilePath === null ? null : await readClusterFile(clusterFilePath);

  const addresses = nodes.length > 0 ? nodes : (cluster?.members.map((m) => m.grpcAddr) ?? []);
  if (addresses.length === 0) {
    throw new UsageError(
      `no node to talk to: give --node HOST:PORT, or --cluster-file (none at ${defaultClusterFilePath()}; \`svc cluster\` writes one)`,
    );
  }

  const files = {
    ca: stringFlag(values, 'tls-ca'),
    cert: stringFlag(values, 'tls-cert'),
    key: stringFlag(values, 'tls-key'),
  };
  const anyFile = Object.values(files).some((v) => v !== undefined);
  const serverNameFlag = stringFlag(values, 'tls-server-name');
  let credentials: ChannelCredentials;
  let serverName = serverNameFlag;
  if (values.insecure === true) {
    if (anyFile || serverNameFlag !== undefined)
      throw new UsageError('--insecure cannot be combined with --tls-* flags');
    credentials = insecureClientCredentials();
  } else if (anyFile) {
    const missing = Object.entries(files)
      .filter(([, v]) => v === undefined)
      .map(([k]) => `--tls-${k}`);
    if (missing.length > 0)
      throw new UsageError(
        `a client certificate needs --tls-ca, --tls-cert and --tls-key (missing ${missing.join(', ')})`,
      );
    credentials = await loadCredentials(resolve(files.ca!), resolve(files.cert!), resolve(files.key!));
  } else if (cluster?.tls.mode === 'mtls') {
    credentials = await loadCredentials(cluster.tls.caFile, cluster.tls.adminCertFile, cluster.tls.adminKeyFile);
    serverName ??= cluster.tls.serverName;
  } else if (cluster?.tls.mode === 'insecure') {
    credentials = insecureClientCredentials();
  } else {
    throw new UsageError(
      'say how to reach the node: --tls-ca/--tls-cert/--tls-key (a client certificate from the cluster CA) or --insecure',
    );
  }
  const channelOptions: ChannelOptions =
    serverName === undefined
      ? {}
      : { 'grpc.ssl_target_name_override': serverName, 'grpc.default_authority': serverName };
  return {
    addresses,
    credentials,
    channelOptions,
    deadlineAt: Date.now() + timeoutMs,
    json: values.json === true,
    cluster,
    clusterFilePath,
  };
}

async function loadCredentials(caFile: string, certFile: string, keyFile: string): Promise<ChannelCredentials> {
  const read = async (path: string, what: string): Promise<Buffer> => {
    try {
      return await readFile(path);
    } catch (err) {
      throw new UsageError(`cannot read ${what} ${path}: ${(err as Error).message}`);
    }
  };
  const [ca, cert, key] = await Promise.all([
    read(caFile, 'CA certificate'),
    read(certFile, 'client certificate'),
    read(keyFile, 'client key'),
  ]);
  try {
    return clientCredentials({ ca, cert, key });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}
