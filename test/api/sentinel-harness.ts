// A Redis that fails over, for tests: one primary, one replica and three sentinels (Debian's redis-server run
// with --sentinel, the same binary the redis-sentinel package starts), all on free loopback ports, each with a
// password in a 0600 config file (never on argv). `url` is the API's redis+sentinel:// URL for it.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freeLoopbackPort } from '../../api/redis/local-redis.js';
import { waitFor } from './harness.js';

/** sentinelPrimaryName is the name the sentinels monitor the primary by. */
export const sentinelPrimaryName = 'svcprimary';
/** sentinelDownAfterMs: how long a silent primary takes to be judged down (kept short for tests). */
const sentinelDownAfterMs = 1_000;
const sentinelFailoverTimeoutMs = 5_000;
const startWaitMs = 20_000;

interface RedisProcess {
  port: number;
  child: ChildProcess;
}

export interface SentinelRedis {
  /** url is redis+sentinel:// with both passwords: the API's REDIS_URL. */
  url: string;
  password: string;
  /** primaryPort is the port of the server the sentinels report as primary now. */
  primaryPort(): Promise<number>;
  /** killPrimary SIGKILLs the server that is primary now and returns its port. */
  killPrimary(): Promise<number>;
  /** restart starts the server of `port` again on its own config (as its supervisor would after a crash). */
  restart(port: number): void;
  /** waitForFailover waits until the sentinels report a primary other than `oldPort`, and that it accepts writes. */
  waitForFailover(oldPort: number, timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

function start(configFile: string, extraArgs: string[]): ChildProcess {
  const child = spawn('redis-server', [configFile, ...extraArgs], { stdio: 'ignore' });
  child.on('error', () => undefined);
  return child;
}

async function pingable(port: number, password: string): Promise<boolean> {
  const client = new Redis({ port, host: '127.0.0.1', password, lazyConnect: true, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

export async function startSentinelRedis(): Promise<SentinelRedis> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-sentinel-'));
  const password = randomBytes(24).toString('hex');
  const sentinelPassword = randomBytes(24).toString('hex');
  const servers: Array<RedisProcess & { configFile: string }> = [];
  const sentinels: RedisProcess[] = [];
  const serverConfig = (name: string, port: number, replicaOf?: number): string => {
    const file = path.join(dir, `${name}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `dbfilename ${name}.rdb`,
        'save ""',
        'appendonly no',
        `requirepass ${password}`,
        `masterauth ${password}`,
        ...(replicaOf !== undefined ? [`replicaof 127.0.0.1 ${replicaOf}`] : []),
      ].join('\n') + '\n',
      { mode: 0o600 },
    );
    return file;
  };
  const sentinelConfig = (index: number, port: number, primaryPort: number): string => {
    const file = path.join(dir, `sentinel-${index}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `requirepass ${sentinelPassword}`,
        `sentinel sentinel-pass ${sentinelPassword}`,
        `sentinel monitor ${sentinelPrimaryName} 127.0.0.1 ${primaryPort} 2`,
        `sentinel auth-pass ${sentinelPrimaryName} ${password}`,
        `sentinel down-after-milliseconds ${sentinelPrimaryName} ${sentinelDownAfterMs}`,
        `sentinel failover-timeout ${sentinelPrimaryName} ${sentinelFailoverTimeoutMs}`,
        `sentinel parallel-syncs ${sentinelPrimaryName} 1`,
      ].join('\n') + '\n',
      { mode: 0o600 },
    );
    return file;
  };

  const stop = async (): Promise<void> => {
    for (const { child } of [...sentinels, ...servers]) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const primaryPort = await freeLoopbackPort();
    const primaryConfig = serverConfig('primary', primaryPort);
    servers.push({ port: primaryPort, configFile: primaryConfig, child: start(primaryConfig, []) });
    await waitFor(() => pingable(primaryPort, password), Boolean, startWaitMs);
    const replicaPort = await freeLoopbackPort();
    const replicaConfig = serverConfig('replica', replicaPort, primaryPort);
    servers.push({ port: replicaPort, configFile: replicaConfig, child: start(replicaConfig, []) });
    await waitFor(() => pingable(replicaPort, password), Boolean, startWaitMs);
    for (let index = 0; index < 3; index++) {
      const port = await freeLoopbackPort();
      sentinels.push({ port, child: start(sentinelConfig(index, port, primaryPort), ['--sentinel']) });
    }
    const askSentinel = async (port: number, ...args: string[]): Promise<unknown> => {
      const client = new Redis({
        port,
        host: '127.0.0.1',
        password: sentinelPassword,
        lazyConnect: true,
        retryStrategy: () => null,
      });
      client.on('error', () => undefined);
      try {
        await client.connect();
        return await client.call('SENTINEL', ...args);
      } catch {
        return null;
      } finally {
        client.disconnect();
      }
    };
    // Ready when every sentinel knows the replica and the two other sentinels (else a failover cannot reach
    // its quorum), and the replica has caught up with the primary.
    await waitFor(
      async () => {
        for (const sentinel of sentinels) {
          const replicas = (await askSentinel(sentinel.port, 'replicas', sentinelPrimaryName)) as unknown[] | null;
          const peers = (await askSentinel(sentinel.port, 'sentinels', sentinelPrimaryName)) as unknown[] | null;
          if (!replicas || replicas.length !== 1 || !peers || peers.length !== 2) return false;
        }
        return true;
      },
      Boolean,
      startWaitMs,
    );

    const primaryPortNow = async (): Promise<number> => {
      for (const sentinel of sentinels) {
        const address = (await askSentinel(sentinel.port, 'get-master-addr-by-name', sentinelPrimaryName)) as
          [string, string] | null;
        if (address) return Number(address[1]);
      }
      throw new Error('no sentinel answers');
    };
    const hosts = sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(',');
    return {
      url: `redis+sentinel://:${password}@${hosts}/${sentinelPrimaryName}?sentinelPassword=${sentinelPassword}`,
      password,
      primaryPort: primaryPortNow,
      async killPrimary() {
        const port = await primaryPortNow();
        const server = servers.find((candidate) => candidate.port === port)!;
        server.child.kill('SIGKILL');
        await new Promise((resolve) =>
          server.child.exitCode !== null ? resolve(null) : server.child.once('exit', resolve),
        );
        return port;
      },
      restart(port) {
        const server = servers.find((candidate) => candidate.port === port)!;
        // The sentinels see it come back and make it a replica of the new primary.
        server.child = start(server.configFile, []);
      },
      async waitForFailover(oldPort, timeoutMs = 30_000) {
        const port = await waitFor(
          async () => {
            const now = await primaryPortNow().catch(() => oldPort);
            if (now === oldPort) return null;
            const client = new Redis({
              port: now,
              host: '127.0.0.1',
              password,
              lazyConnect: true,
              retryStrategy: () => null,
            });
            client.on('error', () => undefined);
            try {
              await client.connect();
              const role = (await client.call('ROLE')) as unknown[];
              return role[0] === 'master' ? now : null;
            } catch {
              return null;
            } finally {
              client.disconnect();
            }
          },
          (value) => value !== null,
          timeoutMs,
        );
        return port!;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
