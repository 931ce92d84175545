// A DNS that never answers, for `svc` processes of a test: a UDP socket on port 53 of a loopback address of its
// own, named by the child's /etc/resolv.conf in a mount namespace of the child's own (root: unshare --mount), and
// RES_OPTIONS that have the system resolver (getaddrinfo) wait a minute on each lookup, past any stop's bound.
// Used where a process must not wait on a lookup it cannot cancel (test/cli/node-stop.test.ts,
// test/cli/admin-names.test.ts).
import { execFileSync, spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LongRunning, removeDir, SVC_BIN, tempDir } from './helpers.js';

/** SLOW_LOOKUP_OPTIONS has the system resolver wait a minute on each lookup (RES_OPTIONS), past the stop's bound. */
const SLOW_LOOKUP_OPTIONS = 'timeout:30 attempts:2';

/** namespaceUnavailable says why this machine cannot give a child its own /etc/resolv.conf, or null. */
export function namespaceUnavailable(): string | null {
  if (process.getuid?.() !== 0) return 'not running as root (unshare --mount and a DNS socket on port 53 need root)';
  try {
    execFileSync('unshare', ['--mount', 'true'], { stdio: 'ignore' });
    return null;
  } catch (err) {
    return `unshare --mount failed: ${(err as Error).message}`;
  }
}

export class BlackHoleDns {
  private constructor(
    private readonly socket: Socket,
    private readonly resolvConf: string,
  ) {}

  /** start binds the silent name server and writes the resolv.conf naming it under `dir`. */
  static async start(dir: string): Promise<BlackHoleDns> {
    // A loopback address of its own, so that tests running beside this one do not share the port.
    const address = `127.53.${process.pid % 250}.${1 + Math.floor(Math.random() * 250)}`;
    const socket = createSocket('udp4');
    socket.on('message', () => undefined);
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(53, address, resolve);
    });
    const resolvConf = join(dir, 'resolv.conf');
    await writeFile(resolvConf, `nameserver ${address}\n`);
    return new BlackHoleDns(socket, resolvConf);
  }

  /** svc runs `svc args` in `cwd` with /etc/resolv.conf naming the DNS that never answers. */
  svc(args: string[], cwd: string): LongRunning {
    const script = 'mount --bind "$1" /etc/resolv.conf && shift && exec "$@"';
    const command = ['--mount', 'sh', '-c', script, 'sh', this.resolvConf, process.execPath, SVC_BIN, ...args];
    const env = { ...process.env, RES_OPTIONS: SLOW_LOOKUP_OPTIONS };
    return new LongRunning(spawn('unshare', command, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  close(): void {
    this.socket.close();
  }
}

/** SuiteDns is a suite's black-hole DNS, there from its before() hook on. */
export interface SuiteDns {
  /** dir is the suite's temporary directory (the processes' working directory). */
  readonly dir: string;
  /** svc runs `svc args` in dir under the black-hole DNS; the suite's after() kills it if still running. */
  svc(args: string[]): LongRunning;
}

/**
 * useBlackHoleDns registers the suite's hooks: before() skips the suite where a child cannot have its own
 * /etc/resolv.conf (saying why), else makes a temporary directory (named by `prefix`) and the DNS; after() kills
 * the processes still running and removes both. Call it inside describe().
 */
export function useBlackHoleDns(prefix: string): SuiteDns {
  let dir: string | undefined;
  let blackHole: BlackHoleDns | undefined;
  const started: LongRunning[] = [];
  before(async function () {
    const why = namespaceUnavailable();
    if (why !== null) {
      process.stderr.write(`      (skipped: ${why})\n`);
      return this.skip();
    }
    dir = await tempDir(prefix);
    blackHole = await BlackHoleDns.start(dir);
  });
  after(async () => {
    for (const child of started) child.kill();
    blackHole?.close();
    if (dir) await removeDir(dir);
  });
  return {
    get dir() {
      if (dir === undefined) throw new Error('the black-hole DNS is not started: use it inside a test');
      return dir;
    },
    svc(args) {
      const child = blackHole!.svc(args, this.dir);
      started.push(child);
      return child;
    },
  };
}
