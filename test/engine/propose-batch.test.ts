// proposeBatch: many client commands in one step, as a loaded node's driver hands them over.
import assert from 'node:assert/strict';
import type { Effect } from '../../engine/types.js';
import { Lockstep } from '../../sim/lockstep.js';

const encode = (text: string) => new TextEncoder().encode(text);
const decode = (data: Uint8Array) => new TextDecoder().decode(data);

function stepEffects(c: Lockstep, name: string, run: () => void): Effect[] {
  const node = c.node(name);
  const before = node.effects.length;
  run();
  return node.effects.slice(before);
}

describe('engine: proposeBatch', () => {
  it('appends a batch in one append, ships it as one segment per follower, and commits each command in order', () => {
    const c = new Lockstep();
    c.bootstrap(['a', 'b', 'c']);
    assert.ok(c.elect('a'));
    c.deliver();
    const proposals = [1001, 1002, 1003, 1004].map((proposalId) => ({ proposalId, data: encode(`w${proposalId}`) }));
    const effects = stepEffects(c, 'a', () => c.input('a', { type: 'proposeBatch', proposals }));

    const appends = effects.filter((e) => e.type === 'append');
    assert.equal(appends.length, 1, 'one WAL append for the batch');
    assert.deepEqual(appends[0]!.type === 'append' && appends[0]!.entries.map((e) => decode(e.data)), [
      'w1001',
      'w1002',
      'w1003',
      'w1004',
    ]);
    // A segment leaves as a ShipSegment call, or as a chunk on the follower's live stream (docs/protocol.md).
    const segments = effects.flatMap((e) =>
      e.type === 'send' && e.request.method === 'ShipSegment'
        ? [e.request.body]
        : e.type === 'streamChunk'
          ? [e.chunk]
          : [],
    );
    assert.equal(segments.length, 2, 'one segment per follower');
    for (const segment of segments) assert.equal(segment.eventCount, 4);

    const results = stepEffects(c, 'a', () => c.deliver()).filter((e) => e.type === 'proposalResult');
    assert.deepEqual(
      results.map((r) => r.type === 'proposalResult' && [r.proposalId, r.ok]),
      proposals.map((p) => [p.proposalId, true]),
    );
    const seqs = results.map((r) => (r.type === 'proposalResult' ? r.seq : 0));
    assert.deepEqual(
      seqs,
      [seqs[0]!, seqs[0]! + 1, seqs[0]! + 2, seqs[0]! + 3],
      'consecutive seqnos in the order proposed',
    );
    assert.ok(
      c.tickUntil(() =>
        ['a', 'b', 'c'].every(
          (n) =>
            c
              .node(n)
              .values()
              .filter((v) => v.startsWith('w100')).length === 4,
        ),
      ),
    );
  });

  it('refuses every command of a batch sent to a follower, naming the leader', () => {
    const c = new Lockstep();
    c.bootstrap(['a', 'b', 'c']);
    assert.ok(c.elect('a'));
    c.deliver();
    const effects = stepEffects(c, 'b', () =>
      c.input('b', {
        type: 'proposeBatch',
        proposals: [
          { proposalId: 7, data: encode('x') },
          { proposalId: 8, data: encode('y') },
        ],
      }),
    );
    assert.equal(effects.filter((e) => e.type === 'append').length, 0);
    const results = effects.filter((e) => e.type === 'proposalResult');
    assert.deepEqual(
      results.map((r) => r.type === 'proposalResult' && [r.proposalId, r.ok, r.reason, r.leaderHint]),
      [
        [7, false, 'not the leader', Lockstep.addr('a')],
        [8, false, 'not the leader', Lockstep.addr('a')],
      ],
    );
  });

  it('takes what fits under proposalQueueCountMax and refuses the rest of the batch', () => {
    const c = new Lockstep();
    c.limits = { ...c.limits, proposalQueueCountMax: 2 };
    c.bootstrap(['a', 'b', 'c']);
    assert.ok(c.elect('a'));
    c.deliver();
    const proposals = [1, 2, 3].map((proposalId) => ({ proposalId, data: encode(`q${proposalId}`) }));
    const effects = stepEffects(c, 'a', () => c.input('a', { type: 'proposeBatch', proposals }));
    const append = effects.find((e) => e.type === 'append');
    assert.deepEqual(append?.type === 'append' && append.entries.map((e) => decode(e.data)), ['q1', 'q2']);
    const refused = effects.filter((e) => e.type === 'proposalResult');
    assert.deepEqual(
      refused.map((r) => r.type === 'proposalResult' && [r.proposalId, r.ok, r.reason]),
      [[3, false, 'proposal queue full']],
    );
    const later = stepEffects(c, 'a', () => c.deliver()).filter((e) => e.type === 'proposalResult');
    assert.deepEqual(
      later.map((r) => r.type === 'proposalResult' && [r.proposalId, r.ok]),
      [
        [1, true],
        [2, true],
      ],
    );
  });
});
