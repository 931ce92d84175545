// Which cluster a node belongs to, settled once at start from what it was given: its config's
// clusterId, the cluster id in its own peer certificate, and the id its data directory recorded at its
// first start. All that are present must agree; the result is recorded in the data directory, so a
// data directory from one cluster is never started as a member of another (etcd keeps its member's
// cluster id the same way).
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CLUSTER_ID } from '../../transports/grpc/peer-identity.js';
import { ConfigError } from './config.js';

/** CLUSTER_ID_FILE is the file in the data directory that records the node's cluster id. */
export const CLUSTER_ID_FILE = 'cluster-id';

export interface ClusterIdSources {
  /** configured is NodeConfig.clusterId. */
  configured: string | undefined;
  /** fromCertificate is the cluster id in the node's own peer certificate (mutual TLS). */
  fromCertificate: string | undefined;
  dataDir: string;
}

/** settleClusterId returns the node's cluster id ('' when nothing names one) and records it in the data directory. */
export async function settleClusterId(sources: ClusterIdSources): Promise<string> {
  const path = join(sources.dataDir, CLUSTER_ID_FILE);
  const recorded = await readRecorded(path);
  const named: Array<[string, string]> = [];
  if (sources.configured !== undefined) named.push(['clusterId in the config', sources.configured]);
  if (sources.fromCertificate !== undefined) named.push(['the node certificate', sources.fromCertificate]);
  if (recorded !== undefined) named.push([`the data directory (${path})`, recorded]);
  const [first, ...rest] = named;
  if (!first) return '';
  for (const [where, id] of rest) {
    if (id !== first[1])
      throw new ConfigError(
        `${first[0]} names cluster ${first[1]} but ${where} names cluster ${id}; a node belongs to one cluster`,
      );
  }
  if (recorded === undefined) {
    const temp = `${path}.tmp-${process.pid}`;
    await writeFile(temp, `${first[1]}\n`, { mode: 0o644 });
    await rename(temp, path);
  }
  return first[1];
}

async function readRecorded(path: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`cannot read ${path}: ${(err as Error).message}`);
  }
  const id = text.trim();
  if (!CLUSTER_ID.test(id)) throw new ConfigError(`${path} holds ${JSON.stringify(id.slice(0, 64))}, not a cluster id`);
  return id;
}
