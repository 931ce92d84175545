// The engine's second round of state parts, each with its rules (engine/calls.ts, pull.ts,
// transfer.ts, election.ts, proposals.ts, snapshot-staging.ts): what each decides on its own, without a cluster around it.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OutstandingCalls } from '../../engine/calls.js';
import { Election } from '../../engine/election.js';
import { PendingProposals } from '../../engine/proposals.js';
import { FollowerPull, readChunk } from '../../engine/pull.js';
import { SnapshotStaging } from '../../engine/snapshot-staging.js';
import { LeadershipTransfer } from '../../engine/transfer.js';
import {
  EntryKind,
  VALUE_ROOM_MAX,
  bootstrapRoster,
  encodeSegmentFrame,
  type Entry,
  type Roster,
  type ShipSegmentRequest,
} from '../../engine/index.js';

const founders = (n: number): Roster =>
  bootstrapRoster(
    Array.from({ length: n }, (_, i) => ({ name: `n${i + 1}`, grpcAddr: `a${i + 1}`, httpAddr: `h${i + 1}` })),
  );

describe('engine/calls', () => {
  it('gives each call a fresh request id, remembers why it was made, and forgets it once settled', () => {
    const calls = new OutstandingCalls();
    const a = calls.place({ method: 'Heartbeat', term: 3, toId: 2, round: 1 }, 10);
    const b = calls.place({ method: 'ReportApplied', term: 3, toId: 2 }, 11);
    assert.deepEqual([a, b], [1, 2]);
    assert.deepEqual(calls.get(a), { method: 'Heartbeat', term: 3, toId: 2, round: 1, sentTick: 10 });
    calls.settle(a);
    assert.equal(calls.get(a), undefined, 'a late answer to a settled call matches nothing');
    const c = calls.place({ method: 'StreamSegments', term: 3, toId: 2 }, 12);
    assert.equal(c, 3, 'ids are never reused');
    assert.equal(calls.size, 2);
  });

  it('sweeps only the calls placed before the horizon', () => {
    const calls = new OutstandingCalls();
    const old = calls.place({ method: 'FetchSnapshot', term: 1, toId: 2 }, 5);
    const edge = calls.place({ method: 'FetchSnapshot', term: 1, toId: 2 }, 8);
    const fresh = calls.place({ method: 'FetchSnapshot', term: 1, toId: 2 }, 9);
    calls.sweep(8);
    assert.equal(calls.get(old), undefined);
    assert.notEqual(calls.get(edge), undefined, 'placed at the horizon: kept');
    assert.notEqual(calls.get(fresh), undefined);
  });
});

describe('engine/pull', () => {
  it('holds one pull at a time; a chunk keeps it alive, silence past the timeout gives it up', () => {
    const pull = new FollowerPull();
    assert.equal(pull.active, false);
    pull.started(7, 'stream', 100);
    assert.equal(pull.isFor(7), true);
    assert.equal(pull.isFor(8), false, 'an answer to another call is not the pull');
    pull.expire(110, 10);
    assert.equal(pull.active, true, 'silent for exactly the timeout: still alive');
    pull.progressed(110);
    pull.expire(120, 10);
    assert.equal(pull.active, true, 'a chunk restarted the count');
    pull.expire(121, 10);
    assert.equal(pull.active, false);
    pull.started(9, 'snapshot', 130);
    pull.stop();
    assert.equal(pull.isFor(9), false);
  });

  it('is due only when none is in flight, and then when urgent or shipping went quiet', () => {
    const pull = new FollowerPull();
    pull.accepted(50);
    assert.equal(pull.due(60, 10, false), false, 'a segment accepted within the quiet window');
    assert.equal(pull.due(60, 10, true), true, 'a reseed pulls at once');
    assert.equal(pull.due(61, 10, false), true);
    pull.started(1, 'stream', 61);
    assert.equal(pull.due(200, 10, true), false, 'one pull at a time');
  });

  it('reads a chunk: invalid values, another term or leader, a corrupt frame, or a frame', () => {
    const frame = {
      prevSeq: 4,
      prevTerm: 2,
      commitSeq: 4,
      entries: [{ seq: 5, term: 3, kind: EntryKind.EventBatch, data: new Uint8Array([1]) }],
    };
    const chunk = (over: Partial<ShipSegmentRequest>): ShipSegmentRequest => ({
      id: { regionId: 1, shardId: 1, seqno: 5 },
      payload: encodeSegmentFrame(frame),
      eventCount: 1,
      leaderLastSeq: 5,
      streamBaseline: 0,
      term: 3,
      leaderRegion: 1,
      ...over,
    });
    assert.equal(readChunk(chunk({ leaderLastSeq: VALUE_ROOM_MAX + 1 }), 3, 1).verdict, 'invalid');
    assert.equal(readChunk(chunk({ term: 2 }), 3, 1).verdict, 'foreign');
    assert.equal(readChunk(chunk({ leaderRegion: 2 }), 3, 1).verdict, 'foreign');
    const corrupt = encodeSegmentFrame(frame);
    corrupt[corrupt.length - 1]! ^= 0xff;
    assert.equal(readChunk(chunk({ payload: corrupt }), 3, 1).verdict, 'undecodable');
    const read = readChunk(chunk({}), 3, 1);
    assert.equal(read.verdict, 'frame');
    if (read.verdict === 'frame') assert.deepEqual(read.frame, frame);
  });
});

describe('engine/transfer', () => {
  it('sends TimeoutNow once, and only when the target has caught up', () => {
    const transfer = new LeadershipTransfer();
    assert.equal(
      transfer.takeDue(() => true),
      null,
      'no transfer',
    );
    transfer.start(3, 40);
    assert.equal(transfer.inProgress, true);
    assert.equal(
      transfer.takeDue(() => false),
      null,
      'target behind',
    );
    const seen: number[] = [];
    assert.deepEqual(
      transfer.takeDue((id) => (seen.push(id), true)),
      { targetId: 3, adminId: 40 },
    );
    assert.deepEqual(seen, [3]);
    assert.equal(
      transfer.takeDue(() => true),
      null,
      'sent once',
    );
    assert.equal(transfer.inProgress, true, 'sending does not end it');
  });

  it('times out after the limit, settles only its own admin op, and ends once', () => {
    const transfer = new LeadershipTransfer();
    transfer.start(2, 7);
    assert.equal(transfer.tick(3), null);
    assert.equal(transfer.tick(3), null);
    assert.equal(transfer.tick(3), 7, 'the third tick reaches the limit');
    assert.equal(transfer.inProgress, false);
    assert.equal(transfer.tick(3), null);
    transfer.start(2, 8);
    assert.equal(transfer.settle(7), false, 'another admin op');
    assert.equal(transfer.settle(8), true);
    assert.equal(transfer.end(), null);
    transfer.start(2, 9);
    assert.equal(transfer.end(), 9);
    assert.equal(transfer.inProgress, false);
  });
});

describe('engine/election', () => {
  const ticksToTimeout = (election: Election): number => {
    let ticks = 0;
    while (!election.timedOut) {
      election.tickFollower();
      ticks++;
    }
    return ticks;
  };

  it('times out after a randomized timeout in [base, 2·base), reproducible from the seed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.nat(), (base, seed) => {
        const a = new Election(base, seed);
        const b = new Election(base, seed);
        const drawsA: number[] = [];
        const drawsB: number[] = [];
        for (let i = 0; i < 3; i++) {
          a.randomizeTimeout();
          b.randomizeTimeout();
          drawsA.push(ticksToTimeout(a));
          drawsB.push(ticksToTimeout(b));
        }
        assert.deepEqual(drawsA, drawsB);
        for (const t of drawsA) assert.ok(t >= base && t < Math.max(2 * base, base + 1), `timeout ${t}, base ${base}`);
      }),
    );
  });

  it('hearing our leader restarts the clock and renews the lease; a granted vote only restarts the clock', () => {
    const election = new Election(10, 1);
    assert.equal(election.leaseHeld, false, 'a fresh node holds no lease');
    election.randomizeTimeout();
    for (let i = 0; i < 9; i++) election.tickFollower();
    election.heardLeader();
    assert.equal(election.leaseHeld, true);
    for (let i = 0; i < 9; i++) election.tickFollower();
    assert.equal(election.timedOut, false);
    election.restartClock();
    election.tickFollower();
    assert.equal(election.leaseHeld, false, 'a granted vote does not renew the lease');
    assert.equal(election.timedOut, false, 'but restarts the clock');
  });

  it('a leader runs check-quorum once per base timeout', () => {
    const election = new Election(4, 1);
    const due = Array.from({ length: 12 }, () => election.tickLeader());
    assert.deepEqual(
      due.map((d, i) => (d ? i + 1 : 0)).filter((t) => t > 0),
      [4, 8, 12],
    );
  });

  it('counts a campaign over voters: our own vote, then grants and refusals', () => {
    const roster = founders(3);
    const election = new Election(10, 1);
    election.startCampaign(1);
    assert.equal(election.tally(roster), 'pending');
    election.recordVote(2, true);
    assert.equal(election.tally(roster), 'won');
    election.startCampaign(1);
    assert.equal(election.tally(roster), 'pending', 'a new campaign forgets the last one');
    election.recordVote(2, false);
    election.recordVote(3, false);
    assert.equal(election.tally(roster), 'lost');
    election.endCampaign();
    assert.equal(election.tally(roster), 'pending');
    assert.equal(election.tally(founders(1)), 'pending', 'not even our own vote after the campaign ends');
  });
});

describe('engine/proposals', () => {
  it('answers each proposal once: committed up to the commit seqno, in order; the rest abandoned', () => {
    const pending = new PendingProposals();
    pending.add(5, 50);
    pending.add(6, 60);
    pending.add(7, 70);
    assert.deepEqual(pending.settle(4), []);
    assert.deepEqual(pending.settle(6), [
      { seq: 5, proposalId: 50 },
      { seq: 6, proposalId: 60 },
    ]);
    assert.deepEqual(pending.settle(6), [], 'settled once');
    assert.equal(pending.size, 1);
    pending.add(8, 80);
    assert.deepEqual(pending.abandon(), [70, 80]);
    assert.equal(pending.size, 0);
    assert.deepEqual(pending.settle(100), [], 'nothing left after abandoning');
  });
});

describe('engine/snapshot-staging', () => {
  const roster = founders(1);
  const meta = (seq: number) => ({ seq, entryTerm: 1, roster });
  const header = (seq: number, fileSizes: number[] = []) => ({
    needed: true,
    snapshotSeq: seq,
    term: 1,
    leaderRegion: 1,
    files: fileSizes.map((size, i) => ({ path: `f${i}`, size, blake3: new Uint8Array(32) })),
  });
  /** byCount: the entry threshold alone (the bytes rule off). */
  const byCount = (threshold: number) => ({
    snapshotEntryCountThreshold: threshold,
    snapshotEntryCountMax: Number.MAX_SAFE_INTEGER,
    snapshotLogBytesPercentMin: 0,
  });
  const entriesOf = (fromSeq: number, count: number, dataBytes: number): Entry[] =>
    Array.from({ length: count }, (_, i) => ({
      seq: fromSeq + i,
      term: 1,
      kind: EntryKind.EventBatch,
      data: new Uint8Array(dataBytes),
    }));

  it('asks for one snapshot at a time, once enough is applied past the last one (or the log base)', () => {
    const snapshots = new SnapshotStaging(null, []);
    assert.equal(snapshots.seq, 0);
    assert.equal(snapshots.due(109, 10, byCount(100)), false, 'threshold counted from the log base');
    assert.equal(snapshots.due(110, 10, byCount(100)), true);
    snapshots.begin();
    assert.equal(snapshots.due(500, 10, byCount(100)), false, 'one staging at a time');
    assert.equal(snapshots.staged(meta(110), header(110)), true);
    assert.equal(snapshots.seq, 110);
    assert.equal(snapshots.due(209, 0, byCount(100)), false, 'now counted from the held snapshot');
    assert.equal(snapshots.due(210, 0, byCount(100)), true);
  });

  it('holds only a newer snapshot, serves it only when it reaches the asked seq, and forgets it on a wipe', () => {
    const snapshots = new SnapshotStaging({ meta: meta(50), header: header(50) }, []);
    snapshots.begin();
    assert.equal(snapshots.staged(meta(40), header(40)), false, 'older than the one held: dropped');
    assert.equal(snapshots.due(1000, 0, byCount(1)), true, 'but the staging is over');
    assert.equal(snapshots.seq, 50);
    assert.equal(snapshots.headerCovering(50)?.snapshotSeq, 50);
    assert.equal(snapshots.headerCovering(51), null);
    snapshots.installed(meta(30), header(30));
    assert.equal(snapshots.meta?.seq, 30, 'an installed snapshot is held whatever we had');
    snapshots.drop();
    assert.equal(snapshots.meta, null);
    assert.equal(snapshots.headerCovering(0), null);
  });

  it('past the threshold, waits for the data applied since the held snapshot to reach a share of its bytes, or for the entry cap', () => {
    const limits = { snapshotEntryCountThreshold: 10, snapshotEntryCountMax: 200, snapshotLogBytesPercentMin: 50 };
    const snapshots = new SnapshotStaging({ meta: meta(100), header: header(100, [600, 400]) }, []);
    snapshots.applied(entriesOf(101, 49, 10));
    assert.equal(snapshots.due(149, 0, limits), false, '490 bytes of a 1,000-byte snapshot: under 50%');
    snapshots.applied(entriesOf(150, 1, 10));
    assert.equal(snapshots.due(150, 0, limits), true, '500 bytes: 50% of the snapshot');
    assert.equal(snapshots.due(150, 0, { ...limits, snapshotLogBytesPercentMin: 51 }), false);
    assert.equal(snapshots.due(150, 0, { ...limits, snapshotEntryCountMax: 50 }), true, 'the cap, whatever the bytes');
    assert.equal(
      snapshots.due(150, 0, { ...limits, snapshotEntryCountThreshold: 51 }),
      false,
      'the threshold still holds',
    );

    // The next one is measured from the state the staged snapshot captured: what was applied while it was being
    // staged counts toward the one after.
    snapshots.begin();
    snapshots.applied(entriesOf(151, 20, 10));
    assert.equal(snapshots.staged(meta(150), header(150, [400])), true);
    assert.equal(snapshots.due(170, 0, limits), true, '200 bytes since seq 150, 50% of a 400-byte snapshot');
    assert.equal(snapshots.due(170, 0, { ...limits, snapshotLogBytesPercentMin: 51 }), false);

    // An installed snapshot is measured from the state it installed; a wipe leaves none (no bytes rule).
    snapshots.installed(meta(500), header(500, [10_000]));
    snapshots.applied(entriesOf(501, 20, 10));
    assert.equal(snapshots.due(520, 0, limits), false, '200 bytes since the install: 2% of it');
    snapshots.drop();
    assert.equal(snapshots.due(520, 500, limits), true, 'no snapshot held: the threshold alone');
  });

  it('on a restart, counts the data of the entries already applied past the held snapshot', () => {
    const limits = { snapshotEntryCountThreshold: 10, snapshotEntryCountMax: 200, snapshotLogBytesPercentMin: 100 };
    const held = { meta: meta(100), header: header(100, [1_000]) };
    const restarted = new SnapshotStaging(held, entriesOf(101, 80, 10));
    assert.equal(restarted.due(180, 0, limits), false, '800 of 1,000 bytes');
    restarted.applied(entriesOf(181, 20, 10));
    assert.equal(restarted.due(200, 0, limits), true);
    const uncounted = new SnapshotStaging(held, []);
    assert.equal(uncounted.due(200, 0, limits), false, 'with none counted, the same seq is 1,000 bytes short');
    assert.equal(uncounted.due(300, 0, limits), true, 'and the cap, 200 entries past the snapshot, still asks');
  });
});
