// Raw HTTP/2 unary bench (not a test): would serving gRPC unary calls on our own framing (transports/h2) instead
// of node:http2's streams (what transports/grpc/lean-serve.ts does inside grpc-js's server) reach issue 17's
// bars? Two servers in child processes answer one trivial unary method with the same constant message: `node`,
// node:http2 answered as lean-serve.ts does (respond with waitForTrailers, end the message, trailers on
// 'wantTrailers'), and `raw`, transports/h2's H2Server with serveGrpcUnary. Over mutual TLS (as a node runs)
// and plaintext. Four clients call each: bare node:http2 (what lean-unary.ts is built on: one request per call),
// grpc-js, transports/grpc/lean-unary.ts's LeanUnaryClient (the node's peer and Store calls today) and
// transports/h2/unary-client.ts's H2UnaryClient (our framing at the caller too; the two lean clients dial with the
// node's own certificate checks, tls.ts). Rounds alternate the servers so drift hits both. Per pairing it prints the round trip p50/p99 at
// 1 caller, and calls/s with the server's CPU per call at 16 callers; and, as the reference, the round trip of one
// message on an open node:http2 stream to the node server (what a GetStream read pays).
//
//   npx tsx bench/h2-unary.ts [--calls 2000] [--rounds 3] [--mode tls|plain|both]
import { fork } from 'node:child_process';
import * as http2 from 'node:http2';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { serveGrpcUnary } from '../transports/h2/grpc-unary.js';
import { H2Server } from '../transports/h2/server.js';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClusterCa, createNodeCert, newClusterId } from '../cli/certs/certs.js';
import { LeanUnaryClient } from '../transports/grpc/lean-unary.js';
import { resolveGrpcLimits } from '../transports/grpc/limits.js';
import { peerHttp2Dial, peerSocketDial, type PeerSecurity } from '../transports/grpc/tls.js';
import { H2UnaryClient } from '../transports/h2/unary-client.js';

const PATH = '/bench.Store/Get';
const STREAM_PATH = '/bench.Store/GetStream';
/** A Get answer's size (svc.store.v1 GetResponse of a small JSON value). */
const ANSWER = Buffer.from('0801121a7b2276223a2262656e6368222c2270616464696e67223a317d1801', 'hex');
const REQUEST = Buffer.from('0a016b', 'hex');
const CALLERS = 16;
const identity = (b: Buffer): Buffer => b;

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer`);
  return value;
}

interface Tls {
  ca: string;
  cert: string;
  key: string;
  clusterId: string;
}

// --- servers (child processes) ---------------------------------------------------------------------------------

const OK_HEADERS = { ':status': 200, 'content-type': 'application/grpc' };
const OK_TRAILERS = { 'grpc-status': '0' };
const WAIT_FOR_TRAILERS: http2.ServerStreamResponseOptions = { waitForTrailers: true };

/** nodeHttp2Stream answers one stream as lean-serve.ts does: the one message read, then headers, message, trailers. */
function nodeHttp2Stream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
  if (headers[':path'] === STREAM_PATH) return openStream(stream);
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.on('end', () => {
    const framed = Buffer.concat(chunks);
    if (framed.length < 5 || framed.readUInt32BE(1) !== framed.length - 5) {
      stream.respond({ ...OK_HEADERS, 'grpc-status': '12' }, { endStream: true });
      return;
    }
    const answer = Buffer.allocUnsafe(5 + ANSWER.length);
    answer[0] = 0;
    answer.writeUInt32BE(ANSWER.length, 1);
    ANSWER.copy(answer, 5);
    stream.respond(OK_HEADERS, WAIT_FOR_TRAILERS);
    stream.on('wantTrailers', () => stream.sendTrailers(OK_TRAILERS));
    stream.end(answer);
  });
  stream.on('error', () => undefined);
}

/**
 * openStream echoes each request message on one open call with the answer (the reference row: a GetStream message,
 * 1.06x etcd where a unary Get was 0.74x). The bench sends one small message at a time, so a chunk is a message.
 */
function openStream(stream: http2.ServerHttp2Stream): void {
  stream.respond(OK_HEADERS);
  const answer = Buffer.concat([Buffer.from([0, 0, 0, 0, ANSWER.length]), ANSWER]);
  stream.on('data', () => stream.write(answer));
  stream.on('end', () => stream.end());
  stream.on('error', () => undefined);
}

async function serve(): Promise<void> {
  const { kind, tls } = JSON.parse(process.argv[3]!) as { kind: 'node' | 'raw'; tls: Tls | null };
  const tlsOptions = tls && { ca: tls.ca, cert: tls.cert, key: tls.key, requestCert: true, rejectUnauthorized: true };
  let port: number;
  if (kind === 'node') {
    const server = tlsOptions ? http2.createSecureServer(tlsOptions) : http2.createServer();
    server.on('stream', nodeHttp2Stream);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  } else {
    const server = await H2Server.listen('127.0.0.1', 0, {
      ...(tlsOptions ? { tls: tlsOptions } : {}),
      onStream: serveGrpcUnary({ handlers: new Map([[PATH, () => ({ message: ANSWER })]]), messageBytesMax: 4 << 20 }),
    });
    port = server.port;
  }
  process.on('message', (message) => {
    if (message === 'cpu') {
      const cpu = process.cpuUsage();
      process.send!(cpu.user + cpu.system);
    } else if (message === 'stop') process.exit(0);
  });
  process.send!({ port });
}

// --- clients ---------------------------------------------------------------------------------------------------

interface ServerChild {
  kind: 'node' | 'raw';
  port: number;
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

async function startServer(kind: 'node' | 'raw', tls: Tls | null): Promise<ServerChild> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve', JSON.stringify({ kind, tls })], {
    execArgv: ['--import', 'tsx'],
  });
  const { port } = await new Promise<{ port: number }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { port: number }));
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  return {
    kind,
    port,
    cpuUs: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve(m as number));
        child.send('cpu');
      }),
    stop: async () => {
      child.send('stop');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

type Call = () => Promise<void>;
interface Client {
  call: Call;
  close(): void;
}

const FRAMED_REQUEST = Buffer.concat([Buffer.from([0, 0, 0, 0, REQUEST.length]), REQUEST]);
const REQUEST_HEADERS = {
  ':method': 'POST',
  ':path': PATH,
  'content-type': 'application/grpc',
  te: 'trailers',
  'grpc-timeout': '5000m',
};

/** bareHttp2Client calls as lean-unary.ts does, minus its checks: one request per call, trailers awaited. */
function bareHttp2Client(port: number, tls: Tls | null): Client {
  const session = tls
    ? http2.connect(`https://127.0.0.1:${port}`, { ca: tls.ca, cert: tls.cert, key: tls.key, servername: 'localhost' })
    : http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const call: Call = () =>
    new Promise((resolve, reject) => {
      const stream = session.request(REQUEST_HEADERS, { endStream: false });
      let status: unknown;
      stream.on('data', () => undefined);
      stream.on('trailers', (trailers) => (status = trailers['grpc-status']));
      stream.on('close', () => (status === '0' ? resolve() : reject(new Error(`status ${String(status)}`))));
      stream.end(FRAMED_REQUEST);
    });
  return { call, close: () => session.close() };
}

/** openStreamClient sends each call as a message on one open node:http2 stream (to the node server). */
function openStreamClient(port: number, tls: Tls | null): Client {
  const session = tls
    ? http2.connect(`https://127.0.0.1:${port}`, { ca: tls.ca, cert: tls.cert, key: tls.key, servername: 'localhost' })
    : http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  const stream = session.request({ ...REQUEST_HEADERS, ':path': STREAM_PATH, 'grpc-timeout': undefined });
  let answered: (() => void) | null = null;
  stream.on('data', () => answered?.());
  stream.on('error', () => undefined);
  const call: Call = () =>
    new Promise((resolve) => {
      answered = resolve;
      stream.write(FRAMED_REQUEST);
    });
  return {
    call,
    close: () => {
      stream.close();
      session.close();
    },
  };
}

function grpcJsClient(port: number, tls: Tls | null): Client {
  const credentials = tls
    ? grpc.credentials.createSsl(Buffer.from(tls.ca), Buffer.from(tls.key), Buffer.from(tls.cert))
    : grpc.credentials.createInsecure();
  const client = new grpc.Client(`127.0.0.1:${port}`, credentials, { 'grpc.ssl_target_name_override': 'localhost' });
  const call: Call = () =>
    new Promise((resolve, reject) => {
      client.makeUnaryRequest(PATH, identity, identity, REQUEST, { deadline: Date.now() + 5_000 }, (error) =>
        error ? reject(error) : resolve(),
      );
    });
  return { call, close: () => client.close() };
}

/** leanUnaryClient calls through transports/grpc/lean-unary.ts (node:http2, what the node uses today). */
function leanUnaryClient(port: number, tls: Tls | null): Client {
  const client = new LeanUnaryClient({ dial: peerHttp2Dial(security(tls), 'localhost'), headers: {}, limits: LIMITS });
  return { call: unaryCall(client, port), close: () => client.close() };
}

/** h2UnaryClient calls through transports/h2/unary-client.ts (our framing; the same dial checks as the node's). */
function h2UnaryClient(port: number, tls: Tls | null): Client {
  const client = new H2UnaryClient({ dial: peerSocketDial(security(tls), 'localhost'), headers: {}, limits: LIMITS });
  return { call: unaryCall(client, port), close: () => client.close() };
}

const LIMITS = resolveGrpcLimits();

function security(tls: Tls | null): PeerSecurity {
  return tls ? { mode: 'mtls', material: tls, clusterId: tls.clusterId } : { mode: 'insecure' };
}

function unaryCall(client: LeanUnaryClient | H2UnaryClient, port: number): Call {
  const to = `127.0.0.1:${port}`;
  return () =>
    new Promise((resolve, reject) => {
      client.call(to, PATH, REQUEST, 5_000, (outcome) =>
        outcome.ok ? resolve() : reject(new Error(outcome.status.details)),
      );
    });
}

const CLIENTS = {
  'node:http2 client': bareHttp2Client,
  'grpc-js client': grpcJsClient,
  'lean-unary client': leanUnaryClient,
  'h2 unary client': h2UnaryClient,
} as const;
type ClientName = keyof typeof CLIENTS;

interface Tally {
  rtts: number[];
  calls: number;
  wallMs: number;
  serverCpuUs: number;
  clientCpuUs: number;
}

async function runMode(tls: Tls | null, calls: number, rounds: number): Promise<void> {
  const servers = [await startServer('node', tls), await startServer('raw', tls)];
  try {
    const pairs = servers.flatMap((server) =>
      (Object.keys(CLIENTS) as ClientName[]).map((name) => ({ server, name, client: CLIENTS[name](server.port, tls) })),
    );
    // The reference: one message each on an open stream, 1 caller (one stream carries one call at a time).
    const reference = openStreamClient(servers[0]!.port, tls);
    const referenceRtts: number[] = [];
    for (let i = 0; i < 300; i++) await reference.call();
    const tallies = new Map(
      pairs.map((p) => [p, { rtts: [], calls: 0, wallMs: 0, serverCpuUs: 0, clientCpuUs: 0 } as Tally]),
    );
    for (const pair of pairs) for (let i = 0; i < 300; i++) await pair.client.call();
    for (let round = 0; round < rounds; round++)
      for (const pair of round % 2 === 0 ? pairs : [...pairs].reverse()) {
        const tally = tallies.get(pair)!;
        for (let i = 0; i < calls; i++) {
          const began = process.hrtime.bigint();
          await pair.client.call();
          tally.rtts.push(Number(process.hrtime.bigint() - began) / 1000);
        }
        if (pair.server.kind === 'node' && pair.name === 'node:http2 client')
          for (let i = 0; i < calls; i++) {
            const began = process.hrtime.bigint();
            await reference.call();
            referenceRtts.push(Number(process.hrtime.bigint() - began) / 1000);
          }
        // 16 callers, `calls` calls each at most: calls/s and the server's CPU per call.
        const cpu0 = await pair.server.cpuUs();
        const client0 = process.cpuUsage();
        const began = performance.now();
        await Promise.all(
          Array.from({ length: CALLERS }, async () => {
            for (let i = 0; i < calls; i++) await pair.client.call();
          }),
        );
        tally.wallMs += performance.now() - began;
        const client = process.cpuUsage(client0);
        tally.clientCpuUs += client.user + client.system;
        tally.serverCpuUs += (await pair.server.cpuUs()) - cpu0;
        tally.calls += CALLERS * calls;
      }
    console.log(
      `${tls ? 'mutual TLS' : 'plaintext'}: ${rounds} rounds × ${calls} calls at 1 caller and ${CALLERS}×${calls} at ${CALLERS}, servers alternating`,
    );
    const percentile = (values: number[], q: number): string =>
      values.sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!.toFixed(0);
    console.log(
      `  node server, a message on one open node:http2 stream (reference) 1 caller p50 ${percentile(referenceRtts, 0.5)} µs p99 ${percentile(referenceRtts, 0.99)} µs`,
    );
    reference.close();
    for (const pair of pairs) {
      const tally = tallies.get(pair)!;
      const at = (q: number): string => percentile(tally.rtts, q);
      console.log(
        `  ${pair.server.kind.padEnd(4)} server, ${pair.name.padEnd(17)} 1 caller p50 ${at(0.5)} µs p99 ${at(0.99)} µs; ${CALLERS} callers ${((tally.calls * 1000) / tally.wallMs).toFixed(0)} calls/s, CPU per call server ${(tally.serverCpuUs / tally.calls).toFixed(1)} µs, client ${(tally.clientCpuUs / tally.calls).toFixed(1)} µs`,
      );
      pair.client.close();
    }
  } finally {
    for (const server of servers) await server.stop();
  }
}

async function main(): Promise<void> {
  const calls = numberArg('calls', 2000);
  const rounds = numberArg('rounds', 3);
  const at = process.argv.indexOf('--mode');
  const mode = at >= 0 ? process.argv[at + 1] : 'both';
  if (mode !== 'tls' && mode !== 'plain' && mode !== 'both') throw new Error('--mode is tls, plain or both');
  // A cluster CA and one node certificate (the node's own kind, cli/certs): the server and the caller present it.
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-h2-'));
  try {
    await createClusterCa({ dir });
    const clusterId = newClusterId();
    await createNodeCert({ dir, name: 'bench', clusterId, peersService: 'peers', namespace: 'bench' });
    const read = (name: string): Promise<string> => readFile(join(dir, name), 'utf8');
    const tls: Tls = {
      ca: await read('ca.crt'),
      cert: await read('bench.crt'),
      key: await read('bench.key'),
      clusterId,
    };
    if (mode !== 'plain') await runMode(tls, calls, rounds);
    if (mode !== 'tls') await runMode(null, calls, rounds);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve') await serve();
else await main();
