// A stand-in for another machine of the deployment (a cluster member on its own pod or host): a network
// namespace joined to this host by a veth pair, with two addresses, and a TCP listener on both. Its addresses
// are not local to this host, so the egress filter's standing denials do not cover them: only a deny entry
// does. Needs root and iproute2; names carry this process's pid, so parallel test runs do not collide.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';

export interface ForeignHost {
  /** addresses are the namespace's two IPv4 addresses; port is the listener's on both. */
  addresses: [string, string];
  port: number;
  close(): Promise<void>;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** startForeignHost makes the namespace and its listener; it throws when the host does not allow it. */
export async function startForeignHost(): Promise<ForeignHost> {
  const tag = `${process.pid % 100_000}`;
  const namespace = `svct${tag}`;
  const hostSide = `svch${tag}`;
  const peerSide = `svcp${tag}`;
  // A /29 in 10.252.0.0/16 picked at random, so two test processes on one host are unlikely to share one.
  const block = randomInt(0, 8192) * 8;
  const address = (offset: number) => `10.252.${Math.floor((block + offset) / 256) % 256}.${(block + offset) % 256}`;
  let listener: ChildProcess | undefined;
  const cleanUp = () => {
    listener?.kill('SIGKILL');
    try {
      ip('link', 'del', hostSide);
    } catch {
      // gone with the namespace
    }
    try {
      ip('netns', 'del', namespace);
    } catch {
      // never made
    }
  };
  try {
    ip('netns', 'add', namespace);
    ip('link', 'add', hostSide, 'type', 'veth', 'peer', 'name', peerSide, 'netns', namespace);
    ip('addr', 'add', `${address(1)}/29`, 'dev', hostSide);
    ip('link', 'set', hostSide, 'up');
    for (const args of [
      ['addr', 'add', `${address(2)}/29`, 'dev', peerSide],
      ['addr', 'add', `${address(3)}/29`, 'dev', peerSide],
      ['link', 'set', peerSide, 'up'],
      ['link', 'set', 'lo', 'up'],
    ])
      ip('netns', 'exec', namespace, 'ip', ...args);
    const server =
      "const s = require('net').createServer((c) => c.end('hello from a member\\n'));" +
      "s.listen(0, '0.0.0.0', () => console.log(s.address().port));";
    listener = spawn('ip', ['netns', 'exec', namespace, process.execPath, '-e', server], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the foreign listener did not start')), 10_000);
      listener!.stdout!.once('data', (chunk: Buffer) => {
        clearTimeout(timer);
        resolve(Number(chunk.toString().trim()));
      });
      listener!.once('exit', (code) => reject(new Error(`the foreign listener exited ${code}`)));
    });
    return {
      addresses: [address(2), address(3)],
      port,
      close: async () => {
        cleanUp();
      },
    };
  } catch (error) {
    cleanUp();
    throw error;
  }
}
