// A node's open peer calls follow its leader (transports/node/open-call-peers.ts): on three real nodes (in
// process, mTLS, real sockets), a leader's HeartbeatStream calls to its followers and the followers'
// ReportStream calls to it end as soon as leadership moves, not at the calls' 30 s idle timeout
// (OPEN_CALL_IDLE_MS), and the new leader's calls open in their place.
import assert from 'node:assert/strict';
import { OPEN_CALL_IDLE_MS } from '../../transports/grpc/open-call-carrier.js';
import { waitFor } from './harness.js';
import { InProcessCluster } from './in-process-cluster.js';

/** CALLS_END_WITHIN_MS: how long the old calls may take to end; well under their idle timeout. */
const CALLS_END_WITHIN_MS = 10_000;

describe('node: open calls to a member that stopped leading end at once', function () {
  this.timeout(90_000);
  const cluster = new InProcessCluster();

  before(async () => {
    await cluster.start(['o1', 'o2', 'o3'], ['o1', 'o2', 'o3']);
  });
  after(async () => {
    await cluster.stop();
  });

  const addressOf = (name: string): string => cluster.plans.find((p) => p.name === name)!.member.grpcAddr;

  it('ends the old leader’s HeartbeatStream calls and the ReportStream calls to it when leadership moves', async () => {
    assert.ok(CALLS_END_WITHIN_MS < OPEN_CALL_IDLE_MS, 'the wait below is shorter than the idle timeout');
    const leader = await cluster.waitLeader();
    const oldName = leader.status().name;
    const oldAddr = addressOf(oldName);
    const followers = cluster.followers();
    await followers[0]!.store.put('open-calls/a', { v: 1 });
    await waitFor(
      () => leader.openCallsTo.heartbeat.length === 2 && followers.every((f) => f.openCallsTo.report.includes(oldAddr)),
      'the leader’s heartbeat calls and the followers’ report calls open',
    );

    const outcome = await leader.handOffLeadership();
    assert.equal(outcome.outcome, 'handed', JSON.stringify(outcome));
    await waitFor(() => cluster.leader() !== undefined && cluster.leader() !== leader, 'a new leader');
    const newLeader = cluster.leader()!;
    const newAddr = addressOf(newLeader.status().name);

    await waitFor(
      () =>
        leader.openCallsTo.heartbeat.length === 0 &&
        [...cluster.nodes.values()].every((n) => !n.openCallsTo.report.includes(oldAddr)),
      'the calls of the old leadership ended',
      CALLS_END_WITHIN_MS,
    );
    // The new leadership's calls carry on: a write commits, its reports go to the new leader.
    await leader.store.put('open-calls/b', { v: 2 });
    await waitFor(
      () =>
        newLeader.openCallsTo.heartbeat.length === 2 &&
        [...cluster.nodes.values()].filter((n) => n !== newLeader).some((n) => n.openCallsTo.report.includes(newAddr)),
      'the new leader’s calls open',
    );
    assert.deepEqual(newLeader.openCallsTo.report, [], 'a leader reports to no one');
  });
});
