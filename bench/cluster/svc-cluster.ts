// Our three-node cluster for the bench, started exactly as a user starts one (`svc cluster`: child
// processes, mutual TLS, the WAL's real fdatasync), and written to through svc.store.v1 Propose at
// the leader with a follower's peer certificate and the cluster id, as that follower forwarding a write
// would (svc.store.v1 serves members' peer certificates only), and read through svc.store.v1 GetStream or
// Get at any member with the same certificate (linearizable: the member's own store read).
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { encodeCommand, resultFromMessage } from '../../store/command.js';
import { StoreClientPool, storeClientTransport } from '../../transports/store-rpc/store-service.js';
import { DEFAULT_H2_UNARY_CLIENT } from '../../transports/store-rpc/store-client-transport.js';
import type { ClusterFile } from '../../cli/cluster-file.js';
import { waitUntil } from './ports.js';

const SVC_BIN = fileURLToPath(new URL('../../bin/svc.js', import.meta.url));
/** SVC_START_TIMEOUT_MS bounds three tsx processes starting and electing on two shared cores. */
const SVC_START_TIMEOUT_MS = 120_000;
const SVC_STOP_TIMEOUT_MS = 30_000;
const WRITE_DEADLINE_MS = 10_000;
const READ_DEADLINE_MS = 10_000;

export interface SvcCluster {
  cluster: ClusterFile;
  leaderName: string;
  /** put proposes through a StoreClientPool as a follower forwarding writes does: one loop turn's writes ride one ProposeBatch. */
  put(key: string, value: string): Promise<void>;
  /** putAlone proposes each write in its own Propose call (a pool with proposeBatchCountMax 1). */
  putAlone(key: string, value: string): Promise<void>;
  /** get reads a key at members[member] through svc.store.v1 (a message on one open GetStream call per member), resolving its value. */
  get(member: number, key: string): Promise<string | null>;
  /** getAlone reads with one unary Get call per read. */
  getAlone(member: number, key: string): Promise<string | null>;
  stop(): Promise<void>;
}

/**
 * startSvcCluster runs `svc cluster --dir dir`; nodeOptions (e.g. --cpu-prof) go to each node's process. With
 * insecure the members and the bench talk plaintext (`--insecure`: a like-for-like transport beside a plaintext
 * etcd); otherwise mutual TLS, the default a user gets.
 */
export async function startSvcCluster(
  dir: string,
  nodeOptions: string[] = [],
  engineLimits: string[] = [],
  insecure = false,
  clusterFlags: string[] = [],
): Promise<SvcCluster> {
  const supervisor = spawnSupervisor([
    SVC_BIN,
    'cluster',
    '--dir',
    dir,
    '--no-api',
    '--log-level',
    'warn',
    ...(insecure ? ['--insecure'] : []),
    ...nodeOptions.map((o) => `--node-option=${o}`),
    ...engineLimits.map((l) => `--engine-limit=${l}`),
    ...clusterFlags,
  ]);
  try {
    await waitUntil(
      async () => {
        if (supervisor.exited()) throw new Error(`svc cluster exited: ${supervisor.output()}`);
        return /all 3 nodes answer \/health 200/.test(supervisor.output());
      },
      'svc cluster to turn healthy',
      SVC_START_TIMEOUT_MS,
      200,
    );
    const cluster = JSON.parse(await readFile(join(dir, 'cluster.json'), 'utf8')) as ClusterFile;
    if ((cluster.tls.mode === 'mtls') === insecure)
      throw new Error(`the bench cluster runs ${cluster.tls.mode}, not what was asked`);
    const leader = await awaitLeader(cluster);
    const follower = cluster.members.find((m) => m.name !== leader.name)!;
    return storeClients(cluster, leader, await storePoolOptions(cluster, follower), supervisor.stop);
  } catch (err) {
    await supervisor.stop();
    throw err;
  }
}

/** attachSvcCluster writes to a cluster already running (`svc cluster --dir dir`); stop closes the clients only. */
export async function attachSvcCluster(dir: string): Promise<SvcCluster> {
  const cluster = JSON.parse(await readFile(join(dir, 'cluster.json'), 'utf8')) as ClusterFile;
  const leader = await awaitLeader(cluster);
  const follower = cluster.members.find((m) => m.name !== leader.name)!;
  return storeClients(cluster, leader, await storePoolOptions(cluster, follower), async () => undefined);
}

/** spawnSupervisor starts `svc cluster`, keeping its stdout; stop sends SIGINT, then SIGKILL after SVC_STOP_TIMEOUT_MS. */
function spawnSupervisor(args: string[]): { output: () => string; exited: () => boolean; stop: () => Promise<void> } {
  const supervisor = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  supervisor.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => supervisor.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (supervisor.exitCode !== null || supervisor.signalCode !== null) return;
    supervisor.kill('SIGINT');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      exited,
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          supervisor.kill('SIGKILL');
          resolve();
        }, SVC_STOP_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
  };
  return { output: () => output, exited: () => supervisor.exitCode !== null, stop };
}

type Member = ClusterFile['members'][number];

/** awaitLeader polls each member's /status until one says it leads (bounded by SVC_START_TIMEOUT_MS). */
async function awaitLeader(cluster: ClusterFile): Promise<Member> {
  let leader = cluster.members[0]!;
  await waitUntil(
    async () => {
      for (const m of cluster.members) {
        // The metrics listener serves /status too, in plaintext on loopback (the HTTP port is HTTPS).
        const status = (await (
          await fetch(`${m.metricsAddr ?? m.httpAddr}/status`)
        )
          .json()
          .catch(() => ({ role: '' }))) as {
          role: string;
        };
        if (status.role === 'leader') {
          leader = m;
          return true;
        }
      }
      return false;
    },
    'a leader',
    SVC_START_TIMEOUT_MS,
  );
  return leader;
}

type PoolOptions = ConstructorParameters<typeof StoreClientPool>[0];

/**
 * storePoolOptions: the follower's peer certificate and the cluster id (plaintext with --insecure); the unary
 * calls on the lean HTTP/2 client as a node's own are, unless SVC_GRPC_LEAN_UNARY_CLIENT=0 (which the members
 * read too: the whole run on grpc-js's client). The bench's own pools' lean calls go over transports/h2's
 * H2UnaryClient as storeClientTransport's default has them; SVC_BENCH_H2_UNARY_CLIENT=0 puts them on node:http2's
 * client (lean-unary.ts), =1 on H2UnaryClient (the members are unchanged either way).
 */
async function storePoolOptions(cluster: ClusterFile, follower: Member): Promise<PoolOptions> {
  const tls = cluster.tls;
  const lean = !['0', 'false'].includes(process.env.SVC_GRPC_LEAN_UNARY_CLIENT ?? '');
  const h2Switch = process.env.SVC_BENCH_H2_UNARY_CLIENT ?? '';
  const h2UnaryClient = ['1', 'true'].includes(h2Switch)
    ? true
    : ['0', 'false'].includes(h2Switch)
      ? false
      : DEFAULT_H2_UNARY_CLIENT;
  const clusterId = cluster.clusterId ?? '';
  return tls.mode === 'mtls'
    ? storeClientTransport(
        {
          mode: 'mtls',
          material: {
            ca: await readFile(tls.caFile),
            cert: await readFile(join(dirname(tls.caFile), `${follower.name}.crt`)),
            key: await readFile(join(dirname(tls.caFile), `${follower.name}.key`)),
          },
        },
        { clusterId, serverNameOverride: tls.serverName, lean, h2UnaryClient },
      )
    : storeClientTransport({ mode: 'insecure' }, { clusterId, lean, h2UnaryClient });
}

/** storeClients: the bench's writes (at the leader) and reads (at any member) over two store pools. */
function storeClients(
  cluster: ClusterFile,
  leader: Member,
  poolOptions: PoolOptions,
  stopSupervisor: () => Promise<void>,
): SvcCluster {
  const pool = new StoreClientPool(poolOptions);
  // One unary Propose call per write: what a client without coalescing or streams pays (the baseline of the batching).
  const alonePool = new StoreClientPool({ ...poolOptions, proposeBatchCountMax: 1, overStreams: false });
  const run = randomUUID().slice(0, 8);
  const putVia = async (via: StoreClientPool, k: string, value: string): Promise<void> => {
    const requestId = `bench-${run}-${k}`;
    const command = encodeCommand({ op: 'put', key: k, value: { d: value }, requestId });
    const result = resultFromMessage(
      (await via.propose(leader.grpcAddr, command, Date.now() + WRITE_DEADLINE_MS, requestId)).result,
    );
    if (result.outcome !== 'applied') throw new Error(`put ${k}: ${result.outcome}`);
  };
  const getVia = async (via: StoreClientPool, member: number, k: string): Promise<string | null> => {
    const answer = await via.get(
      cluster.members[member % cluster.members.length]!.grpcAddr,
      k,
      Date.now() + READ_DEADLINE_MS,
    );
    return answer.found ? (JSON.parse(answer.valueJson) as { d: string }).d : null;
  };
  return {
    cluster,
    leaderName: leader.name,
    put: (k, value) => putVia(pool, k, value),
    putAlone: (k, value) => putVia(alonePool, k, value),
    get: (member, k) => getVia(pool, member, k),
    getAlone: (member, k) => getVia(alonePool, member, k),
    stop: async () => {
      pool.close();
      alonePool.close();
      await stopSupervisor();
    },
  };
}
