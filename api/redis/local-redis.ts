// startLocalRedis runs a throwaway redis-server on a free loopback port, with no persistence, its files under
// `dir`, and a password generated for it (in its URL): an agent run or any local process that reaches the port
// without the password can do nothing (NOAUTH). Used by tests, `svc cluster` and the server when REDIS_URL is
// unset. It fails loudly when redis-server is absent.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';

/** localRedisStartTimeoutMs bounds how long startup may take before it is declared failed. */
export const localRedisStartTimeoutMs = 10_000;
/** localRedisPortAttemptsMax bounds retries when the probed free port is taken before redis binds it. */
export const localRedisPortAttemptsMax = 5;
const pollIntervalMs = 25;

/** localRedisPasswordBytes is the entropy of a generated password (256 bits, hex in the URL). */
export const localRedisPasswordBytes = 32;

export interface LocalRedis {
  /** url carries the password (`redis://:<password>@127.0.0.1:<port>`): log redactRedisUrl(url), never url. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

export function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

let diesWithParentPrefix: string[] | undefined;

/**
 * diesWithParent is the command prefix that makes a child get SIGTERM when this process dies, however it dies:
 * util-linux's `setpriv --pdeathsig` sets PR_SET_PDEATHSIG, which survives the exec into redis-server. Without
 * it a SIGKILLed node or `svc cluster` supervisor left its redis-server running for good. Empty where setpriv
 * lacks the option (the server then outlives a killed parent, as before).
 */
function diesWithParent(): string[] {
  diesWithParentPrefix ??=
    spawnSync('setpriv', ['--pdeathsig', 'TERM', 'true'], { stdio: 'ignore' }).status === 0
      ? ['setpriv', '--pdeathsig', 'TERM']
      : [];
  return diesWithParentPrefix;
}
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** redactRedisUrl hides a Redis URL's user and password (and a Sentinel URL's sentinelPassword), for logs and messages. */
export function redactRedisUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@').replace(/([?&]sentinelPassword=)[^&#]*/g, '$1***');
}

/** pingOnce authenticates and pings; true only when both succeed (AUTH answers +OK, PING +PONG). */
function pingOnce(port: number, password: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write(`AUTH ${password}\r\nPING\r\n`));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.split('\r\n').length > 2) done(reply.startsWith('+OK\r\n+PONG\r\n'));
    });
  });
}

async function waitForStart(child: ChildProcess, port: number, password: string): Promise<boolean> {
  const deadline = Date.now() + localRedisStartTimeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    if (await pingOnce(port, password)) return true;
    await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
  }
  return false;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killTimer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(killTimer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export async function startLocalRedis(dir: string): Promise<LocalRedis> {
  if (!redisServerAvailable()) {
    throw new Error(
      'redis-server is not on the PATH: install it (Debian: apt-get install redis-server) ' + 'or set REDIS_URL',
    );
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The password goes in a config file (mode 0600) that redis-server reads, not on its argv, which every local
  // user can read in /proc.
  const password = randomBytes(localRedisPasswordBytes).toString('hex');
  const configFile = path.join(dir, 'redis-auth.conf');
  rmSync(configFile, { force: true });
  writeFileSync(configFile, `requirepass ${password}\n`, { mode: 0o600, flag: 'wx' });
  let lastOutput = '';
  for (let attempt = 0; attempt < localRedisPortAttemptsMax; attempt++) {
    const port = await freeLoopbackPort();
    const [command, ...prefixArgs] = [...diesWithParent(), 'redis-server'];
    const child = spawn(
      command!,
      [
        ...prefixArgs,
        configFile,
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--protected-mode',
        'yes',
        // Redis rewrites its process title; keeping the config file (inside `dir`) in it tells an operator
        // whose Redis this is, and lets a cleanup that looks for `dir` in command lines find it.
        '--proc-title-template',
        '{title} {listen-addr} {server-mode} {config-file}',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      lastOutput = (lastOutput + chunk.toString()).slice(-2000);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      lastOutput = (lastOutput + chunk.toString()).slice(-2000);
    });
    if (await waitForStart(child, port, password)) {
      return { url: `redis://:${password}@127.0.0.1:${port}`, port, stop: () => stopChild(child) };
    }
    await stopChild(child);
  }
  throw new Error(`redis-server did not start after ${localRedisPortAttemptsMax} attempts: ${lastOutput}`);
}
