// Progress: the leader's view of each follower and the rules that move it (etcd's tracker/).
// The leader's engine decides when to ship; a Progress says how much may be in flight, where
// the next segment starts, and what a follower's answer changes.
import { assert } from './assert.js';
import { hasQuorum } from './quorum.js';
import type { Roster } from './types.js';

/** ProgressState: probe = one ship at a time until accepted; replicate = pipelined; paused = the follower pulls. */
export type ProgressState = 'probe' | 'replicate' | 'paused';

/**
 * LiveStream is a follower's StreamSegments call the leader keeps open past its burst and pushes that
 * follower's segments onto, in order, instead of a ShipSegment call each (docs/protocol.md, "Live streams").
 * Nothing answers a chunk: the follower's ReportApplied (once per apply round) is its only acknowledgement.
 */
export interface LiveStream {
  callId: number;
  openedTick: number;
  /** pushedCommitSeq: the commit seqno the last chunk pushed carried (commit news is what passes it). */
  pushedCommitSeq: number;
  /** waitSinceTick: when the oldest segment pushed and not yet reported durable was pushed (or a report last moved). */
  waitSinceTick: number;
  /**
   * unreportedEnds: the last seqno of each segment with entries pushed and not yet reported durable. Their
   * count is the stream's window (inflightSegmentCountMax, as for ships), so under load what waits goes
   * in fewer, larger segments once a report frees the window.
   */
  unreportedEnds: number[];
}

/** Progress is the leader's view of one follower. */
export class Progress {
  /** live: the follower's stream we push onto, null = ship with ShipSegment calls. */
  live: LiveStream | null = null;
  /** matchSeq: the follower's durable, matched frontier as last reported (decision 6). */
  matchSeq = 0;
  state: ProgressState = 'probe';
  /** inflight: the request ids of ships not answered yet. */
  private readonly inflight = new Set<number>();
  pausedTick = 0;
  /** ackedCommitSeq: the highest commit seqno the follower surely took from a ship it accepted (see shipAccepted). */
  ackedCommitSeq = 0;
  /** reportedCapabilities: the bits the follower last reported (heartbeat answers, ReportApplied). */
  private reportedCapabilities = 0;
  /** capabilitiesHeard: the follower has reported its bits at least once to this leader. */
  private capabilitiesHeard = false;
  /**
   * matchFloor: for a member whose filter was set or removed at this seq (engine/communities.ts), 0 otherwise.
   * Such a member drops what it held when the first segment of the new kind reaches it, so a frontier it
   * reported before is stale; any such frontier is below this seq (the record itself reaches it in a segment
   * of the new kind), so the leader takes no frontier below it — and no answer to a ship sent before.
   */
  matchFloor = 0;

  /**
   * @param nextSeq the next seqno to ship
   * @param lastShipTick when the last ship left (a new follower: now)
   * @param removalSeq for a member removed in the current roster, the seq of that record (0 otherwise); a
   *   member removed later, while this leader tracks it, is marked by markRemoved (nothing else moves it)
   */
  constructor(
    public nextSeq: number,
    public lastShipTick: number,
    public removalSeq = 0,
  ) {}

  /**
   * markRemoved: our roster now lists this member as Removed, by the kind-4 record at `seq`. A member removed
   * under the leader that tracks it keeps the Progress it had as a member; without this mark learnedRemoval
   * never held, and the leader heartbeat and shipped to it for as long as it led. The first mark stands (a
   * later record lists it as Removed too; the first one is the record it must be told of).
   */
  markRemoved(seq: number): void {
    assert(seq > 0, () => `a removal record sits at a seq above 0, not ${seq}`);
    if (this.removalSeq === 0) this.removalSeq = seq;
  }

  get capabilities(): number {
    return this.reportedCapabilities;
  }

  /** capabilitiesKnown: the follower has reported its bits (any, 0 included) to this leader. */
  get capabilitiesKnown(): boolean {
    return this.capabilitiesHeard;
  }

  /** inflightCount: ships not answered yet. */
  get inflightCount(): number {
    return this.inflight.size;
  }

  /** heardCapabilities takes the bits the follower reported. */
  heardCapabilities(bits: number): void {
    this.reportedCapabilities = bits;
    this.capabilitiesHeard = true;
  }

  /**
   * mayGoLive: the follower reported capability bit `bit` (live streams), or has reported nothing yet (a leader
   * new in office hears a follower's stream before its first heartbeat answer). A follower without the bit
   * takes a live stream's chunks as any pull's (the same frames, its one pull in flight) until the stream ends.
   */
  mayGoLive(bit: number): boolean {
    return !this.capabilitiesHeard || (this.reportedCapabilities & bit) !== 0;
  }

  /** answered: the ship `requestId` was answered (or failed); false when it was not in flight. */
  answered(requestId: number): boolean {
    return this.inflight.delete(requestId);
  }

  /** abandonShips forgets the ships in flight (none answered in time) and probes again. */
  abandonShips(): void {
    this.inflight.clear();
    this.rewind();
  }

  /** skipMatched: unless paused, the next ship starts past what the follower is known to match. */
  skipMatched(): void {
    if (this.state !== 'paused' && this.nextSeq <= this.matchSeq) this.nextSeq = this.matchSeq + 1;
  }

  /** window is how many ships may be in flight: one while probing. */
  window(inflightSegmentCountMax: number): number {
    return this.state === 'probe' ? 1 : inflightSegmentCountMax;
  }

  /** rewind goes back to probing from the first seq not known to match. */
  rewind(): void {
    this.state = 'probe';
    this.nextSeq = this.matchSeq + 1;
  }

  /** shipped notes a ship that left with request id `requestId`, ending at `lastSeq`. */
  shipped(requestId: number, tick: number, lastSeq: number): void {
    this.inflight.add(requestId);
    this.lastShipTick = tick;
    this.nextSeq = lastSeq + 1;
  }

  /** shipTimedOut: ships are in flight and none left for `retryTicks`. */
  shipTimedOut(tick: number, retryTicks: number): boolean {
    return this.inflight.size > 0 && tick - this.lastShipTick > retryTicks;
  }

  /** pauseTimedOut: paused (the follower pulls) for longer than `pullTimeoutTicks`. */
  pauseTimedOut(tick: number, pullTimeoutTicks: number): boolean {
    return this.state === 'paused' && tick - this.pausedTick > pullTimeoutTicks;
  }

  /**
   * commitNewsMaybeLost: a call to the follower failed at the transport (it may have crashed and restarted,
   * keeping only the commit seqno its hard state saved): what it was told of the commit no longer counts, so a
   * commit-only ship follows once it answers again. Without this an idle cluster never tells a restarted follower
   * the commit of entries it holds (sim seed 218124).
   */
  commitNewsMaybeLost(): void {
    this.ackedCommitSeq = 0;
  }

  /**
   * reportedBehind: the follower reported `seq` as its durable, matched frontier, no news (at or below what it
   * reported before) and below the commit counted as told to it. A follower's matched frontier restarts at the
   * commit seqno its hard state saved, so this is how a follower that restarted between two heartbeats (no call
   * failed) looks: it reports once on its leader's first heartbeat (core.ts onHeartbeat). Its commit news no
   * longer counts, so a commit-only ship follows. A report overtaken by a later one looks the same and costs one
   * commit-only ship at most; a report that moves the frontier (a follower whose disk lags the commit) does not.
   */
  reportedBehind(seq: number): void {
    if (seq <= this.matchSeq && seq < this.ackedCommitSeq) this.commitNewsMaybeLost();
  }

  /**
   * shipAccepted: the follower took a ship that ended at `lastSeq` and carried `commitSeq`.
   * It took commit = min(carried commit, its matched frontier), and that frontier is only known to
   * reach this ship's last entry (or what it reported): a re-shipped old segment carrying a newer
   * commit must not count as commit news delivered, or no commit-only ship follows and an idle
   * follower stays below commit (sim seed 374).
   */
  shipAccepted(lastSeq: number, commitSeq: number, reportedSeq: number): void {
    if (this.state === 'probe') this.state = 'replicate';
    this.ackedCommitSeq = Math.max(this.ackedCommitSeq, Math.min(commitSeq, Math.max(lastSeq, reportedSeq)));
  }

  /**
   * refusalSuperseded: a refusal of the ship that followed `prevSeq` is stale — the follower has reported a
   * matched frontier past prevSeq since (it answered before it pulled what it missed). A ship always leaves
   * with prevSeq >= matchSeq (nextSeq > matchSeq), so only a report that came after it moves matchSeq past.
   * Strictly past: a refusal at prevSeq = matchSeq is a follower that holds less than it reported (it wiped
   * its log to reseed), and pausing lets it pull.
   */
  refusalSuperseded(prevSeq: number): boolean {
    return prevSeq < this.matchSeq;
  }

  /** shipRefused: the follower pulls what it misses (StreamSegments) and reports back. */
  shipRefused(tick: number): void {
    if (this.state === 'paused') return;
    this.state = 'paused';
    this.pausedTick = tick;
    this.inflight.clear();
  }

  /**
   * goLive: the follower's stream `callId` has served it up to `nextSeq` - 1 (its burst reached our log end);
   * from now on its segments go onto that stream. Ships in flight are forgotten (their answers fold only the
   * frontier they report), as the stream carries everything after them in order.
   */
  goLive(callId: number, tick: number, nextSeq: number, commitSeq: number): void {
    this.live = { callId, openedTick: tick, pushedCommitSeq: commitSeq, waitSinceTick: tick, unreportedEnds: [] };
    this.inflight.clear();
    this.state = 'replicate';
    this.nextSeq = nextSeq;
  }

  /** pushed notes a chunk pushed onto the live stream, ending at `lastSeq` and carrying `commitSeq`. */
  pushed(tick: number, lastSeq: number, commitSeq: number): void {
    const live = this.live!;
    if (this.nextSeq - 1 <= this.matchSeq) live.waitSinceTick = tick;
    live.pushedCommitSeq = commitSeq;
    if (lastSeq >= this.nextSeq) live.unreportedEnds.push(lastSeq);
    this.lastShipTick = tick;
    this.nextSeq = lastSeq + 1;
  }

  /**
   * liveStalled: segments pushed onto the live stream have gone unreported for `retryTicks` (the stream
   * or the follower is stuck, or the follower gave the stream up): the leader goes back to ShipSegment.
   */
  liveStalled(tick: number, retryTicks: number): boolean {
    return this.live !== null && this.nextSeq - 1 > this.matchSeq && tick - this.live.waitSinceTick > retryTicks;
  }

  /**
   * refusedByFiltered: a filtered member refused a ship (a gap: it was wiped, or behind). It never pulls
   * (core.ts startPull), so the leader goes back to what it answered — its frontier may have gone down with
   * a wipe, and a filtered member's frontier counts toward nothing. Below the leader's compaction point
   * there is nothing to push it (no filtered snapshot): paused, retried after pullTimeoutTicks.
   */
  refusedByFiltered(appliedSeq: number, baseSeq: number, tick: number): void {
    this.inflight.clear();
    this.matchSeq = appliedSeq < this.matchFloor ? 0 : appliedSeq;
    if (appliedSeq < baseSeq) {
      this.state = 'paused';
      this.pausedTick = tick;
      return;
    }
    this.state = 'probe';
    this.nextSeq = appliedSeq + 1;
  }

  /** foldMatch takes a reported frontier (capped at the leader's log end); false when it is not news. */
  foldMatch(seq: number, leaderLastSeq: number, tick = 0): boolean {
    if (seq <= this.matchSeq || seq < this.matchFloor) return false;
    this.matchSeq = Math.min(seq, leaderLastSeq);
    if (this.live) {
      this.live.waitSinceTick = tick;
      const ends = this.live.unreportedEnds;
      let reported = 0;
      while (reported < ends.length && ends[reported]! <= this.matchSeq) reported++;
      ends.splice(0, reported);
    }
    if (this.nextSeq <= this.matchSeq) this.nextSeq = this.matchSeq + 1;
    if (this.state === 'paused') this.state = 'replicate';
    return true;
  }

  /**
   * learnedRemoval: a removed member was told the record that removed it committed (rule 6), so it applied it.
   * ackedCommitSeq counts only a commit it took from a ship it accepted in this term, within what it matched:
   * at or past removalSeq it held the record, committed it and applied it, and the hard state saying `removed`
   * is saved before its answer leaves (core.ts step: hard state first). Its reported frontier (matchSeq) is not
   * asked for: once the removal commits, its ReportApplied is refused (removed-member, membership-guard.ts), so a
   * member whose disk synced the record after it answered the ships never reported it (it is down through its
   * removal, or answers before its sync), and the leader would heartbeat it for as long as it led.
   */
  learnedRemoval(): boolean {
    return this.removalSeq > 0 && this.ackedCommitSeq >= this.removalSeq;
  }
}

/** ProgressTracker holds a leader's Progress per follower, and who was heard since the last check-quorum. */
export class ProgressTracker {
  private readonly byId = new Map<number, Progress>();
  /** recentActive: followers heard in this election timeout (check-quorum). */
  private readonly recentActive = new Set<number>();
  /**
   * letGoIds: removed members this leader stopped tracking once they were told their removal committed
   * (Progress.learnedRemoval). Removed is final and the member saved it, so a later kind-4 record, which lists it
   * as Removed still, does not make us track it again (core.ts syncProgressToRoster): a member gone for good would
   * be heartbeat again for as long as we lead, and a live one shipped to again after every membership change.
   */
  private readonly letGoIds = new Set<number>();

  get(id: number): Progress | undefined {
    return this.byId.get(id);
  }

  has(id: number): boolean {
    return this.byId.has(id);
  }

  set(id: number, progress: Progress): void {
    this.byId.set(id, progress);
  }

  delete(id: number): void {
    this.byId.delete(id);
  }

  /** letGo stops tracking removed member `id` for the rest of this leadership (it learned its removal). */
  letGo(id: number): void {
    this.byId.delete(id);
    this.letGoIds.add(id);
  }

  /** wasLetGo: removed member `id` learned its removal under this leader (letGo). */
  wasLetGo(id: number): boolean {
    return this.letGoIds.has(id);
  }

  /** ids in the order followers were added (the order ships go out in). */
  ids(): IterableIterator<number> {
    return this.byId.keys();
  }

  entries(): IterableIterator<[number, Progress]> {
    return this.byId.entries();
  }

  /** heardRecently: whether follower `id` was heard in this election timeout (check-quorum's set). */
  heardRecently(id: number): boolean {
    return this.recentActive.has(id);
  }

  matchOf(id: number): number {
    return this.byId.get(id)?.matchSeq ?? 0;
  }

  capabilitiesOf(id: number): number {
    return this.byId.get(id)?.capabilities ?? 0;
  }

  /** capabilitiesKnownOf: member `id` has reported its capability bits to this leader (0 included). */
  capabilitiesKnownOf(id: number): boolean {
    return this.byId.get(id)?.capabilitiesKnown ?? false;
  }

  /** heard notes a follower's answer for check-quorum. */
  heard(id: number): void {
    this.recentActive.add(id);
  }

  /** checkQuorum: a majority of voters (the leader, `selfId`, always) was heard since the last check, which starts a new count. */
  checkQuorum(roster: Roster, selfId: number): boolean {
    const active = hasQuorum(roster, (id) => id === selfId || this.recentActive.has(id));
    this.recentActive.clear();
    return active;
  }

  clear(): void {
    this.byId.clear();
    this.recentActive.clear();
    this.letGoIds.clear();
  }
}
