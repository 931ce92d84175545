// Unary call bench (not a test): what one peer call costs, the figures transports/grpc/lean-unary.ts,
// lean-serve.ts and lean-connections.ts rest on. Three PeerServers (the node's own server, mutual TLS with
// certificates issued here, or plaintext with --insecure) run in child processes answering Heartbeat: one
// serving unary calls through grpc-js's server (leanUnary false), one as a node serves (a marked connection of
// the lean client on transports/h2's framing: lean-connections.ts; any other's unary calls on lean-serve.ts),
// and "lean-serve only" (leanConnections false: every unary call answered on a node:http2 stream). This process
// sends heartbeats one at a time, interleaving the ways per round: a PeerPool on grpc-js's client and one with the
// lean client to each server, and (for scale) a raw message each way on one open grpc-js stream; then a unary
// svc.store.v1 Get from a StoreClientPool on each client (the lean one to both lean servers: a client's
// one-call read rides the lean client unless told otherwise; and transports/h2's client, the pool's h2UnaryClient
// switch, to the node-like server), the same Get with bare node:http2 (marked, as the
// lean client's dial is: the floor of a node:http2 client), and a GetStream message on an open call
// (bench/reads.ts's "svc" row). It prints each way's round-trip p50/p90 and the caller's and the server's CPU
// per call.
//
//   npx tsx bench/unary-call.ts [--calls 2000] [--insecure]
import { fork } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { createClusterCa, createNodeCert, newClusterId } from '../cli/certs/certs.js';
import * as pb from '../proto/gen/svc/replication/v1/replication.js';
import { PeerPool, type TransportInput } from '../transports/grpc/client.js';
import { CLUSTER_ID_METADATA_KEY, clusterChannelOptions } from '../transports/grpc/peer-identity.js';
import { PeerServer } from '../transports/grpc/server.js';
import * as http2 from 'node:http2';
import * as storePb from '../proto/gen/svc/store/v1/store.js';
import {
  STORE_METHODS,
  StoreClientPool,
  storeClientTransport,
  storeService,
  storeServiceDefinition,
} from '../transports/store-rpc/store-service.js';
import {
  peerClientCredentials,
  peerHttp2Dial,
  peerServerCredentials,
  type PeerSecurity,
} from '../transports/grpc/tls.js';

const ECHO_PATH = '/bench.Echo/Chat';
const identity = (b: Buffer): Buffer => b;
const WARMUP_CALLS = 200;

function numberArg(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer`);
  return value;
}

interface Setup {
  security: PeerSecurity;
  clusterId: string;
}

/** issue makes a cluster CA and one node certificate in `dir` (the server and the caller both present it). */
async function issue(dir: string): Promise<string> {
  const clusterId = newClusterId();
  await createClusterCa({ dir });
  await createNodeCert({ dir, name: 'bench', clusterId, peersService: 'peers', namespace: 'bench' });
  return clusterId;
}

async function load(dir: string, clusterId: string): Promise<Setup> {
  if (clusterId === '') return { security: { mode: 'insecure' }, clusterId };
  const material = {
    ca: await readFile(join(dir, 'ca.crt')),
    cert: await readFile(join(dir, 'bench.crt')),
    key: await readFile(join(dir, 'bench.key')),
  };
  return { security: { mode: 'mtls', material, clusterId }, clusterId };
}

// --- server side (child process) -------------------------------------------------------------------------

async function serve(): Promise<void> {
  const { dir, clusterId, leanUnary, leanConnections } = JSON.parse(process.argv[3]!) as {
    dir: string;
    clusterId: string;
    leanUnary: boolean;
    leanConnections: boolean;
  };
  const { security } = await load(dir, clusterId);
  const store = storeService({
    handler: {
      propose: () => Promise.reject(new Error('not in this bench')),
      readIndex: () => Promise.reject(new Error('not in this bench')),
      get: () => Promise.resolve({ found: true, valueJson: '{"v":"bench"}', version: 1 }),
    },
    commandBytesMax: 1024,
    callDeadlineMs: 5_000,
    proposeBatchCountMax: 8,
    streamOpenRequestCountMax: 64,
  });
  const server = await PeerServer.listen('127.0.0.1:0', {
    credentials: peerServerCredentials(security),
    leanUnary,
    leanConnections,
    handler: {
      onRequest(_callId, _request, call) {
        call.reply({ method: 'Heartbeat', body: pb.HeartbeatResponse.fromPartial({ acknowledged: true, term: 4 }) });
      },
      onCallClosed() {},
    },
    services: [
      {
        definition: {
          chat: {
            path: ECHO_PATH,
            requestStream: true,
            responseStream: true,
            requestSerialize: identity,
            requestDeserialize: identity,
            responseSerialize: identity,
            responseDeserialize: identity,
          },
        },
        implementation: {
          chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => call.on('data', (m: Buffer) => call.write(m)),
        },
        role: 'peer',
      },
      {
        name: 'svc.store.v1.Store',
        definition: storeServiceDefinition(),
        implementation: store.implementation,
        role: 'peer',
        leanUnary: true,
      },
    ],
  });
  process.on('message', (message) => {
    if (message === 'cpu') {
      const cpu = process.cpuUsage();
      process.send!(cpu.user + cpu.system);
    } else if (message === 'stop') void server.close().then(() => process.exit(0));
  });
  process.send!({ port: server.port, serving: server.unaryServing });
}

// --- client side ----------------------------------------------------------------------------------------------

const WAYS = [
  'grpc-js client → grpc-js server',
  'lean client → grpc-js server',
  'grpc-js client → lean server',
  'lean client → lean server',
  'lean client → lean-serve only',
  'stream message',
  'store Get, grpc-js client',
  'store Get, lean client',
  'store Get, lean client, lean-serve only',
  'store Get, h2 client',
  'store Get, bare node:http2',
  'store GetStream message',
] as const;
type Way = (typeof WAYS)[number];

interface ServerChild {
  address: string;
  cpuUs(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * startServerChild forks a PeerServer (lean unary serving on or off; with it, lean connections on or off: "lean-serve
 * only" answers a marked client's calls on node:http2 streams too) and checks it serves as asked.
 */
async function startServerChild(
  dir: string,
  clusterId: string,
  leanUnary: boolean,
  leanConnections = true,
): Promise<ServerChild> {
  const child = fork(
    fileURLToPath(import.meta.url),
    ['--serve', JSON.stringify({ dir, clusterId, leanUnary, leanConnections })],
    { execArgv: ['--import', 'tsx'] },
  );
  const { port, serving } = await new Promise<{ port: number; serving: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { port: number; serving: string }));
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  if (serving !== (leanUnary ? 'lean' : 'grpc-js')) throw new Error(`the server serves unary calls by ${serving}`);
  return {
    address: `127.0.0.1:${port}`,
    cpuUs: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve(m as number));
        child.send('cpu');
      }),
    stop: async () => {
      if (!child.connected) return;
      child.send('stop');
      await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/**
 * bareHttp2Get: a unary Get with nothing but node:http2 (a request, its frame, the answer's trailers awaited, no
 * deadline, no checks): the floor of a unary call on node:http2, beside which the lean client's own cost shows.
 */
function bareHttp2Get(
  session: http2.ClientHttp2Session,
  clusterId: string,
): { get: () => Promise<void>; close: () => void } {
  const request = Buffer.from(storePb.GetRequest.encode({ key: 'k' }).finish());
  const framed = Buffer.concat([Buffer.from([0, 0, 0, 0, request.length]), request]);
  const headers = {
    ':method': 'POST',
    ':path': STORE_METHODS.get,
    'content-type': 'application/grpc',
    te: 'trailers',
    'grpc-timeout': '5000m',
    ...(clusterId === '' ? {} : { [CLUSTER_ID_METADATA_KEY]: clusterId }),
  };
  const get = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const stream = session.request(headers, { endStream: false });
      let status: string | undefined;
      stream.on('data', () => undefined);
      stream.on('trailers', (trailers) => {
        status = String(trailers['grpc-status']);
      });
      stream.on('close', () => (status === '0' ? resolve() : reject(new Error(`bare Get: status ${status}`))));
      stream.end(framed);
    });
  return { get, close: () => session.close() };
}

async function main(): Promise<void> {
  const calls = numberArg('calls', 2000);
  const insecure = process.argv.includes('--insecure');
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-unary-'));
  const { security, clusterId } = await load(dir, insecure ? '' : await issue(dir));
  const servers: ServerChild[] = [];
  try {
    const classicServer = await startServerChild(dir, clusterId, false);
    servers.push(classicServer);
    const leanServer = await startServerChild(dir, clusterId, true);
    servers.push(leanServer);
    const leanServeServer = await startServerChild(dir, clusterId, true, false);
    servers.push(leanServeServer);
    const channelOptions = { 'grpc.ssl_target_name_override': 'localhost', ...clusterChannelOptions(clusterId) };
    const pending = new Map<number, (input: TransportInput) => void>();
    const deliver = (input: TransportInput): void => pending.get(input.requestId)?.(input);
    const classic = new PeerPool({ credentials: peerClientCredentials(security), channelOptions, deliver });
    const lean = new PeerPool({
      credentials: peerClientCredentials(security),
      channelOptions,
      deliver,
      lean: {
        dial: peerHttp2Dial(security, 'localhost'),
        headers: clusterId === '' ? {} : { [CLUSTER_ID_METADATA_KEY]: clusterId },
      },
    });
    const streamClient = new grpc.Client(leanServer.address, peerClientCredentials(security), channelOptions);
    const stream = streamClient.makeBidiStreamRequest(ECHO_PATH, identity, identity);
    let echoed: (() => void) | null = null;
    stream.on('data', () => echoed?.());
    // Its end at teardown arrives as a status; listening keeps it from being thrown.
    stream.on('error', () => undefined);
    const request = { method: 'Heartbeat', body: pb.HeartbeatRequest.fromPartial({ term: 4, regionId: 1 }) } as const;
    const message = Buffer.from(pb.HeartbeatRequest.encode(request.body).finish());
    const storePool = (lean: boolean, h2UnaryClient = false): StoreClientPool =>
      new StoreClientPool({
        ...storeClientTransport(security, { clusterId, serverNameOverride: 'localhost', lean, h2UnaryClient }),
        overStreams: false,
      });
    const storeClassic = storePool(false);
    const storeLean = storePool(true);
    const storeH2 = storePool(true, true);
    const storeStreams = new StoreClientPool(
      storeClientTransport(security, { clusterId, serverNameOverride: 'localhost' }),
    );
    const bareGet = bareHttp2Get(peerHttp2Dial(security, 'localhost')(leanServer.address), clusterId);
    const viaStore =
      (pool: StoreClientPool, address = leanServer.address) =>
      async (): Promise<void> => {
        const answer = await pool.get(address, 'k', Date.now() + 5_000);
        if (!answer.found) throw new Error('store Get: not found');
      };
    let nextId = 1;
    const viaPool = (pool: PeerPool, address: string) => (): Promise<void> =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        pending.set(id, (input) => {
          pending.delete(id);
          if (input.type === 'response') resolve();
          else reject(new Error(JSON.stringify(input)));
        });
        pool.send(id, address, request);
      });
    const ways: Record<Way, () => Promise<void>> = {
      'grpc-js client → grpc-js server': viaPool(classic, classicServer.address),
      'lean client → grpc-js server': viaPool(lean, classicServer.address),
      'grpc-js client → lean server': viaPool(classic, leanServer.address),
      'lean client → lean server': viaPool(lean, leanServer.address),
      'lean client → lean-serve only': viaPool(lean, leanServeServer.address),
      'stream message': () =>
        new Promise((resolve) => {
          echoed = resolve;
          stream.write(message);
        }),
      'store Get, grpc-js client': viaStore(storeClassic),
      'store Get, lean client': viaStore(storeLean),
      'store Get, lean client, lean-serve only': viaStore(storeLean, leanServeServer.address),
      'store Get, h2 client': viaStore(storeH2),
      'store Get, bare node:http2': bareGet.get,
      'store GetStream message': async () => {
        const answer = await storeStreams.get(leanServer.address, 'k', Date.now() + 5_000);
        if (!answer.found) throw new Error('store GetStream: not found');
      },
    };
    for (let i = 0; i < WARMUP_CALLS; i++) for (const way of Object.values(ways)) await way();
    const rtts = Object.fromEntries(WAYS.map((way) => [way, [] as number[]])) as Record<Way, number[]>;
    const serverOf = (way: Way): ServerChild =>
      way.endsWith('grpc-js server') ? classicServer : way.endsWith('lean-serve only') ? leanServeServer : leanServer;
    if (storeLean.unaryClient !== 'lean' || storeClassic.unaryClient !== 'grpc-js')
      throw new Error('the store pools do not send as named');
    for (let i = 0; i < calls; i++)
      for (const [name, way] of Object.entries(ways) as Array<[Way, () => Promise<void>]>) {
        const began = process.hrtime.bigint();
        await way();
        rtts[name].push(Number(process.hrtime.bigint() - began) / 1000);
      }
    console.log(
      `${calls} calls each way, interleaved, ${insecure ? 'plaintext' : 'mutual TLS'}; servers in child processes`,
    );
    for (const [name, way] of Object.entries(ways) as Array<[Way, () => Promise<void>]>) {
      // CPU per call: a run of this way alone, caller and server measured around it.
      const server0 = await serverOf(name).cpuUs();
      const caller0 = process.cpuUsage();
      for (let i = 0; i < calls; i++) await way();
      const caller = process.cpuUsage(caller0);
      const server = (await serverOf(name).cpuUs()) - server0;
      const sorted = rtts[name].sort((a, b) => a - b);
      const at = (q: number): string => sorted[Math.floor(q * sorted.length)]!.toFixed(0);
      console.log(
        `  ${name.padEnd(33)} round trip p50 ${at(0.5)} µs, p90 ${at(0.9)} µs; CPU per call: caller ${((caller.user + caller.system) / calls).toFixed(0)} µs, server ${(server / calls).toFixed(0)} µs`,
      );
    }
    stream.end();
    streamClient.close();
    classic.close();
    lean.close();
    storeClassic.close();
    storeLean.close();
    storeH2.close();
    storeStreams.close();
    bareGet.close();
  } finally {
    for (const server of servers) await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--serve') await serve();
else await main();
