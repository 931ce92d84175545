// A follower that restarts between two heartbeats (quicker than the heartbeat interval, so no call to it fails)
// comes back with the commit seqno its hard state saved, which may be older than the commit the leader counts
// as told to it (Progress.ackedCommitSeq). In an idle cluster no segment follows, so unless something tells the
// leader, the follower never applies entries it holds. Heartbeats carry no commit seqno, and an older leader
// sends leader_last_seq 0 while an older follower keeps no live stream, so the follower does not pull either:
// only the follower's own report can show the leader it has less (docs/protocol.md, "Push"). Sim seed 218124 was
// the same stall reached by a failed heartbeat (commitNewsMaybeLost); this is the case no call failed.
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS, decodeSegmentFrame, StatusCode, type Compat, type EngineConfig } from '../../engine/index.js';
import { answeredLeader, prevSeqOf, reportApplied, sends, shipsTo } from './answered-leader.js';
import { founderConfig } from './founders.js';
import { WiredEngines } from './wired-engines.js';

const encoder = new TextEncoder();
const FOUNDERS = ['n1', 'n2', 'n3'];
const WRITE_COUNT = 10;
/** OLDER: a binary from before leader_last_seq and capability bits (no live streams). */
const OLDER: Compat = { sendsLeaderLastSeq: false, capabilities: 0, buildVersion: '' };

function cluster(compat: Compat): WiredEngines {
  const configs: EngineConfig[] = FOUNDERS.map((name) => ({ ...founderConfig(name, FOUNDERS), compat }));
  const net = new WiredEngines(configs);
  // n1 campaigns first: only it ticks until it leads.
  for (let t = 0; t < 10 * DEFAULT_LIMITS.electionTimeoutTicks && net.engine(1).status().role !== 'leader'; t++)
    net.input(1, { type: 'tick' });
  assert.equal(net.engine(1).status().role, 'leader');
  for (let i = 1; i <= WRITE_COUNT; i++)
    net.input(1, { type: 'propose', proposalId: i, data: encoder.encode(`{"k":${i}}`) });
  net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
  const commit = net.engine(1).status().commitSeq;
  for (const id of [2, 3]) assert.equal(net.engine(id).status().commitSeq, commit, `n${id} was told the commit`);
  return net;
}

/** restartBetweenHeartbeats crashes n2 and restarts it at once: no heartbeat reaches it while it is down. */
function restartBetweenHeartbeats(net: WiredEngines): number {
  const commit = net.engine(1).status().commitSeq;
  assert.ok(net.savedCommitSeq(2) < commit, 'n2 saved an older commit than it was told (hard state is saved lazily)');
  net.takeSent();
  net.crash(2);
  net.restart(2);
  assert.equal(net.engine(2).status().commitSeq, net.savedCommitSeq(2), 'n2 restarted with its saved commit');
  assert.equal(net.engine(2).status().lastSeq, commit, 'and holds every committed entry');
  return commit;
}

describe('engine: a follower restarted between two heartbeats is told the commit again', () => {
  it('older binaries (no leader_last_seq, no live stream): n2 reports once, the leader re-sends the commit', () => {
    const net = cluster(OLDER);
    const commit = restartBetweenHeartbeats(net);
    net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
    assert.equal(net.failedCallCount(), 0, 'no call failed: n2 restarted between two heartbeats');
    assert.equal(net.engine(2).status().commitSeq, commit, 'n2 has the commit again (before the fix: its saved one)');
    assert.equal(net.engine(2).status().appliedSeq, commit, 'and applied what it holds');
    const sent = net.takeSent();
    assert.ok(
      sent.some((s) => s.fromId === 2 && s.method === 'ReportApplied'),
      'n2 reports where it stands on its leader’s first heartbeat',
    );
    assert.deepEqual(
      sent.filter((s) => s.fromId === 2 && s.method === 'StreamSegments'),
      [],
      'n2 does not pull (nothing tells it it is behind): only the leader can tell it',
    );
  });

  it('the leader re-sends nothing to a follower that reports no less than it was told', () => {
    const net = cluster(OLDER);
    net.takeSent();
    net.tick(5 * DEFAULT_LIMITS.heartbeatIntervalTicks);
    const ships = net.takeSent().filter((s) => s.method === 'ShipSegment');
    assert.deepEqual(ships, [], 'an idle cluster ships nothing');
  });

  it('today’s binaries heal the same restart by pulling, and report once: after the pull’s first chunk', () => {
    const net = cluster({ ...founderConfig('n1', FOUNDERS).compat });
    const commit = restartBetweenHeartbeats(net);
    net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
    assert.equal(net.engine(2).status().commitSeq, commit);
    const fromN2 = net.takeSent().filter((s) => s.fromId === 2);
    assert.deepEqual(
      fromN2.map((s) => s.method),
      ['StreamSegments', 'ReportApplied'],
      'n2 opens a stream on the first heartbeat and reports once (before: a second report, on that heartbeat)',
    );
    const report = fromN2[1]!.effect.request;
    assert.equal(report.method === 'ReportApplied' && report.body.appliedSeqno, commit, 'where the stream left it');
  });

  it('the report waits while a pull is in flight, and goes on the next heartbeat once the pull failed', () => {
    const net = cluster({ ...founderConfig('n1', FOUNDERS).compat });
    net.takeSent();
    net.tick(DEFAULT_LIMITS.heartbeatIntervalTicks);
    const heartbeat = net.takeSent().find((s) => s.toId === 2 && s.method === 'Heartbeat')!.effect.request;
    restartBetweenHeartbeats(net);
    const saved = net.savedCommitSeq(2);
    // n2 is fed by hand from here: n1's heartbeat, and the leader's answers n2 gets (none but a failure).
    const n2 = net.engine(2);
    const first = sends(n2.step({ type: 'request', callId: 9001, request: heartbeat }));
    assert.deepEqual(
      first.map((s) => s.request.method),
      ['StreamSegments'],
      'a pull opens; no report beside it (its first chunk would carry the commit and make n2 report)',
    );
    const status = { code: StatusCode.UNAVAILABLE, details: 'connection reset', trailers: {} };
    assert.deepEqual(sends(n2.step({ type: 'callFailed', requestId: first[0]!.requestId, status })), []);
    const second = sends(n2.step({ type: 'request', callId: 9002, request: heartbeat }));
    assert.deepEqual(
      second.map((s) => s.request.method),
      ['ReportApplied'],
      'no pull in flight (the next is not due yet): the report owed since the restart goes now',
    );
    const report = second[0]!.request;
    assert.equal(report.method === 'ReportApplied' && report.body.appliedSeqno, saved, 'the frontier n2 restarted at');
  });
});

describe('engine: the leader reads a report below the commit it counted as told (Progress.reportedBehind)', () => {
  /** idleLeader: n1 after WRITE_COUNT writes, every ship answered: n2 holds and was told the commit. */
  function idleLeader() {
    const { engine, answer } = answeredLeader();
    for (let i = 1; i <= WRITE_COUNT; i++)
      answer(engine.step({ type: 'propose', proposalId: i, data: encoder.encode(`{"k":${i}}`) }));
    for (let t = 0; t < 2 * DEFAULT_LIMITS.heartbeatIntervalTicks; t++) answer(engine.step({ type: 'tick' }));
    const { commitSeq, lastSeq } = engine.status();
    assert.equal(commitSeq, lastSeq);
    return { engine, commitSeq };
  }

  it('answers a report below it with a commit-only segment to that follower', () => {
    const { engine, commitSeq } = idleLeader();
    const savedCommit = 1;
    const ships = shipsTo(reportApplied(engine, 900, 2, savedCommit), 2);
    assert.equal(ships.length, 1, 'one segment to n2 (before the fix: none, the leader counted n2 as told)');
    const ship = ships[0]!;
    assert.equal(ship.request.method === 'ShipSegment' && ship.request.body.eventCount, 0, 'commit news only');
    assert.equal(prevSeqOf(ship), commitSeq, 'after the last entry n2 holds (its log is unchanged)');
    const frame = ship.request.method === 'ShipSegment' ? decodeSegmentFrame(ship.request.body.payload) : null;
    assert.ok(frame?.ok);
    assert.equal(frame.frame.commitSeq, commitSeq);
  });

  it('sends nothing on a report at the commit it was told, nor to the other follower', () => {
    const { engine, commitSeq } = idleLeader();
    assert.deepEqual(shipsTo(reportApplied(engine, 900, 2, commitSeq), 2), []);
    const behind = reportApplied(engine, 901, 2, 1);
    assert.deepEqual(shipsTo(behind, 3), [], 'n3 reported nothing: it is not re-told');
  });
});
