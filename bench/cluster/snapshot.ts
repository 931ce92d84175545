// Snapshot transfer: a large artifact staged by SnapshotStore (BLAKE3 at staging) is fetched by a
// peer over FetchSnapshot (mutual TLS, our client channel options: the 16 MiB flow-control window)
// and installed with verification (sizes, offsets, BLAKE3, fsync, atomic rename); beside it, the
// raw grpc-js stream of the same bytes in the same chunk size with the same channel options, and
// our FetchSnapshot drained without installing. The server runs in a child process.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { MemberRole } from '../../engine/types.js';
import { createClusterCa, createNodeCert } from '../../cli/certs/certs.js';
import { clientChannelOptions } from '../../transports/grpc/channel-options.js';
import { PeerPool } from '../../transports/grpc/client.js';
import { resolveGrpcLimits } from '../../transports/grpc/limits.js';
import { clientCredentials } from '../../transports/grpc/tls.js';
import { SnapshotStore } from '../../transports/storage/snapshots.js';
import { pullRawBytes, RAW_PATH } from './raw-path.js';

const SERVER_ENTRY = fileURLToPath(new URL('./snapshot-server.ts', import.meta.url));
const MiB = 1024 * 1024;
const WRITE_BLOCK_BYTES = 8 * MiB;
const SERVER_START_TIMEOUT_MS = 60_000;
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
  const { certDir, serverData, stageMbPerSecond } = await stageServerArtifact(dir, mib);
  const child = spawn(
    process.execPath,
    [...(options.childExecArgv ?? []), '--import', 'tsx', SERVER_ENTRY, serverData, certDir],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  try {
    const ports = await serverPorts(child);
    const transfer = await transferContext(dir, certDir, ports);
    const paths: TransferPath[] = [
      {
        path: 'raw grpc-js server stream (mTLS, same chunk size and channel options, from memory)',
        run: () => rawStream(transfer),
      },
      {
        path: 'FetchSnapshot drained (PeerServer reading the artifact, PeerPool), no install',
        run: () => drainFetch(transfer),
      },
      { path: 'FetchSnapshot + verified install (sizes, BLAKE3, fsync, rename)', run: (rep) => install(transfer, rep) },
    ];
    const chosen = paths.filter(
      (_, i) => i === 0 || options.paths === undefined || options.paths.includes(i === 1 ? 'drained' : 'install'),
    );
    await options.beforeRounds?.();
    const rows = await runRounds(chosen, rounds, child.pid!);
    return { rows, bytes: ports.totalBytes, stageMbPerSecond };
  } finally {
    child.stdin.end();
    await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
  }
}

/** stageServerArtifact: certificates for both ends, and a random file of `mib` MiB staged as the server's snapshot. */
async function stageServerArtifact(
  dir: string,
  mib: number,
): Promise<{ certDir: string; serverData: string; stageMbPerSecond: number }> {
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
  return { certDir, serverData, stageMbPerSecond };
}

/** ServerPorts: the serving child's first line on stdout. */
interface ServerPorts {
  peerPort: number;
  rawPort: number;
  totalBytes: number;
}

/** serverPorts waits (bounded by SERVER_START_TIMEOUT_MS) for the child's first line, its ports. */
function serverPorts(child: ChildProcessByStdio<Writable, Readable, null>): Promise<ServerPorts> {
  return new Promise<ServerPorts>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error('snapshot server did not start')), SERVER_START_TIMEOUT_MS);
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      if (text.includes('\n')) {
        clearTimeout(timer);
        resolve(JSON.parse(text.split('\n')[0]!) as ServerPorts);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`snapshot server exited with ${code}`));
    });
  });
}

/** TransferContext: what every transfer path dials the server with. */
interface TransferContext {
  dir: string;
  ports: ServerPorts;
  material: { ca: Buffer; cert: Buffer; key: Buffer };
  limits: ReturnType<typeof resolveGrpcLimits>;
  nameOverride: Record<string, string>;
  peerAddr: string;
  request: { shardId: number; fromSeqno: number; term: number };
}

async function transferContext(dir: string, certDir: string, ports: ServerPorts): Promise<TransferContext> {
  return {
    dir,
    ports,
    material: {
      ca: await readFile(join(certDir, 'ca.crt')),
      cert: await readFile(join(certDir, 'client.crt')),
      key: await readFile(join(certDir, 'client.key')),
    },
    limits: resolveGrpcLimits(),
    nameOverride: { 'grpc.ssl_target_name_override': 'localhost', 'grpc.default_authority': 'localhost' },
    peerAddr: `127.0.0.1:${ports.peerPort}`,
    request: { shardId: 1, fromSeqno: 1, term: 1 },
  };
}

/** rawStream: the same bytes as a bare grpc-js server stream, the floor the other paths are measured against. */
async function rawStream(t: TransferContext): Promise<number> {
  const client = new grpc.Client(`127.0.0.1:${t.ports.rawPort}`, clientCredentials(t.material), {
    ...clientChannelOptions(t.limits),
    ...t.nameOverride,
  });
  const bytes = await pullRawBytes(client, RAW_PATH, Buffer.alloc(0));
  client.close();
  if (bytes !== t.ports.totalBytes) throw new Error(`raw stream delivered ${bytes} of ${t.ports.totalBytes} bytes`);
  return bytes;
}

/** drainFetch: our FetchSnapshot read to the end and dropped. */
async function drainFetch(t: TransferContext): Promise<number> {
  const pool = new PeerPool({
    credentials: clientCredentials(t.material),
    deliver: () => undefined,
    channelOptions: t.nameOverride,
  });
  let bytes = 0;
  try {
    for await (const chunk of pool.fetchSnapshot(t.peerAddr, t.request))
      if (chunk.chunk?.$case === 'file') bytes += chunk.chunk.value.data.length;
  } finally {
    pool.close();
  }
  if (bytes !== t.ports.totalBytes) throw new Error(`FetchSnapshot delivered ${bytes} of ${t.ports.totalBytes} bytes`);
  return bytes;
}

/** install: our FetchSnapshot installed by a fresh SnapshotStore (removed afterwards). */
async function install(t: TransferContext, rep: number): Promise<number> {
  const clientData = join(t.dir, `client-${rep}`);
  const store = await SnapshotStore.open(clientData);
  const pool = new PeerPool({
    credentials: clientCredentials(t.material),
    deliver: () => undefined,
    channelOptions: t.nameOverride,
  });
  try {
    const parts = await pool.openSnapshot(t.peerAddr, t.request);
    const artifact = await store.install(parts.header, parts.files);
    return artifact.manifest.files.reduce((sum, f) => sum + f.size, 0);
  } finally {
    pool.close();
    await rm(clientData, { recursive: true, force: true });
  }
}

interface TransferPath {
  path: string;
  run: (round: number) => Promise<number>;
}

interface Sample {
  mbps: number;
  clientCpuMsPerMb: number;
  serverCpuMsPerMb: number;
}

/** timed: one transfer's MB/s and the CPU both ends spent per MB. */
async function timed(serverPid: number, run: () => Promise<number>): Promise<Sample> {
  const serverCpuBefore = await cpuMsOf(serverPid);
  const clientCpuBefore = process.cpuUsage();
  const started = performance.now();
  const bytes = await run();
  const seconds = (performance.now() - started) / 1000;
  const clientCpu = process.cpuUsage(clientCpuBefore);
  const serverCpuMs = (await cpuMsOf(serverPid)) - serverCpuBefore;
  const mb = bytes / 1e6;
  return {
    mbps: mb / seconds,
    clientCpuMsPerMb: (clientCpu.user + clientCpu.system) / 1000 / mb,
    serverCpuMsPerMb: serverCpuMs / mb,
  };
}

/** runRounds runs the paths round by round (paths[0] is raw, the ratios' base) and takes the medians. */
async function runRounds(paths: TransferPath[], rounds: number, serverPid: number): Promise<SnapshotRow[]> {
  const samples: Sample[][] = paths.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (const [i, p] of paths.entries()) samples[i]!.push(await timed(serverPid, () => p.run(round)));
  }
  return paths.map((p, i) => ({
    path: p.path,
    mbPerSecond: median(samples[i]!.map((s) => s.mbps)),
    ratioToRaw: median(samples[i]!.map((s, round) => s.mbps / samples[0]![round]!.mbps)),
    samples: samples[i]!.map((s) => s.mbps),
    clientCpuMsPerMb: median(samples[i]!.map((s) => s.clientCpuMsPerMb)),
    serverCpuMsPerMb: median(samples[i]!.map((s) => s.serverCpuMsPerMb)),
  }));
}
