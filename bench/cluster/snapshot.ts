// Snapshot transfer: a large artifact staged by SnapshotStore (BLAKE3 at staging) is fetched by a
// peer over FetchSnapshot (mutual TLS, our client channel options: the 16 MiB flow-control window)
// and installed with verification (sizes, offsets, BLAKE3, fsync, atomic rename); beside it, the
// raw grpc-js stream of the same bytes in the same chunk size with the same channel options, and
// our FetchSnapshot drained without installing. The server runs in a child process.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { MemberRole } from '../../engine/types.js';
import { createClusterCa, createNodeCert } from '../../cli/certs/certs.js';
import { clientChannelOptions } from '../../transports/grpc/channel-options.js';
import { PeerPool } from '../../transports/grpc/client.js';
import { resolveGrpcLimits } from '../../transports/grpc/limits.js';
import { clientCredentials } from '../../transports/grpc/tls.js';
import { SnapshotStore } from '../../transports/storage/snapshots.js';
import { RAW_PATH } from './raw-path.js';

const SERVER_ENTRY = fileURLToPath(new URL('./snapshot-server.ts', import.meta.url));
const MiB = 1024 * 1024;
const WRITE_BLOCK_BYTES = 8 * MiB;
const SERVER_START_TIMEOUT_MS = 60_000;
const identity = (b: Buffer): Buffer => b;
const CLOCK_TICKS_PER_SECOND = 100;

export interface SnapshotRow {
  path: string;
  /** mbPerSecond is the median over the rounds. */
  mbPerSecond: number;
  /** ratioToRaw is the median of this path's per-round ratio to that round's raw stream. */
  ratioToRaw: number;
  /** samples are the per-round MB/s, in round order. */
  samples: number[];
  /** CPU milliseconds (user + system) per MB moved, medians over the rounds: this process and the serving child. */
  clientCpuMsPerMb: number;
  serverCpuMsPerMb: number;
}

export interface SnapshotBenchOptions {
  /** childExecArgv goes to the serving child's node (e.g. --cpu-prof, --cpu-prof-dir=...). */
  childExecArgv?: string[];
  /** beforeRounds runs once setup is done, just before the first round (e.g. to start a profiler). */
  beforeRounds?: () => Promise<void>;
  /** paths limits the rounds to some of the paths (raw always runs: the ratios need it). */
  paths?: Array<'drained' | 'install'>;
}

/** cpuMsOf reads a process's user + system CPU time from /proc (Linux), NaN elsewhere. */
async function cpuMsOf(pid: number): Promise<number> {
  try {
    const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function writeRandomFile(path: string, bytes: number): Promise<void> {
  const handle = await open(path, 'w');
  try {
    const block = randomBytes(WRITE_BLOCK_BYTES);
    for (let written = 0; written < bytes; written += WRITE_BLOCK_BYTES)
      await handle.write(block, 0, Math.min(WRITE_BLOCK_BYTES, bytes - written));
  } finally {
    await handle.close();
  }
}

/**
 * measureSnapshotTransfer runs `rounds` rounds of raw, drained, install, one after the other
 * (interleaved, so the noise of a shared machine falls on all three alike), and reports medians and
 * the median per-round ratio to raw.
 */
export async function measureSnapshotTransfer(
  dir: string,
  mib: number,
  rounds: number,
  options: SnapshotBenchOptions = {},
): Promise<{ rows: SnapshotRow[]; bytes: number; stageMbPerSecond: number }> {
  const certDir = join(dir, 'certs');
  await createClusterCa({ dir: certDir, commonName: 'bench-ca' });
  for (const name of ['server', 'client'])
    await createNodeCert({ dir: certDir, name, clusterId: 'bench', peersService: 'peers', namespace: 'bench' });
  const serverData = join(dir, 'server');
  const source = join(dir, 'state.bin');
  await writeRandomFile(source, mib * MiB);
  const serverStore = await SnapshotStore.open(serverData);
  const roster = {
    membershipVersion: 1,
    nextMemberId: 2,
    members: [
      { id: 1, name: 'server', grpcAddr: '127.0.0.1:1', httpAddr: 'http://127.0.0.1:1', role: MemberRole.Voter },
    ],
  };
  const stageStarted = performance.now();
  await serverStore.stage({ seq: 1000, entryTerm: 1, roster }, [{ path: 'state.bin', sourcePath: source }], {
    term: 1,
    leaderRegion: 1,
  });
  const stageMbPerSecond = (mib * MiB) / 1e6 / ((performance.now() - stageStarted) / 1000);
  await rm(source);

  const child = spawn(
    process.execPath,
    [...(options.childExecArgv ?? []), '--import', 'tsx', SERVER_ENTRY, serverData, certDir],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  try {
    const ports = await new Promise<{ peerPort: number; rawPort: number; totalBytes: number }>((resolve, reject) => {
      let text = '';
      const timer = setTimeout(() => reject(new Error('snapshot server did not start')), SERVER_START_TIMEOUT_MS);
      child.stdout.on('data', (d: Buffer) => {
        text += d.toString();
        if (text.includes('\n')) {
          clearTimeout(timer);
          resolve(JSON.parse(text.split('\n')[0]!) as { peerPort: number; rawPort: number; totalBytes: number });
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`snapshot server exited with ${code}`));
      });
    });
    const material = {
      ca: await readFile(join(certDir, 'ca.crt')),
      cert: await readFile(join(certDir, 'client.crt')),
      key: await readFile(join(certDir, 'client.key')),
    };
    const limits = resolveGrpcLimits();
    const nameOverride = { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' };
    const peerAddr = `127.0.0.1:${ports.peerPort}`;
    const request = { shardId: 1, fromSeqno: 1, term: 1 };

    const raw = async (): Promise<number> => {
      const client = new grpc.Client(`127.0.0.1:${ports.rawPort}`, clientCredentials(material), {
        ...clientChannelOptions(limits),
        ...nameOverride,
      });
      let bytes = 0;
      await new Promise<void>((resolve, reject) => {
        const call = client.makeServerStreamRequest<Buffer, Buffer>(
          RAW_PATH,
          identity,
          identity,
          Buffer.alloc(0),
          new grpc.Metadata(),
          {},
        );
        call.on('data', (m: Buffer) => {
          bytes += m.length;
        });
        call.on('error', reject);
        call.on('end', resolve);
      });
      client.close();
      if (bytes !== ports.totalBytes) throw new Error(`raw stream delivered ${bytes} of ${ports.totalBytes} bytes`);
      return bytes;
    };
    const drain = async (): Promise<number> => {
      const pool = new PeerPool({
        credentials: clientCredentials(material),
        deliver: () => undefined,
        channelOptions: nameOverride,
      });
      let bytes = 0;
      try {
        for await (const chunk of pool.fetchSnapshot(peerAddr, request))
          if (chunk.chunk?.$case === 'file') bytes += chunk.chunk.value.data.length;
      } finally {
        pool.close();
      }
      if (bytes !== ports.totalBytes) throw new Error(`FetchSnapshot delivered ${bytes} of ${ports.totalBytes} bytes`);
      return bytes;
    };
    const install = async (rep: number): Promise<number> => {
      const clientData = join(dir, `client-${rep}`);
      const store = await SnapshotStore.open(clientData);
      const pool = new PeerPool({
        credentials: clientCredentials(material),
        deliver: () => undefined,
        channelOptions: nameOverride,
      });
      try {
        const parts = await pool.openSnapshot(peerAddr, request);
        const artifact = await store.install(parts.header, parts.files);
        return artifact.manifest.files.reduce((sum, f) => sum + f.size, 0);
      } finally {
        pool.close();
        await rm(clientData, { recursive: true, force: true });
      }
    };
    const timed = async (
      run: () => Promise<number>,
    ): Promise<{ mbps: number; clientCpuMsPerMb: number; serverCpuMsPerMb: number }> => {
      const serverCpuBefore = await cpuMsOf(child.pid!);
      const clientCpuBefore = process.cpuUsage();
      const started = performance.now();
      const bytes = await run();
      const seconds = (performance.now() - started) / 1000;
      const clientCpu = process.cpuUsage(clientCpuBefore);
      const serverCpuMs = (await cpuMsOf(child.pid!)) - serverCpuBefore;
      const mb = bytes / 1e6;
      return {
        mbps: mb / seconds,
        clientCpuMsPerMb: (clientCpu.user + clientCpu.system) / 1000 / mb,
        serverCpuMsPerMb: serverCpuMs / mb,
      };
    };
    const paths: Array<{ path: string; run: (round: number) => Promise<number> }> = [
      { path: 'raw grpc-js server stream (mTLS, same chunk size and channel options, from memory)', run: raw },
      { path: 'FetchSnapshot drained (PeerServer reading the artifact, PeerPool), no install', run: drain },
      { path: 'FetchSnapshot + verified install (sizes, BLAKE3, fsync, rename)', run: install },
    ];
    const chosen = paths.filter(
      (_, i) => i === 0 || options.paths === undefined || options.paths.includes(i === 1 ? 'drained' : 'install'),
    );
    paths.splice(0, paths.length, ...chosen);
    await options.beforeRounds?.();
    const samples: Array<Array<Awaited<ReturnType<typeof timed>>>> = paths.map(() => []);
    for (let round = 0; round < rounds; round++) {
      for (const [i, p] of paths.entries()) samples[i]!.push(await timed(() => p.run(round)));
    }
    const rows: SnapshotRow[] = paths.map((p, i) => ({
      path: p.path,
      mbPerSecond: median(samples[i]!.map((s) => s.mbps)),
      ratioToRaw: median(samples[i]!.map((s, round) => s.mbps / samples[0]![round]!.mbps)),
      samples: samples[i]!.map((s) => s.mbps),
      clientCpuMsPerMb: median(samples[i]!.map((s) => s.clientCpuMsPerMb)),
      serverCpuMsPerMb: median(samples[i]!.map((s) => s.serverCpuMsPerMb)),
    }));
    return { rows, bytes: ports.totalBytes, stageMbPerSecond };
  } finally {
    child.stdin.end();
    await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
  }
}
