// Three etcd members (Debian's etcd-server, not installed by the bench) on loopback, driven through
// their v3 HTTP/JSON gateway: POST /v3/kv/put with base64 key and value, keep-alive connections.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { freePorts, waitUntil } from './ports.js';

/** ETCD_START_TIMEOUT_MS bounds three members electing a leader. */
const ETCD_START_TIMEOUT_MS = 30_000;
const ETCD_STOP_GRACE_MS = 5_000;
const ETCD_REQUEST_TIMEOUT_MS = 10_000;

/** etcdVersion is `etcd --version`'s first line, or null when etcd is not on the PATH. */
export function etcdVersion(): string | null {
  const result = spawnSync('etcd', ['--version'], { encoding: 'utf8' });
  if (result.error || result.status !== 0) return null;
  return result.stdout.split('\n')[0]?.trim() ?? 'etcd';
}

export interface EtcdCluster {
  leaderClientUrl: string;
  /** clientUrls are every member's client URL (HTTP/JSON gateway and gRPC on one port), in member order. */
  clientUrls: string[];
  /** pids are the members' process ids. */
  pids: number[];
  put(key: string, value: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startEtcd(dir: string, memberCount: number, connectionCountMax: number): Promise<EtcdCluster> {
  const ports = await freePorts(memberCount * 2);
  const members = Array.from({ length: memberCount }, (_, i) => ({
    name: `e${i + 1}`,
    clientUrl: `http://127.0.0.1:${ports[2 * i]!}`,
    peerUrl: `http://127.0.0.1:${ports[2 * i + 1]!}`,
  }));
  const initialCluster = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
  const procs: ChildProcess[] = members.map((m) =>
    spawn(
      'etcd',
      [
        '--name',
        m.name,
        '--data-dir',
        join(dir, m.name),
        '--listen-client-urls',
        m.clientUrl,
        '--advertise-client-urls',
        m.clientUrl,
        '--listen-peer-urls',
        m.peerUrl,
        '--initial-advertise-peer-urls',
        m.peerUrl,
        '--initial-cluster',
        initialCluster,
        '--initial-cluster-state',
        'new',
        '--initial-cluster-token',
        'svc-bench',
        '--logger',
        'zap',
        '--log-level',
        'error',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    ),
  );
  const agent = new Agent({ keepAlive: true, maxSockets: connectionCountMax });
  const stop = async (): Promise<void> => {
    agent.destroy();
    await Promise.all(
      procs.map(
        (proc) =>
          new Promise<void>((resolve) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
            const timer = setTimeout(() => proc.kill('SIGKILL'), ETCD_STOP_GRACE_MS);
            proc.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            proc.kill('SIGTERM');
          }),
      ),
    );
  };
  try {
    let leaderClientUrl = '';
    await waitUntil(
      async () => {
        for (const m of members) {
          const answer = await post(agent, `${m.clientUrl}/v3/maintenance/status`, '{}').catch(() => '{}');
          const status = JSON.parse(answer) as { header?: { member_id?: string }; leader?: string };
          if (status.leader && status.leader !== '0' && status.header?.member_id === status.leader) {
            leaderClientUrl = m.clientUrl;
            return true;
          }
        }
        return false;
      },
      'etcd to elect a leader',
      ETCD_START_TIMEOUT_MS,
    );
    return {
      leaderClientUrl,
      clientUrls: members.map((m) => m.clientUrl),
      pids: procs.map((p) => p.pid ?? 0),
      put: async (key, value) => {
        const body = JSON.stringify({
          key: Buffer.from(key).toString('base64'),
          value: Buffer.from(value).toString('base64'),
        });
        const answer = await post(agent, `${leaderClientUrl}/v3/kv/put`, body);
        if (!answer.includes('"header"')) throw new Error(`etcd put answered ${answer.slice(0, 200)}`);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

function post(agent: Agent, url: string, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        timeout: ETCD_REQUEST_TIMEOUT_MS,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(text)
            : reject(new Error(`${url} answered ${res.statusCode}: ${text.slice(0, 200)}`)),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}
