// InProcessCluster runs founders as Node instances in this process (real sockets, real files),
// plus helpers to find the leader, add joiners and shut everything down.
import { join } from 'node:path';
import { Node } from '../../cli/node/node.js';
import type { NodeConfig } from '../../cli/node/config.js';
import { makePki, nodeConfig, planNodes, removeDir, tempDir, waitFor, type PlannedNode, type Pki } from './harness.js';

export class InProcessCluster {
  readonly nodes = new Map<string, Node>();
  plans: PlannedNode[] = [];
  pki!: Pki;
  dir = '';

  /** start makes certificates for every name in `certNames`, plans the founders and starts them. */
  async start(founders: string[], certNames: string[], extra: Partial<NodeConfig> = {}): Promise<void> {
    this.dir = await tempDir('cluster');
    this.pki = await makePki(this.dir, certNames);
    this.plans = await planNodes(founders);
    const bootstrap = this.plans.map((p) => p.member);
    for (const plan of this.plans) {
      this.nodes.set(
        plan.name,
        new Node(nodeConfig(plan, join(this.dir, plan.name), this.pki.tls(plan.name), { bootstrap }, extra)),
      );
    }
    await Promise.all([...this.nodes.values()].map((n) => n.start()));
  }

  /** join starts a new node `name` (its certificate made by start) that dials in through `seeds`. */
  async join(name: string, seeds: string[], extra: Partial<NodeConfig> = {}): Promise<Node> {
    const [plan] = await planNodes([name]);
    const joiner = new Node(nodeConfig(plan!, join(this.dir, name), this.pki.tls(name), { seeds }, extra));
    this.nodes.set(name, joiner);
    await joiner.start();
    return joiner;
  }

  node(name: string): Node {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  /** leader is the running node that leads the highest term, if any. */
  leader(): Node | undefined {
    let best: Node | undefined;
    for (const node of this.nodes.values()) {
      const s = node.status();
      if (s.role === 'leader' && (!best || s.term > best.status().term)) best = node;
    }
    return best;
  }

  async waitLeader(timeoutMs = 10_000): Promise<Node> {
    await waitFor(() => this.leader() !== undefined, 'a leader', timeoutMs);
    return this.leader()!;
  }

  followers(): Node[] {
    const leader = this.leader();
    return [...this.nodes.values()].filter((n) => n !== leader && !n.status().removed);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.nodes.values()].map((n) => n.stop()));
    if (this.dir !== '') await removeDir(this.dir);
  }
}
