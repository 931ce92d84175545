// A removed member must learn its removal (rule 6: the leader ships to it until it was told the record that
// removed it committed, docs/protocol.md "Learning of a removal"), and a failed heartbeat makes the leader count
// the commit news it gave a member as lost (Progress.commitNewsMaybeLost, sim seed 218124). Together: a removed
// member whose heartbeats fail must not lose the removal's commit news for good, and once it has learned, the
// leader must let it go (no more heartbeats or ships to it), whether it lives on or is gone for good.
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS } from '../../engine/index.js';
import { founderConfig } from './founders.js';
import { WiredEngines } from './wired-engines.js';

const encoder = new TextEncoder();
const FOUNDERS = ['n1', 'n2', 'n3'];
/** QUIET_TICKS: long enough for several heartbeats and ship retries (heartbeatIntervalTicks, shipRetryTicks). */
const QUIET_TICKS = 4 * DEFAULT_LIMITS.shipRetryTicks;

function cluster(): WiredEngines {
  const net = new WiredEngines(FOUNDERS.map((name) => founderConfig(name, FOUNDERS)));
  for (let t = 0; t < 10 * DEFAULT_LIMITS.electionTimeoutTicks && net.engine(1).status().role !== 'leader'; t++)
    net.input(1, { type: 'tick' });
  assert.equal(net.engine(1).status().role, 'leader');
  for (let i = 1; i <= 5; i++) net.input(1, { type: 'propose', proposalId: i, data: encoder.encode(`{"k":${i}}`) });
  net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
  return net;
}

/** removeN3: n1 removes n3; the removal commits with n2 (n3 no longer counts). */
function removeN3(net: WiredEngines): number {
  net.input(1, { type: 'admin', adminId: 1, op: { op: 'remove', memberId: 3 } });
  net.tick(2);
  const removalSeq = net.engine(1).status().lastSeq;
  assert.ok(net.engine(1).status().commitSeq >= removalSeq, 'the removal committed');
  return removalSeq;
}

describe('engine: a removed member and lost commit news', () => {
  it('a member down through its removal (its heartbeats failed) learns it once back', () => {
    const net = cluster();
    net.crash(3);
    removeN3(net);
    net.takeSent();
    net.tick(QUIET_TICKS);
    assert.ok(net.failedCallCount() > 0, 'heartbeats to n3 failed: the leader counts its commit news as lost');
    net.restart(3);
    net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
    assert.equal(net.engine(3).status().removed, true, 'n3 learned its removal');
    assert.equal(net.engine(3).status().role, 'removed');
  });
});
