// Bench (not a test): server-stream throughput on loopback with 1 MiB messages,
// the server in a child process. Rows: raw grpc-js (identity serializers, the
// server honouring write()/'drain') and our PeerServer/PeerPool FetchSnapshot
// path (flow-controlled StreamCall, ts-proto codec), each with the client's
// default HTTP/2 receive window and with grpc-node.flow_control_window = 16 MiB.
//
//   npx tsx bench/grpc-stream.ts [--mib 256] [--reps 3]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { pullRawBytes } from './cluster/raw-path.js';
import { PeerPool } from '../transports/grpc/client.js';
import { PeerServer } from '../transports/grpc/server.js';
import { insecureClientCredentials, insecureServerCredentials } from '../transports/grpc/tls.js';

const MiB = 1024 * 1024;
const RAW_PATH = '/bench.Stream/Pull';
const HTTP2_DEFAULT_WINDOW_BYTES = 65_535;
const identity = (b: Buffer): Buffer => b;

function arg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer`);
  return value;
}

// --- server side (child process) ---------------------------------------------------------------

async function serve(): Promise<void> {
  const message = Buffer.alloc(MiB, 0xab);
  const raw = new grpc.Server({ 'grpc.max_send_message_length': 2 * MiB });
  raw.addService(
    {
      Pull: {
        path: RAW_PATH,
        requestStream: false,
        responseStream: true,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    {
      Pull: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        let left = call.request.readUInt32BE(0);
        const pump = (): void => {
          // Bounded by `left`, which every pass decrements.
          while (left > 0) {
            left -= 1;
            if (!call.write(message)) {
              call.once('drain', pump);
              return;
            }
          }
          call.end();
        };
        pump();
      },
    },
  );
  const rawPort = await new Promise<number>((resolve, reject) =>
    raw.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );

  const peer = await PeerServer.listen('127.0.0.1:0', {
    credentials: insecureServerCredentials(),
    handler: {
      onRequest(_callId, request, call) {
        if (request.method !== 'FetchSnapshot') {
          call.replyError({ code: 12, details: 'bench serves FetchSnapshot only', trailers: {} });
          return;
        }
        const count = request.body.fromSeqno;
        async function* files(): AsyncGenerator<{ path: string; offset: number; data: Buffer; last: boolean }> {
          for (let i = 0; i < count; i += 1)
            yield { path: 'bench', offset: i * MiB, data: message, last: i === count - 1 };
        }
        call.serveSnapshot({ needed: true, snapshotSeq: 1, term: 1, leaderRegion: 1, files: [] }, files());
      },
    },
  });
  process.stdout.write(`${JSON.stringify({ rawPort, peerPort: peer.port })}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
}

// --- client side ----------------------------------------------------------------------------

async function pullRaw(address: string, count: number, windowBytes: number | null): Promise<number> {
  const options: grpc.ChannelOptions = { 'grpc.max_receive_message_length': 2 * MiB };
  if (windowBytes !== null) options['grpc-node.flow_control_window'] = windowBytes;
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), options);
  const request = Buffer.alloc(4);
  request.writeUInt32BE(count);
  const started = process.hrtime.bigint();
  const bytes = await pullRawBytes(client, RAW_PATH, request);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  client.close();
  if (bytes !== count * MiB) throw new Error(`raw stream delivered ${bytes} bytes, expected ${count * MiB}`);
  return bytes / 1e6 / seconds;
}

async function pullPeer(address: string, count: number, windowBytes: number | null): Promise<number> {
  const pool = new PeerPool({
    credentials: insecureClientCredentials(),
    deliver: () => {},
    channelOptions: windowBytes === null ? { 'grpc-node.flow_control_window': HTTP2_DEFAULT_WINDOW_BYTES } : {},
    limits: windowBytes === null ? {} : { flowControlWindowBytes: windowBytes },
  });
  const started = process.hrtime.bigint();
  let bytes = 0;
  for await (const chunk of pool.fetchSnapshot(address, { shardId: 1, fromSeqno: count, term: 1 })) {
    if (chunk.chunk?.$case === 'file') bytes += chunk.chunk.value.data.length;
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  pool.close();
  if (bytes !== count * MiB) throw new Error(`FetchSnapshot delivered ${bytes} bytes, expected ${count * MiB}`);
  return bytes / 1e6 / seconds;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const mib = arg('mib', 256);
  const reps = arg('reps', 3);
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const ports = await new Promise<{ rawPort: number; peerPort: number }>((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      if (text.includes('\n')) resolve(JSON.parse(text.split('\n')[0]!) as { rawPort: number; peerPort: number });
    });
    child.on('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const rows: [string, (count: number) => Promise<number>][] = [
    ['raw grpc-js, default window (64 KiB)', (n) => pullRaw(`127.0.0.1:${ports.rawPort}`, n, null)],
    ['raw grpc-js, flow_control_window 16 MiB', (n) => pullRaw(`127.0.0.1:${ports.rawPort}`, n, 16 * MiB)],
    ['PeerServer FetchSnapshot, default window (64 KiB)', (n) => pullPeer(`127.0.0.1:${ports.peerPort}`, n, null)],
    [
      'PeerServer FetchSnapshot, flow_control_window 16 MiB',
      (n) => pullPeer(`127.0.0.1:${ports.peerPort}`, n, 16 * MiB),
    ],
  ];
  console.log(
    `server stream, 1 MiB messages, ${mib} MiB per run, median of ${reps} runs, loopback, server in a child process`,
  );
  console.log('| path | MB/s (median) | runs |');
  console.log('|---|---|---|');
  try {
    for (const [name, run] of rows) {
      const results: number[] = [];
      for (let i = 0; i < reps; i += 1) results.push(await run(mib));
      console.log(`| ${name} | ${median(results).toFixed(0)} | ${results.map((r) => r.toFixed(0)).join(', ')} |`);
    }
  } finally {
    child.stdin.end();
  }
}

if (process.argv.includes('--serve')) {
  await serve();
} else {
  await main();
}
