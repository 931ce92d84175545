// Which members a node's open Heartbeat/ReportApplied calls may stay open to (transports/node/open-call-peers.ts).
import assert from 'node:assert/strict';
import { MemberRole, type EngineLeadership, type Roster } from '../../engine/types.js';
import { openCallPeers, sameLeadership } from '../../transports/node/open-call-peers.js';

const member = (id: number, role: MemberRole = MemberRole.Voter) => ({
  id,
  name: `n${id}`,
  grpcAddr: `127.0.0.1:${7000 + id}`,
  httpAddr: `http://127.0.0.1:${8000 + id}`,
  role,
});
const roster: Roster = {
  membershipVersion: 3,
  nextMemberId: 5,
  members: [member(1), member(2), member(3, MemberRole.Learner), member(4, MemberRole.Removed)],
};
const leadership = (role: EngineLeadership['role'], leaderId: number): EngineLeadership => ({
  role,
  term: 7,
  leaderId,
  membershipVersion: 3,
});
const sorted = (set: ReadonlySet<string>) => [...set].sort();

describe('transports/node open-call peers', function () {
  it('a leader keeps its heartbeat calls to every other member but a removed one, and reports to no one', function () {
    const peers = openCallPeers(leadership('leader', 1), 1, roster);
    assert.deepEqual(sorted(peers.heartbeat), ['127.0.0.1:7002', '127.0.0.1:7003']);
    assert.deepEqual(sorted(peers.report), []);
  });

  it('a follower keeps its report call to its leader alone, and no heartbeat call', function () {
    const peers = openCallPeers(leadership('follower', 2), 1, roster);
    assert.deepEqual(sorted(peers.heartbeat), []);
    assert.deepEqual(sorted(peers.report), ['127.0.0.1:7002']);
  });

  it('a node with no leader known, or a removed one named, keeps no call', function () {
    for (const l of [leadership('candidate', 0), leadership('follower', 0), leadership('follower', 4)]) {
      const peers = openCallPeers(l, 1, roster);
      assert.equal(peers.heartbeat.size + peers.report.size, 0, JSON.stringify(l));
    }
  });

  it('a new term alone is the same leadership; a new leader, role or roster is not', function () {
    const l = leadership('follower', 2);
    assert.ok(sameLeadership(l, { ...l, term: 8 }));
    assert.ok(!sameLeadership(l, { ...l, leaderId: 1 }));
    assert.ok(!sameLeadership(l, { ...l, role: 'candidate' }));
    assert.ok(!sameLeadership(l, { ...l, membershipVersion: 4 }));
  });
});
