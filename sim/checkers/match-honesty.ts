// Match honesty: a leader's view of each follower's match never exceeds what that follower holds
// durably, and a commit is backed by real copies.
//  - The view is visible on the wire: a heartbeat's replication_lag[id] is the leader's last seqno
//    minus its match for member id. For a follower in the leader's term (whose log cannot lose
//    entries that match the leader), that match must be synced in the follower's WAL as the entry
//    the leader has there.
//  - When a leader moves its commit seqno to C, a majority of its roster's voters (itself included)
//    hold C durably as the leader's entry (or in a snapshot). Raft's commit rule, judged from the disks
//    rather than from the acknowledgements the leader counted.
import { voterIds } from '../../engine/roster.js';
import type { Entry, Roster } from '../../engine/types.js';
import type { LogView } from '../log-view.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker, CheckerWorld, StepRecord } from './checker.js';

export class MatchHonestyChecker implements Checker {
  readonly name = 'match-honesty';

  constructor(private readonly world: CheckerWorld) {}

  afterStep(step: StepRecord): void {
    const { node, effects, before, after } = step;
    if (after.role !== 'leader' || step.cutShort) return;
    for (const effect of effects) {
      if (effect.type !== 'send' || effect.request.method !== 'Heartbeat') continue;
      const body = effect.request.body;
      const lag = body.replicationLag[effect.toId];
      if (lag === undefined || body.term !== after.term) continue;
      this.checkMatch(node, effect.toId, after.lastSeq - lag, after.term, after.roster);
    }
    if (before && before.role === 'leader' && before.term === after.term && after.commitSeq > before.commitSeq)
      this.checkCommit(node, step);
  }

  private checkMatch(leader: SimNode, id: number, match: number, term: number, roster: Roster): void {
    const follower = this.memberNode(id, roster);
    const fs = follower?.status;
    if (!follower || follower === leader || !follower.isLive || !fs || fs.term !== term || fs.reseed || match <= 0)
      return;
    // A filtered member's frontier counts toward nothing (never a voter while filtered), and it drops its log
    // whenever its filter changes, so an answer in flight may name more than it still holds (docs/protocol.md,
    // "Filtered members"). A member whose filter was removed is checked again (its frontier gates promotion).
    if (roster.filters?.[id] !== undefined) return;
    if (!holds(follower.storage.durable, leader.storage.written, match)) {
      const durable = follower.storage.durable;
      violate(
        this.name,
        `leader ${leader.name} (term ${term}) counts member ${id} (${follower.name}) as matched to ${match}, but its WAL is synced to ` +
          `${durable.lastSeq} with term ${durable.termAt(match) ?? 'nothing'} at ${match} (leader's: ${leader.storage.written.termAt(match)})`,
        leader.index,
      );
    }
  }

  private checkCommit(leader: SimNode, step: StepRecord): void {
    const after = step.after;
    const seq = after.commitSeq;
    const voters = voterIds(after.roster);
    const holders: number[] = [];
    for (const id of voters) {
      const node = id === after.id ? leader : this.memberNode(id, after.roster);
      if (node && holds(node.storage.durable, leader.storage.written, seq)) holders.push(id);
    }
    if (holders.length * 2 <= voters.length) {
      violate(
        this.name,
        `leader ${leader.name} committed seq ${seq} in term ${after.term} but only voters [${holders.join(',')}] of [${voters.join(',')}] hold it durably`,
        leader.index,
      );
    }
  }

  /**
   * memberNode finds the node behind a member id, also one that does not know its id yet (a joiner whose
   * JoinCluster answer was lost still takes ships at its address, and may even be promoted: seed 48).
   */
  private memberNode(id: number, roster: Roster): SimNode | undefined {
    const known = this.world.nodeByMemberId(id);
    if (known) return known;
    const addr = roster.members.find((m) => m.id === id)?.grpcAddr;
    return addr === undefined ? undefined : this.world.nodes.find((n) => n.id.grpcAddr === addr);
  }
}

/** holds: `durable` holds `seq` as the entry `reference` has there (or covers it by a snapshot). */
function holds(durable: LogView, reference: LogView, seq: number): boolean {
  if (seq <= durable.base) return true;
  if (seq > durable.lastSeq) return false;
  const theirs: Entry | undefined = reference.entryAt(seq);
  if (!theirs) return true; // compacted at the reference: committed long ago
  return durable.termAt(seq) === theirs.term;
}
