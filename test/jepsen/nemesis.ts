// The faults the Jepsen-style run injects while the clients work, one round at a time, each written to the
// run's timeline (ms since the run began, the history's clock): network partitions (iptables DROP rules in the
// nodes' namespaces), kill -9 and restart, SIGSTOP and SIGCONT, and leadership transfers through the admin API.
// After each round everything is healed and the run waits for a leader that every node follows.
import type { Prng } from '../../sim/prng.js';
import type { History } from './history.js';
import type { NetnsCluster } from './netns-cluster.js';
import { heal, partition, type Topology } from './netns.js';

export const NEMESIS_KINDS = [
  // The leader alone on one side: the majority elects another while clients keep reading at the old one.
  'partition-leader',
  // One node (any) alone.
  'partition-one',
  // The leader and one follower cannot talk, both still reach the third node.
  'partition-bridge',
  'kill-leader',
  'kill-one',
  'pause-leader',
  'pause-one',
  'transfer-leader',
] as const;
export type NemesisKind = (typeof NEMESIS_KINDS)[number];

export interface TimelineEntry {
  atMs: number;
  text: string;
}

/** RECOVERY_POLL_MS paces the wait for a leader after a round. */
const RECOVERY_POLL_MS = 100;
/** LEADER_LOOKUP_MS bounds the search for the leader a *-leader round needs (a busy node may miss one poll). */
const LEADER_LOOKUP_MS = 10_000;
/** OBSERVE_POLL_MS paces the observer that writes every node's role and term changes into the timeline. */
const OBSERVE_POLL_MS = 200;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class Nemesis {
  readonly timeline: TimelineEntry[] = [];
  /** unrecovered counts rounds after which no leader was followed by every node within the recovery timeout. */
  unrecovered = 0;
  private partitioned = false;

  constructor(
    private readonly cluster: NetnsCluster,
    private readonly topology: Topology,
    private readonly clock: History,
    private readonly prng: Prng,
    private readonly log: (line: string) => void,
  ) {}

  note(text: string): void {
    const entry = { atMs: this.clock.nowMs(), text };
    this.timeline.push(entry);
    this.log(`  [${String(entry.atMs).padStart(6)} ms] ${text}`);
  }

  /** round injects one fault of `kind`, holds it holdMs, heals it, and waits (up to recoverTimeoutMs) for a followed leader. */
  async round(kind: NemesisKind, holdMs: number, recoverTimeoutMs: number): Promise<void> {
    const names = this.cluster.nodes.map((n) => n.name);
    const leader = await this.findLeader(kind.endsWith('-leader') ? LEADER_LOOKUP_MS : 0);
    const victim = kind.endsWith('-leader') && leader !== null ? leader : names[this.prng.int(names.length)]!;
    const others = names.filter((n) => n !== victim);
    const who = `${victim}${victim === leader ? ' (the leader)' : ''}`;
    switch (kind) {
      case 'partition-leader':
      case 'partition-one':
        await partition(this.topology, [[victim], others]);
        this.partitioned = true;
        this.note(`${kind}: ${who} cut off from ${others.join(', ')}`);
        await sleep(holdMs);
        await this.healNetwork();
        break;
      case 'partition-bridge': {
        const cut = others[this.prng.int(others.length)]!;
        await partition(this.topology, [[victim], [cut]]);
        this.partitioned = true;
        this.note(
          `${kind}: ${who} and ${cut} cut off from each other, both reach ${others.filter((n) => n !== cut).join(', ')}`,
        );
        await sleep(holdMs);
        await this.healNetwork();
        break;
      }
      case 'kill-leader':
      case 'kill-one':
        await this.cluster.kill9(victim);
        this.note(`${kind}: kill -9 ${who}`);
        await sleep(holdMs);
        await this.cluster.restart(victim);
        this.note(`restarted ${victim}`);
        break;
      case 'pause-leader':
      case 'pause-one':
        this.cluster.pause(victim);
        this.note(`${kind}: SIGSTOP ${who}`);
        await sleep(holdMs);
        this.cluster.resume(victim);
        this.note(`SIGCONT ${victim}`);
        break;
      case 'transfer-leader': {
        if (leader === null) {
          this.note(`${kind}: no leader to transfer from`);
          break;
        }
        const to = others[this.prng.int(others.length)]!;
        this.note(`${kind}: ${leader} asked to hand leadership to ${to}`);
        const detail = await this.cluster.transfer(leader, to).then(
          (d) => d || 'accepted',
          (err: unknown) => `refused: ${(err as Error).message}`,
        );
        this.note(`transfer ${leader} -> ${to}: ${detail}`);
        await sleep(holdMs);
        break;
      }
    }
    await this.waitRecovered(recoverTimeoutMs);
  }

  /** findLeader polls for the leader up to timeoutMs (at least once); null when none answers as one. */
  private async findLeader(timeoutMs: number): Promise<string | null> {
    const started = this.clock.nowMs();
    // Bounded by timeoutMs.
    for (;;) {
      const leader = await this.cluster.leader();
      if (leader !== null || this.clock.nowMs() - started >= timeoutMs) return leader?.name ?? null;
      await sleep(RECOVERY_POLL_MS);
    }
  }

  private async healNetwork(): Promise<void> {
    await heal(this.topology);
    this.partitioned = false;
    this.note('healed the network');
  }

  /** waitRecovered polls until one leader leads a term every node is in, or the timeout passes (noted either way). */
  async waitRecovered(timeoutMs: number): Promise<void> {
    const started = this.clock.nowMs();
    // Bounded by timeoutMs.
    while (this.clock.nowMs() - started < timeoutMs) {
      const statuses = [...(await this.cluster.statuses()).values()];
      const leaders = statuses.filter((s) => s?.role === 'leader');
      if (
        leaders.length === 1 &&
        statuses.every((s) => s !== null && s.term === leaders[0]!.term && s.leaderId === leaders[0]!.id)
      ) {
        this.note(`recovered: ${leaders[0]!.name} leads term ${leaders[0]!.term}, followed by every node`);
        return;
      }
      await sleep(RECOVERY_POLL_MS);
    }
    this.unrecovered++;
    this.note(`NOT recovered within ${timeoutMs} ms`);
  }

  /**
   * observe notes each node's role and term as they change (from svc.admin.v1 Status, as the hub sees it) until
   * stopped() holds: the timeline then shows when a cut-off leader stepped down against when another was elected.
   */
  async observe(stopped: () => boolean): Promise<void> {
    const last = new Map<string, string>();
    // Bounded by stopped().
    while (!stopped()) {
      const polled = await this.cluster.statuses();
      for (const [name, status] of polled) {
        const now = status === null ? 'silent' : `${status.role} term ${status.term}`;
        if (last.get(name) !== now) this.note(`  ${name}: ${now}`);
        last.set(name, now);
      }
      await sleep(OBSERVE_POLL_MS);
    }
  }

  /** healAll undoes whatever a failed round left: the network, paused nodes, killed nodes. */
  async healAll(): Promise<void> {
    if (this.partitioned) await this.healNetwork().catch(() => undefined);
    for (const node of this.cluster.nodes) {
      if (node.paused) this.cluster.resume(node.name);
      if (!this.cluster.running(node))
        await this.cluster
          .restart(node.name)
          .catch((err: unknown) => this.note(`restart of ${node.name} failed: ${String(err)}`));
    }
  }
}
