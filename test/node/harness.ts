// Test harness for real nodes: free loopback ports, throwaway data directories, cluster
// certificates from cli/certs, bounded polling, and small HTTP helpers.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAdminCert, createClusterCa, createNodeCert, newClusterId } from '../../cli/certs/certs.js';
import type { BootstrapMember, LogLevel, NodeConfig, NodeTls } from '../../cli/node/config.js';
import type { NodeStatusDocument } from '../../transports/node/node-status.js';
import { freePorts } from '../../cli/free-ports.js';

/** POLL_INTERVAL_MS paces every wait: conditions are polled, never slept on. */
export const POLL_INTERVAL_MS = 20;
/** HTTP_TIMEOUT_MS bounds one HTTP request of a test. */
export const HTTP_TIMEOUT_MS = 2_000;
/** TEST_TICK_MS shortens the engine's tick so elections take a few hundred milliseconds. */
export const TEST_TICK_MS = 30;
/** TEST_LOG_LEVEL keeps test output quiet; SVC_TEST_LOG_LEVEL=info shows the nodes' logs. */
export const TEST_LOG_LEVEL = (process.env.SVC_TEST_LOG_LEVEL ?? 'error') as LogLevel;

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `svc-node-${prefix}-`));
}

export async function removeDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** WaitOptions tune waitFor: how often it polls, and whether a condition that throws is retried. */
export interface WaitOptions {
  intervalMs?: number;
  /** swallow retries a condition that throws (naming the last error on timeout); false ends the wait with it. */
  swallow?: boolean;
}

/** waitFor polls condition until it holds, failing after timeoutMs with what it waited for. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
  options: WaitOptions = {},
): Promise<void> {
  const { intervalMs = POLL_INTERVAL_MS, swallow = true } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (;;) {
    try {
      if (await condition()) return;
    } catch (err) {
      if (!swallow) throw err;
      lastError = ` (last error: ${String(err)})`;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export async function httpGet(url: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
  return { status: response.status, text: await response.text() };
}

export async function httpStatus(url: string): Promise<number> {
  try {
    return (await httpGet(url)).status;
  } catch {
    return 0;
  }
}

export type StatusDoc = NodeStatusDocument;

export async function getStatus(httpBase: string): Promise<StatusDoc> {
  const { status, text } = await httpGet(`${httpBase}/status`);
  if (status !== 200) throw new Error(`GET /status answered ${status}: ${text}`);
  return JSON.parse(text) as StatusDoc;
}

/** metricValue reads one sample from Prometheus text, e.g. metricValue(text, 'svc_term'). */
export function metricValue(text: string, name: string, labels = ''): number | undefined {
  const wanted = labels === '' ? `${name} ` : `${name}{${labels}} `;
  const line = text.split('\n').find((l) => l.startsWith(wanted));
  return line === undefined ? undefined : Number(line.slice(wanted.length));
}

/** Pki is a cluster CA with one peer certificate per node name and an admin certificate, all of one cluster id. */
export interface Pki {
  dir: string;
  clusterId: string;
  /** tls is a node's mutual-TLS config with its peer certificate. */
  tls(name: string): NodeTls;
  /** adminTls is the same with the admin certificate (ADMIN_CERT_NAME): what the CLI holds. */
  adminTls(): NodeTls;
}

/** ADMIN_CERT_NAME names the admin certificate makePki issues. */
export const ADMIN_CERT_NAME = 'admin';

export async function makePki(
  dir: string,
  names: string[],
  caName = 'cluster',
  clusterId = newClusterId(),
): Promise<Pki> {
  const caDir = join(dir, caName);
  await createClusterCa({ dir: caDir, commonName: `${caName}-ca` });
  for (const name of names)
    await createNodeCert({ dir: caDir, name, clusterId, peersService: 'peers', namespace: 'test' });
  await createAdminCert({ dir: caDir, name: ADMIN_CERT_NAME, clusterId });
  const tls = (name: string): NodeTls => ({
    mode: 'mtls',
    caFile: join(caDir, 'ca.crt'),
    certFile: join(caDir, `${name}.crt`),
    keyFile: join(caDir, `${name}.key`),
    // Peers dial 127.0.0.1; the certificate names localhost too, which keeps Node from warning about an IP as TLS server name.
    serverNameOverride: 'localhost',
  });
  return { dir: caDir, clusterId, tls, adminTls: () => tls(ADMIN_CERT_NAME) };
}

export interface PlannedNode {
  name: string;
  grpcPort: number;
  httpPort: number;
  metricsPort: number;
  member: BootstrapMember;
}

/** planNodes picks ports and roster entries for founders (they must be known before anyone starts). */
export async function planNodes(names: string[]): Promise<PlannedNode[]> {
  const ports = await freePorts(names.length * 3);
  return names.map((name, i) => {
    const grpcPort = ports[3 * i]!;
    const httpPort = ports[3 * i + 1]!;
    return {
      name,
      grpcPort,
      httpPort,
      metricsPort: ports[3 * i + 2]!,
      member: { name, grpcAddr: `127.0.0.1:${grpcPort}`, httpAddr: `http://127.0.0.1:${httpPort}` },
    };
  });
}

/**
 * nodeConfig is a founder's (bootstrap) or joiner's (seeds) config on loopback. Its HTTP port is plaintext (the
 * node's HTTPS is tested in test/cli/cluster.test.ts and test/cluster-api/); /metrics is on metricsPort.
 */
export function nodeConfig(
  plan: PlannedNode,
  dataDir: string,
  tls: NodeTls,
  cluster: { bootstrap?: BootstrapMember[]; seeds?: string[] },
  extra: Partial<NodeConfig> = {},
): NodeConfig {
  return {
    name: plan.name,
    dataDir,
    grpcListen: `127.0.0.1:${plan.grpcPort}`,
    httpListen: `127.0.0.1:${plan.httpPort}`,
    metricsListen: `127.0.0.1:${plan.metricsPort}`,
    ...cluster,
    tls,
    ...(tls.mode === 'mtls' ? { httpTls: { mode: 'insecure' as const } } : {}),
    tickMs: TEST_TICK_MS,
    logLevel: TEST_LOG_LEVEL,
    processMetrics: false,
    ...extra,
  };
}
