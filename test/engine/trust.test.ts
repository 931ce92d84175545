// The replication plane's trust boundary at the engine (docs/protocol.md, "Identity and trust —
// engine rules"): carriable values, who counts as a member, forged traffic changing nothing,
// TimeoutNow only from the current term's leader, and no election past the term space.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  Engine,
  emptyRestoredState,
  DEFAULT_LIMITS,
  MemberRole,
  encodeSegmentFrame,
  isCarriableTerm,
  requestValueProblem,
  responseValueProblem,
  parseCarriable,
  standingOf,
  VALUE_ROOM_MAX,
  type Effect,
  type EngineStatus,
  type RpcRequest,
  type Roster,
} from '../../engine/index.js';
import { founderConfig } from './founders.js';
import { Lockstep } from '../../sim/lockstep.js';

const MAX = Number.MAX_SAFE_INTEGER;

describe('engine trust: carriable values (engine/values.ts)', () => {
  it('accepts 0..2^53-2 and nothing else', () => {
    for (const ok of [0, 1, VALUE_ROOM_MAX]) assert.equal(isCarriableTerm(ok), true, String(ok));
    for (const bad of [-1, 1.5, MAX, MAX + 1, Number.NaN, Number.POSITIVE_INFINITY])
      assert.equal(isCarriableTerm(bad), false, String(bad));
    assert.equal(VALUE_ROOM_MAX, MAX - 1);
  });

  it('names the first field of a request or response that leaves no room to increment', () => {
    const hb: RpcRequest = {
      method: 'Heartbeat',
      body: {
        shardId: 1,
        regionId: 1,
        entityCount: 0,
        signalThroughputEps: 0.5,
        diskBytes: 0,
        replicationLag: { 2: 3 },
        lastHeartbeatNs: '1',
        term: MAX,
        leaderRegion: 1,
        streamBaseline: 0,
        prevLogTerm: 0,
        prevLogSeq: 0,
        buildVersion: '',
        leaderLastSeq: 0,
      },
    };
    assert.match(requestValueProblem(hb) ?? '', /term = 9007199254740991/);
    assert.equal(requestValueProblem({ ...hb, body: { ...hb.body, term: VALUE_ROOM_MAX } }), null);
    assert.match(
      requestValueProblem({ ...hb, body: { ...hb.body, replicationLag: { 2: MAX } } }) ?? '',
      /replicationLag\.2/,
    );
    assert.match(
      requestValueProblem({
        method: 'ShipSegment',
        body: {
          id: { regionId: 1, shardId: 1, seqno: MAX },
          payload: new Uint8Array(0),
          eventCount: 0,
          leaderLastSeq: 0,
          streamBaseline: 0,
          term: 1,
          leaderRegion: 1,
        },
      }) ?? '',
      /id\.seqno/,
    );
    assert.match(
      responseValueProblem({ method: 'RequestVote', body: { term: MAX, granted: false, removed: false } }) ?? '',
      /term/,
    );
    assert.equal(parseCarriable('12'), 12);
    for (const bad of [undefined, '', '-1', '1e3', String(MAX), '99999999999999999'])
      assert.equal(parseCarriable(bad), 0, String(bad));
  });
});

describe('engine trust: standing of a sender (engine/membership-guard.ts)', () => {
  const roster = (version: number, members: [number, number][]): Roster => ({
    membershipVersion: version,
    nextMemberId: 10,
    members: members.map(([id, role]) => ({ id, name: `m${id}`, grpcAddr: `m${id}:7000`, httpAddr: '', role })),
  });
  const { Voter, Learner, Removed } = MemberRole;

  it('members are active in any view; removed is judged on the committed roster; the rest are strangers', () => {
    const committed = roster(2, [
      [1, Voter],
      [2, Voter],
      [3, Learner],
      [4, Removed],
    ]);
    const current = roster(3, [
      [1, Voter],
      [2, Voter],
      [3, Removed],
      [4, Removed],
    ]); // 3's removal is not committed yet
    const vouched = roster(5, [
      [1, Voter],
      [2, Voter],
      [3, Removed],
      [4, Removed],
      [6, Voter],
    ]);
    const views = { current, committed, vouched: null };
    assert.equal(standingOf(1, views), 'member');
    assert.equal(standingOf(3, views), 'member', 'an uncommitted removal may still be truncated');
    assert.equal(standingOf(4, views), 'removed');
    assert.equal(standingOf(6, views), 'stranger');
    assert.equal(standingOf(99, views), 'stranger');
    assert.equal(standingOf(0, views), 'stranger');
    assert.equal(standingOf(6, { ...views, vouched }), 'member', 'a member vouched for it');
  });
});

/** settledCluster: three voters, n1 leads term 1, a few writes committed everywhere. */
function settledCluster(): Lockstep {
  const c = new Lockstep();
  c.bootstrap(['n1', 'n2', 'n3']);
  assert.ok(c.elect('n1'));
  for (let i = 0; i < 3; i++) c.propose(`w${i}`);
  assert.ok(
    c.tickUntil(() =>
      [...c.nodes.values()].every((n) => n.engine.status().ready && n.engine.status().appliedSeq === 4),
    ),
  );
  return c;
}

const STRANGERS = [0, 4, 5, 99, 1_000, 0xffff_ffff];
const TERMS = [0, 1, 2, 3, 1_000, VALUE_ROOM_MAX - 1, VALUE_ROOM_MAX, MAX];

/** forgedRequest: any WalShipping request (JoinCluster aside) claiming a sender no roster holds. */
const forgedRequest: fc.Arbitrary<RpcRequest> = fc
  .record({
    method: fc.constantFrom('ShipSegment', 'Heartbeat', 'ReportApplied', 'RequestVote', 'TimeoutNow'),
    from: fc.constantFrom(...STRANGERS),
    term: fc.constantFrom(...TERMS),
    prevSeq: fc.constantFrom(0, 1, 2, 4, 5, 50),
    prevTerm: fc.constantFrom(0, 1, 2, 9),
    flag: fc.boolean(),
  })
  .map(({ method, from, term, prevSeq, prevTerm, flag }): RpcRequest => {
    switch (method) {
      case 'ShipSegment': {
        const entries = [
          { seq: prevSeq + 1, term: Math.max(prevTerm, 1), kind: 1, data: new TextEncoder().encode('forged') },
        ];
        const payload = encodeSegmentFrame({ prevSeq, prevTerm, commitSeq: prevSeq + 1, entries });
        return {
          method,
          body: {
            id: { regionId: from, shardId: from, seqno: prevSeq + 1 },
            payload,
            eventCount: 1,
            leaderLastSeq: prevSeq + 1,
            streamBaseline: 0,
            term,
            leaderRegion: from,
          },
        };
      }
      case 'Heartbeat':
        return {
          method,
          body: {
            shardId: from,
            regionId: from,
            entityCount: 0,
            signalThroughputEps: 0,
            diskBytes: 0,
            replicationLag: {},
            lastHeartbeatNs: '0',
            term,
            leaderRegion: from,
            streamBaseline: prevSeq,
            prevLogTerm: prevTerm,
            prevLogSeq: prevSeq,
            buildVersion: flag ? '' : '7.0.0',
            leaderLastSeq: flag ? 0 : prevSeq,
          },
        };
      case 'ReportApplied':
        return {
          method,
          body: { reporterShard: from, sourceShard: 1, appliedSeqno: prevSeq, reporterTerm: term, capabilities: 1 },
        };
      case 'RequestVote':
        return {
          method,
          body: { term, candidateRegion: from, lastLogTerm: 50, lastLogSeq: 500, prevote: flag, transfer: !flag },
        };
      default:
        return { method: 'TimeoutNow', body: { term, leaderRegion: from } };
    }
  });

function snapshotOf(s: EngineStatus): string {
  return JSON.stringify({
    term: s.term,
    leaderId: s.leaderId,
    role: s.role,
    lastSeq: s.lastSeq,
    lastTerm: s.lastTerm,
    commitSeq: s.commitSeq,
    appliedSeq: s.appliedSeq,
    durableSeq: s.durableSeq,
    matchedSeq: s.matchedSeq,
    ready: s.ready,
    reseed: s.reseed,
    removed: s.removed,
    lag: s.lagGaugeByShard,
    versions: s.versionsSeen,
  });
}

function onlyRefusals(effects: Effect[], callId: number): string[] {
  return effects
    .filter(
      (e) =>
        !(
          ((e.type === 'reply' || e.type === 'replyError') && e.callId === callId) ||
          e.type === 'warning' ||
          (e.type === 'send' && e.request.method === 'JoinCluster')
        ),
    )
    .map((e) => e.type);
}

describe('engine trust: forged traffic changes nothing', () => {
  it("a non-member's ShipSegment, Heartbeat, ReportApplied, RequestVote or TimeoutNow moves no term, vote, leader, log or readiness", () => {
    const c = settledCluster();
    let callId = 50_000;
    fc.assert(
      fc.property(
        fc.constantFrom('n1', 'n2', 'n3'),
        fc.array(forgedRequest, { minLength: 1, maxLength: 12 }),
        (name, requests) => {
          const engine = c.node(name).engine;
          for (const request of requests) {
            const before = snapshotOf(engine.status());
            const effects = engine.step({ type: 'request', callId: ++callId, request });
            assert.deepEqual(
              onlyRefusals(effects, callId),
              [],
              `${request.method} from a non-member made ${name} do more than refuse`,
            );
            const answer = effects.find((e) => e.type === 'reply' || e.type === 'replyError');
            assert.ok(answer?.type === 'replyError', `${request.method}: refused with a status`);
            assert.equal(snapshotOf(engine.status()), before, `${request.method} changed ${name}`);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a refusal is typed: FAILED_PRECONDITION with x-svc-refusal, or INVALID_ARGUMENT for a value with no room', () => {
    const c = settledCluster();
    const engine = c.node('n2').engine;
    const hb = (term: number): RpcRequest => heartbeatFrom(99, term, 1);
    const refusal = engine.step({ type: 'request', callId: 1, request: hb(2) }).find((e) => e.type === 'replyError');
    assert.ok(refusal?.type === 'replyError');
    assert.equal(refusal.status.code, 9);
    assert.equal(refusal.status.trailers['x-svc-refusal'], 'not-a-member');
    const malformed = engine
      .step({ type: 'request', callId: 2, request: hb(MAX) })
      .find((e) => e.type === 'replyError');
    assert.ok(malformed?.type === 'replyError');
    assert.equal(malformed.status.code, 3);
  });
});

describe('engine trust: TimeoutNow', () => {
  it("is obeyed only from the leader of the receiver's current term", () => {
    const c = settledCluster();
    const engine = c.node('n3').engine;
    const timeoutNow = (callId: number, term: number, leaderRegion: number): boolean => {
      const reply = engine
        .step({ type: 'request', callId, request: { method: 'TimeoutNow', body: { term, leaderRegion } } })
        .find((e) => e.type === 'reply');
      return reply?.type === 'reply' && reply.response.method === 'TimeoutNow' && reply.response.body.accepted;
    };
    assert.equal(timeoutNow(1, 1, 2), false, 'a member that does not lead');
    assert.equal(timeoutNow(2, 2, 1), false, "the leader's id at another term");
    assert.equal(timeoutNow(3, 0, 1), false, 'term 0');
    assert.equal(engine.status().term, 1);
    assert.equal(engine.status().role, 'follower');
    assert.equal(timeoutNow(4, 1, 1), true, 'the leader of term 1');
    assert.equal(engine.status().role, 'candidate');
    assert.equal(engine.status().term, 2);
  });
});

describe('engine trust: the term space', () => {
  it('a node whose term has no room left does not campaign, and says so', () => {
    const restored = emptyRestoredState();
    restored.hardState = { ...restored.hardState, term: VALUE_ROOM_MAX, selfId: 1 };
    const engine = new Engine(founderConfig('solo', ['solo']), restored);
    const effects: Effect[] = [];
    for (let i = 0; i < DEFAULT_LIMITS.electionTimeoutTicks * 3; i++) effects.push(...engine.step({ type: 'tick' }));
    assert.equal(engine.status().term, VALUE_ROOM_MAX);
    assert.notEqual(engine.status().role, 'leader');
    assert.ok(effects.some((e) => e.type === 'warning' && e.code === 'term-space-exhausted'));
    assert.equal(
      effects.some((e) => e.type === 'saveHardState'),
      false,
    );
  });
});

describe('engine trust: reseeding only on local evidence', () => {
  it('a hole in the recovered WAL latches the reseed marker (durably), and nothing is applied or wiped until a leader is confirmed', () => {
    const restored = emptyRestoredState();
    restored.hardState = { ...restored.hardState, term: 1, selfId: 2, commitSeq: 4 };
    const entry = (seq: number) => ({ seq, term: 1, kind: 1, data: new TextEncoder().encode(`e${seq}`) });
    restored.entries = [entry(1), entry(2), entry(4)]; // 3 is missing
    const engine = new Engine(founderConfig('b', ['a', 'b', 'c']), restored);
    assert.equal(engine.status().reseed, true);
    const first = engine.step({ type: 'tick' });
    assert.ok(first[0]?.type === 'saveHardState' && first[0].hardState.reseed, 'the marker is saved first');
    assert.ok(first.some((e) => e.type === 'warning' && e.code === 'reseed-latched'));
    assert.equal(
      first.some((e) => e.type === 'apply' || e.type === 'resetStateMachine' || e.type === 'append'),
      false,
    );
    const later: Effect[] = [];
    for (let i = 0; i < 40; i++) later.push(...engine.step({ type: 'tick' }));
    assert.equal(
      later.some((e) => e.type === 'send' && e.request.method === 'RequestVote'),
      false,
      'a reseeding node does not campaign',
    );
    // The leader of term 1 is heard: now the wipe happens and the node pulls.
    const hb = engine.step({
      type: 'request',
      callId: 1,
      request: {
        method: 'Heartbeat',
        body: {
          shardId: 1,
          regionId: 1,
          entityCount: 0,
          signalThroughputEps: 0,
          diskBytes: 0,
          replicationLag: {},
          lastHeartbeatNs: '0',
          term: 1,
          leaderRegion: 1,
          streamBaseline: 2,
          prevLogTerm: 1,
          prevLogSeq: 2,
          buildVersion: '',
          leaderLastSeq: 9,
        },
      },
    });
    assert.ok(hb.some((e) => e.type === 'resetStateMachine'));
    assert.ok(hb.some((e) => e.type === 'send' && e.request.method === 'StreamSegments'));
    assert.equal(engine.status().lastSeq, 0);
  });

  it('a node whose own log is known damaged does not refuse the leader as contradicting it: it wipes and reinstalls', () => {
    const restored = emptyRestoredState();
    restored.hardState = { ...restored.hardState, term: 3, selfId: 2, commitSeq: 2, reseed: true };
    restored.entries = [1, 2].map((seq) => ({ seq, term: 3, kind: 1, data: new Uint8Array(0) }));
    const engine = new Engine(founderConfig('b', ['a', 'b', 'c']), restored);
    // The leader's position (1, 1) would cut our (damaged) entry 2, at our commit seqno.
    const effects = engine.step({
      type: 'request',
      callId: 1,
      request: {
        method: 'Heartbeat',
        body: {
          shardId: 1,
          regionId: 1,
          entityCount: 0,
          signalThroughputEps: 0,
          diskBytes: 0,
          replicationLag: {},
          lastHeartbeatNs: '0',
          term: 4,
          leaderRegion: 1,
          streamBaseline: 1,
          prevLogTerm: 1,
          prevLogSeq: 1,
          buildVersion: '',
          leaderLastSeq: 9,
        },
      },
    });
    assert.equal(
      effects.some((e) => e.type === 'warning' && e.code === 'commit-contradiction'),
      false,
    );
    assert.ok(effects.some((e) => e.type === 'resetStateMachine'));
    assert.equal(engine.status().lastSeq, 0);
    assert.equal(engine.status().leaderId, 1);
  });
});

/** heartbeatFrom is a Heartbeat of member `id` claiming to lead `term`, with nothing else in it. */
function heartbeatFrom(id: number, term: number, leaderLastSeq: number): RpcRequest {
  return {
    method: 'Heartbeat',
    body: {
      ...{ shardId: id, regionId: id, leaderRegion: id, term, leaderLastSeq },
      ...{ entityCount: 0, signalThroughputEps: 0, diskBytes: 0, replicationLag: {}, lastHeartbeatNs: '0' },
      ...{ streamBaseline: 0, prevLogTerm: 0, prevLogSeq: 0, buildVersion: '' },
    },
  };
}

describe('engine trust: term 0', () => {
  // No leader ever holds term 0 (the first election makes term 1), so a Heartbeat, ShipSegment or TimeoutNow
  // claiming it is forged or broken, even at a node still at term 0 itself (where it is not below our term).
  it('a fresh node at term 0 refuses leader traffic of term 0 and takes no leader from it', () => {
    const engine = new Engine(founderConfig('b', ['a', 'b', 'c']), emptyRestoredState());
    engine.step({ type: 'start' });
    assert.equal(engine.status().term, 0);
    const heartbeat = heartbeatFrom(1, 0, 0);
    const effects = engine.step({ type: 'request', callId: 1, request: heartbeat });
    const accepted = effects.some(
      (e) => e.type === 'reply' && e.response.method === 'Heartbeat' && e.response.body.accepted,
    );
    assert.equal(accepted, false, 'the term-0 heartbeat is not accepted');
    assert.equal(engine.status().leaderId, 0, 'no leader taken from it');
    const timeoutNow = engine
      .step({ type: 'request', callId: 2, request: { method: 'TimeoutNow', body: { term: 0, leaderRegion: 1 } } })
      .find((e) => e.type === 'reply');
    assert.ok(
      !(
        timeoutNow?.type === 'reply' &&
        timeoutNow.response.method === 'TimeoutNow' &&
        timeoutNow.response.body.accepted
      ),
    );
    assert.equal(engine.status().role, 'follower', 'no campaign from a term-0 TimeoutNow');
  });
});
