// A three-node cluster with the developer API, each node a child process inside its own network namespace
// (netns.ts), started from the hub namespace where this process runs. Peers dial each other's private
// addresses over mutual TLS; clients reach every node's gRPC port (svc.store.v1, svc.admin.v1) and HTTP port
// from the hub. The nodes are the real thing (api-node-child.ts: cli/node's Node plus the developer API),
// spoken to over IPC only to start, stop and mint the first admin key.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeConfig } from '../../cli/node/config.js';
import { clientCredentials } from '../../transports/grpc/tls.js';
import { clientChannelOptions } from '../../transports/grpc/channel-options.js';
import { resolveGrpcLimits } from '../../transports/grpc/limits.js';
import { StoreClientPool, storeClientTransport } from '../../transports/store-rpc/store-service.js';
import { AdminClientPool } from '../../transports/admin/admin-client.js';
import { MemberChange, type StatusResponse } from '../../proto/gen/svc/admin/v1/admin.js';
import { NodeChildProcess } from '../node/child-harness.js';
import { makePki, type Pki } from '../node/harness.js';
import { netnsExec, type NodeHost } from './netns.js';

const entry = fileURLToPath(new URL('../cluster-api/api-node-child.ts', import.meta.url));

/** GRPC_PORT and HTTP_PORT are every node's ports: each node has an address of its own. */
export const GRPC_PORT = 7000;
export const HTTP_PORT = 8080;
/** STATUS_DEADLINE_MS bounds one admin Status call (a paused or cut-off node does not answer). */
export const STATUS_DEADLINE_MS = 600;
/** TRANSFER_DEADLINE_MS bounds a leadership transfer request. */
export const TRANSFER_DEADLINE_MS = 5_000;

export interface NetnsClusterOptions {
  dir: string;
  hosts: readonly NodeHost[];
  tickMs: number;
  logLevel: NodeConfig['logLevel'];
}

export interface ClusterNode {
  name: string;
  grpcAddr: string;
  httpUrl: string;
  config: NodeConfig;
  netns: string;
  process: NodeChildProcess | null;
  paused: boolean;
}

export class NetnsCluster {
  readonly nodes: ClusterNode[];
  /**
   * store is the clients' svc.store.v1 pool (writes at the leader, Get anywhere). svc.store.v1 serves members'
   * peer certificates only, so the clients hold the first node's, with the cluster id, as that node would.
   */
  readonly store: StoreClientPool;
  /** admin is the svc.admin.v1 pool (Status, ChangeMember), with the admin certificate the CLI holds. */
  readonly admin: AdminClientPool;

  private constructor(nodes: ClusterNode[], store: StoreClientPool, admin: AdminClientPool) {
    this.nodes = nodes;
    this.store = store;
    this.admin = admin;
  }

  static async start(options: NetnsClusterOptions): Promise<NetnsCluster> {
    const names = options.hosts.map((h) => h.name);
    const pki: Pki = await makePki(options.dir, names);
    const bootstrap = options.hosts.map((h) => ({
      name: h.name,
      grpcAddr: `${h.address}:${GRPC_PORT}`,
      httpAddr: `http://${h.address}:${HTTP_PORT}`,
    }));
    const nodes: ClusterNode[] = options.hosts.map((host) => ({
      name: host.name,
      grpcAddr: `${host.address}:${GRPC_PORT}`,
      httpUrl: `http://${host.address}:${HTTP_PORT}`,
      netns: host.netns,
      process: null,
      paused: false,
      config: {
        name: host.name,
        dataDir: join(options.dir, host.name),
        grpcListen: `${host.address}:${GRPC_PORT}`,
        httpListen: `${host.address}:${HTTP_PORT}`,
        bootstrap,
        tls: pki.tls(host.name),
        // The workload's HTTP is plaintext: the node's HTTPS is not what this run tests.
        httpTls: { mode: 'insecure' },
        tickMs: options.tickMs,
        logLevel: options.logLevel,
        processMetrics: false,
        // No Redis: the workload needs keys only (queues answer 503). The rate limit must never refuse the test.
        api: {
          localRedis: false,
          rateLimitPerSecond: 1_000_000,
          accessLog: false,
          runWorker: false,
          albumWorker: false,
        },
      },
    }));
    const credentialsOf = async (tls: NodeConfig['tls']): Promise<ReturnType<typeof clientCredentials>> => {
      if (tls.mode !== 'mtls') throw new Error('the cluster runs mutual TLS');
      const [ca, cert, key] = await Promise.all([readFile(tls.caFile), readFile(tls.certFile), readFile(tls.keyFile)]);
      return clientCredentials({ ca, cert, key });
    };
    // The store client's unary calls go on the lean HTTP/2 client, as a node's own do.
    const storeTransportOf = async (
      tls: NodeConfig['tls'],
      clusterId: string,
    ): Promise<ReturnType<typeof storeClientTransport>> => {
      if (tls.mode !== 'mtls') throw new Error('the cluster runs mutual TLS');
      const [ca, cert, key] = await Promise.all([readFile(tls.caFile), readFile(tls.certFile), readFile(tls.keyFile)]);
      return storeClientTransport(
        { mode: 'mtls', material: { ca, cert, key } },
        { clusterId, serverNameOverride: 'localhost' },
      );
    };
    // The node certificates name localhost; the clients dial private addresses and check that name.
    const channelOptions = {
      ...clientChannelOptions(resolveGrpcLimits()),
      'grpc.ssl_target_name_override': 'localhost',
      'grpc.default_authority': 'localhost',
    };
    const cluster = new NetnsCluster(
      nodes,
      new StoreClientPool(await storeTransportOf(pki.tls(names[0]!), pki.clusterId)),
      new AdminClientPool({ credentials: await credentialsOf(pki.adminTls()), channelOptions }),
    );
    try {
      await Promise.all(nodes.map((node) => cluster.launch(node)));
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  private async launch(node: ClusterNode): Promise<void> {
    node.process = await NodeChildProcess.fork(entry, node.config, { args: ['{}'], wrapper: netnsExec(node.netns) });
    node.paused = false;
  }

  node(name: string): ClusterNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  running(node: ClusterNode): boolean {
    return node.process?.running ?? false;
  }

  /** bootstrapAdmin mints the first admin key through a running node's own store (what `svc keys create` does). */
  async bootstrapAdmin(): Promise<{ key: string; keyId: string }> {
    const node = this.nodes.find((n) => this.running(n) && !n.paused);
    if (!node?.process) throw new Error('no running node to mint the admin key');
    return (await node.process.request({ op: 'bootstrap-admin', name: 'jepsen-admin' })) as {
      key: string;
      keyId: string;
    };
  }

  async kill9(name: string): Promise<void> {
    const node = this.node(name);
    await node.process?.kill9();
    node.paused = false;
  }

  async restart(name: string): Promise<void> {
    const node = this.node(name);
    if (this.running(node)) throw new Error(`${name} is still running`);
    await this.launch(node);
  }

  pause(name: string): void {
    const node = this.node(name);
    node.process?.pause();
    node.paused = true;
  }

  resume(name: string): void {
    const node = this.node(name);
    node.process?.resume();
    node.paused = false;
  }

  /** status is a node's own view through svc.admin.v1 Status, or null when it does not answer in time. */
  async status(name: string): Promise<StatusResponse | null> {
    return this.admin.status(this.node(name).grpcAddr, Date.now() + STATUS_DEADLINE_MS).catch(() => null);
  }

  /** statuses asks every node at once. */
  async statuses(): Promise<Map<string, StatusResponse | null>> {
    const answers = await Promise.all(this.nodes.map(async (n) => [n.name, await this.status(n.name)] as const));
    return new Map(answers);
  }

  /** leader is the node that says it leads the highest term among those that answer, or null. */
  async leader(): Promise<{ name: string; term: number } | null> {
    let best: { name: string; term: number } | null = null;
    for (const [name, status] of await this.statuses()) {
      if (status?.role === 'leader' && (!best || status.term > best.term)) best = { name, term: status.term };
    }
    return best;
  }

  /** transfer asks the leader to hand leadership to `to` (svc.admin.v1 ChangeMember TRANSFER). */
  async transfer(leader: string, to: string): Promise<string> {
    const answer = await this.admin.changeMember(
      this.node(leader).grpcAddr,
      { change: MemberChange.MEMBER_CHANGE_TRANSFER, name: to, hops: 0, prefixes: [], tenants: [], clear: false },
      Date.now() + TRANSFER_DEADLINE_MS,
    );
    return answer.detail;
  }

  /** stop resumes paused nodes and stops every node cleanly (kill -9 past the grace), then closes the clients. */
  async stop(): Promise<void> {
    for (const node of this.nodes) if (node.paused) this.resume(node.name);
    await Promise.all(this.nodes.map((node) => node.process?.stop().catch(() => node.process?.kill9())));
    this.store.close();
    this.admin.close();
  }
}
