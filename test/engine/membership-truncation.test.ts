// A membership record truncated and replaced at the same seqno by another leader's record: the node
// that held the first must take the second's roster (Raft: the newest configuration in the log is in
// force, and goes away with its record). Scripted on the simulated world so that every checker watches,
// roster-replay among them. Random schedules reach this only now and then (a deposed leader's record and
// the new leader's at the same seqno), so it is pinned here.
import assert from 'node:assert/strict';
import { MemberRole } from '../../engine/types.js';
import { calmCluster } from '../../sim/presets.js';
import { encodeCommand } from '../../sim/state-machine.js';

/** WAIT_MS bounds each wait below: a few election timeouts on a calm network. */
const WAIT_MS = 20_000;

describe('engine: a membership record truncated and replaced at the same seqno', () => {
  it("the deposed leader adopts the new leader's roster (roster-replay watches every step)", () => {
    const cluster = calmCluster(3, { seed: 12 });
    cluster.start();
    assert.ok(
      cluster.runUntilTrue(() => cluster.leader() !== null, WAIT_MS),
      'a first leader',
    );
    const old = cluster.leader()!;
    cluster.join(3, [old.index]);
    const joiner = cluster.node(3);
    assert.ok(
      cluster.runUntilTrue(() => joiner.status?.ready === true, WAIT_MS),
      'the joiner is admitted as a learner and ready',
    );
    cluster.runFor(1_000);
    const joinerId = joiner.status!.id;
    const base = old.status!.lastSeq;

    // The old leader, cut off, takes a write and a removal of the learner: both appended, neither committed.
    cluster.isolate(old.index);
    cluster.propose(old.index, encodeCommand({ op: 'put', key: 'k', value: 'lost', writeId: 1 }));
    cluster.admin({ op: 'remove', memberId: joinerId }, old.index);
    cluster.runFor(50);
    const removalSeq = base + 2;
    assert.equal(old.storage.written.entryAt(removalSeq)?.kind, 4, 'the removal record sits at base + 2');

    // The others elect a new leader, whose term barrier lands at base + 1. Healed, the old leader
    // follows it and truncates both records (and reports its capabilities, which the new leader's
    // conf-change gate waits for); then the new leader promotes the learner, at base + 2.
    const oldTerm = old.status!.term;
    assert.ok(
      cluster.runUntilTrue(
        () => cluster.nodes.some((n) => n !== old && n.status?.role === 'leader' && n.status.term > oldTerm),
        WAIT_MS,
      ),
    );
    const fresh = cluster.nodes.find((n) => n !== old && n.status?.role === 'leader')!;
    cluster.heal();
    assert.ok(
      cluster.runUntilTrue(
        () => old.status!.term === fresh.status!.term && old.storage.written.lastSeq === base + 1,
        WAIT_MS,
      ),
      'the old leader truncated',
    );
    const promoted = () => fresh.status!.roster.members.find((m) => m.id === joinerId)?.role === MemberRole.Voter;
    for (let attempt = 0; attempt < 40 && !promoted(); attempt++) {
      cluster.admin({ op: 'promote', memberId: joinerId }, fresh.index);
      cluster.runFor(250);
    }
    assert.ok(promoted(), `the new leader promoted the learner (${JSON.stringify(cluster.adminResults.slice(-3))})`);
    assert.equal(fresh.storage.written.entryAt(removalSeq)?.kind, 4, 'its promotion record sits at the same seqno');

    const caughtUp = () => old.storage.written.termAt(removalSeq) === fresh.status!.term;
    assert.ok(cluster.runUntilTrue(caughtUp, WAIT_MS), 'the old leader holds the new record');
    assert.equal(
      old.status!.roster.members.find((m) => m.id === joinerId)?.role,
      MemberRole.Voter,
      'its roster is the promotion, not its own removal',
    );
    assert.ok(cluster.coverage.counts['kind4-truncated'] >= 1);
  });
});
