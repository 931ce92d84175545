// clusterFetch is fetch for a local cluster's HTTP ports: they serve HTTPS with a certificate from the cluster's
// own CA (cluster.json's tls.caFile), which no system trust store holds, so it uses an undici Agent (undici is the
// fetch node ships) that trusts that CA alone.
import { readFile } from 'node:fs/promises';
import { Agent, fetch as undiciFetch, type RequestInit, type Response } from 'undici';
import type { ClusterFile } from './cluster-file.js';
import { UsageError } from './usage.js';

export interface ClusterFetch {
  fetch(url: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export async function clusterFetch(cluster: Pick<ClusterFile, 'tls'>): Promise<ClusterFetch> {
  if (cluster.tls.mode !== 'mtls') return { fetch: (url, init) => undiciFetch(url, init), close: async () => {} };
  let ca: Buffer;
  try {
    ca = await readFile(cluster.tls.caFile);
  } catch (err) {
    throw new UsageError(`cannot read the cluster CA ${cluster.tls.caFile}: ${(err as Error).message}`);
  }
  const agent = new Agent({ connect: { ca } });
  return {
    fetch: (url, init) => undiciFetch(url, { ...init, dispatcher: agent }),
    close: () => agent.close(),
  };
}
