// A voter the leader never heard from may be removed (membership.ts confChangeRefusal: a voter gone for good must
// stay removable), but if it is alive and an older binary, the kind-4 record that removes it would halt its
// receiver for good (spec: an unknown batch kind). Should that record then be cut away by a later leader, the
// member is a voter again but halted: the cluster has lost it for good (sim seed 263587: the older founder pulled
// the chunk holding its own uncommitted removal, halted, and a later leader truncated the removal; liveness
// failed 60 s after healing). So a member removed in the roster that has not reported capability bit 0 is never
// sent a kind-4 record (core.ts withholdsKind4From): no ship until a heartbeat answer says it folds them, let go
// when the answer says it does not, and a stream it asks for cut before the first kind-4 record.
import assert from 'node:assert/strict';
import { CURRENT_COMPAT, DEFAULT_LIMITS, type EngineConfig } from '../../engine/index.js';
import { founderConfig } from './founders.js';
import { WiredEngines, type Sent } from './wired-engines.js';

const encoder = new TextEncoder();
const FOUNDERS = ['n1', 'n2', 'n3'];
const QUIET_TICKS = 4 * DEFAULT_LIMITS.shipRetryTicks;

/** olderBinary: a founder whose binary folds no kind-4 records (capability bit 0 clear), as an old release. */
function olderBinary(config: EngineConfig): EngineConfig {
  return { ...config, compat: { ...CURRENT_COMPAT, capabilities: 0 } };
}

/** removedWhileUnheard: n3 (an older binary) is down while n1 is elected and removes it; n3 then comes back. */
function removedWhileUnheard(): WiredEngines {
  const configs = FOUNDERS.map((name) => founderConfig(name, FOUNDERS));
  configs[2] = olderBinary(configs[2]!);
  const net = new WiredEngines(configs);
  net.crash(3);
  for (let t = 0; t < 10 * DEFAULT_LIMITS.electionTimeoutTicks && net.engine(1).status().role !== 'leader'; t++)
    net.input(1, { type: 'tick' });
  assert.equal(net.engine(1).status().role, 'leader');
  for (let i = 1; i <= 5; i++) net.input(1, { type: 'propose', proposalId: i, data: encoder.encode(`{"k":${i}}`) });
  net.tick(2 * DEFAULT_LIMITS.heartbeatIntervalTicks);
  const effects = net.input(1, { type: 'admin', adminId: 1, op: { op: 'remove', memberId: 3 } });
  assert.ok(
    !effects.some((e) => e.type === 'adminResult' && !e.ok),
    'the leader may remove a voter it never heard from',
  );
  net.tick(2);
  assert.ok(net.engine(1).status().commitSeq >= net.engine(1).status().lastSeq, 'the removal committed with n2');
  net.takeSent();
  net.restart(3);
  return net;
}

function toN3(sent: readonly Sent[], method: string): Sent[] {
  return sent.filter((s) => s.fromId === 1 && s.toId === 3 && s.method === method);
}

describe('engine: a removed voter the leader never heard from is never sent a kind-4 record', () => {
  it('an older binary back after its removal is not halted, and is let go once it answers', () => {
    const net = removedWhileUnheard();
    net.tick(QUIET_TICKS);
    // Before the fix n1 shipped n3 the segments holding its removal record, and n3 halted its receiver for good.
    assert.equal(net.engine(3).status().halted, '', 'n3 never met the kind-4 record');
    const sent = net.takeSent();
    assert.equal(toN3(sent, 'ShipSegment').length, 0, 'no segment went to n3');
    net.tick(QUIET_TICKS);
    assert.deepEqual(
      net.takeSent().filter((s) => s.fromId === 1 && s.toId === 3),
      [],
      'n3 answered a heartbeat without bit 0: n1 let it go',
    );
    assert.equal(net.engine(1).status().role, 'leader');
  });

  it('a stream a removed member asks for stops before the first kind-4 record', () => {
    const net = removedWhileUnheard();
    const leader = net.engine(1);
    const removalSeq = leader.status().lastSeq;
    const effects = leader.step({
      type: 'request',
      callId: 77,
      callerId: 3,
      request: { method: 'StreamSegments', body: { shardId: 1, fromSeqno: 1, term: leader.status().term } },
    });
    const chunks = effects.flatMap((e) => (e.type === 'streamChunk' ? [e.chunk] : []));
    assert.ok(chunks.length > 0, 'the entries before the record were served');
    const servedTo = Math.max(...chunks.map((c) => c.leaderLastSeq));
    assert.ok(servedTo < removalSeq, `served through ${servedTo}, before the removal record at ${removalSeq}`);
  });
});
