// The community-overlay filter at the engine (docs/protocol.md, "Filtered members"): the filtered frame
// (version 2, withheld runs), the roster's filters, and what a leader ships a filtered learner.
import assert from 'node:assert/strict';
import {
  decodeRoster,
  decodeSegmentFrame,
  encodeRoster,
  encodeSegmentFrame,
  EntryKind,
  MemberRole,
  voterIds,
  type Entry,
  type Roster,
} from '../../engine/index.js';
import { filteredEntries, filterProblem, inCommunities, withFilter } from '../../engine/communities.js';
import { crc32c } from '../../engine/crc32c.js';
import { Lockstep } from '../../sim/lockstep.js';

const text = (s: string) => new TextEncoder().encode(s);
const batch = (seq: number, data: string, term = 1): Entry => ({
  seq,
  term,
  kind: EntryKind.EventBatch,
  data: text(data),
});
const reader = (data: Uint8Array) => ({ key: new TextDecoder().decode(data), tenant: '' });

describe('engine overlay: the filtered segment frame (version 2)', () => {
  it('carries its communities whole and the rest as withheld runs, and decodes to the contiguous log', () => {
    const entries = [
      batch(5, 'acme/1'),
      batch(6, 'other/1'),
      batch(7, 'other/2'),
      batch(8, 'acme/2', 2),
      batch(9, 'x', 2),
    ];
    const shipped = filteredEntries(entries, { prefixes: ['acme/'], tenants: [] }, reader);
    const bytes = encodeSegmentFrame({ prevSeq: 4, prevTerm: 1, commitSeq: 3, entries: shipped, filtered: true });
    assert.equal(bytes[0], 2);
    assert.equal(new TextDecoder('latin1').decode(bytes).includes('other/1'), false, 'withheld data never travels');
    const decoded = decodeSegmentFrame(bytes);
    assert.ok(decoded.ok);
    assert.equal(decoded.frame.filtered, true);
    assert.deepEqual(
      decoded.frame.entries.map((e) => [e.seq, e.term, e.kind]),
      [
        [5, 1, 1],
        [6, 1, 255],
        [7, 1, 255],
        [8, 2, 1],
        [9, 2, 255],
      ],
    );
  });

  it('an empty filtered payload still covers its seqs; a version-1 frame is unchanged', () => {
    const shipped = filteredEntries([batch(1, 'b'), batch(2, 'c')], { prefixes: ['a'], tenants: [] }, reader);
    const decoded = decodeSegmentFrame(
      encodeSegmentFrame({ prevSeq: 0, prevTerm: 0, commitSeq: 0, entries: shipped, filtered: true }),
    );
    assert.ok(decoded.ok && decoded.frame.entries.length === 2 && decoded.frame.entries.every((e) => e.kind === 255));
    const v1 = encodeSegmentFrame({ prevSeq: 0, prevTerm: 0, commitSeq: 0, entries: [batch(1, 'b')] });
    assert.equal(v1[0], 1);
  });

  it('refuses runs that overlap the entries, leave a gap, or claim a withheld entry inline', () => {
    const good = encodeSegmentFrame({
      prevSeq: 0,
      prevTerm: 0,
      commitSeq: 0,
      entries: [batch(1, 'a'), { seq: 2, term: 1, kind: 255, data: new Uint8Array(0) }],
      filtered: true,
    });
    // Rewrite the run's fromSeq (after the one carried entry) to 3: a gap at 2. The crc is recomputed by re-encoding by hand.
    const view = new DataView(good.buffer.slice(0));
    const runAt = 1 + 24 + 4 + (8 + 8 + 1 + 4 + 1) + 8 + 4; // header, entry count, the entry, filter epoch, run count
    view.setUint32(runAt + 4, 3);
    const bytes = new Uint8Array(view.buffer);
    const crcAt = bytes.length - 4;
    new DataView(bytes.buffer).setUint32(crcAt, crc32c(bytes, 0, crcAt));
    const bad = decodeSegmentFrame(bytes);
    assert.ok(!bad.ok && /contiguous|malformed/.test(bad.reason), JSON.stringify(bad));
  });
});

describe('engine overlay: filters in the roster', () => {
  const roster: Roster = {
    membershipVersion: 3,
    nextMemberId: 5,
    members: [1, 2, 3]
      .map((id) => ({
        id,
        name: `n${id}`,
        grpcAddr: `n${id}:7000`,
        httpAddr: `http://n${id}:8080`,
        role: MemberRole.Voter as number,
      }))
      .concat([{ id: 4, name: 'n4', grpcAddr: 'n4:7000', httpAddr: 'http://n4:8080', role: MemberRole.Learner }]),
  };

  it('an unfiltered roster encodes as before the field; a filter round-trips, canonical', () => {
    assert.equal(new TextDecoder().decode(encodeRoster(roster)).includes('filters'), false);
    const filtered = withFilter(roster, 4, { prefixes: ['b/', 'a/', 'a/'], tenants: ['t1'] });
    assert.equal(filtered.membershipVersion, 4);
    const back = decodeRoster(encodeRoster(filtered))!;
    assert.deepEqual(back.filters, { 4: { prefixes: ['a/', 'b/'], tenants: ['t1'] } });
    const cleared = withFilter(back, 4, null);
    assert.equal(cleared.filters, undefined);
    assert.deepEqual(cleared.refilling, [4]);
  });

  it('a filtered member is never a voter, whatever its role says', () => {
    const forged: Roster = { ...roster, filters: { 2: { prefixes: ['a'], tenants: [] } } };
    assert.deepEqual(voterIds(forged), [1, 3]);
  });

  it('a malformed filter is refused by name', () => {
    assert.match(filterProblem({ prefixes: [], tenants: [] }) ?? '', /at least one/);
    assert.match(filterProblem({ prefixes: [''], tenants: [] }) ?? '', /characters/);
    assert.equal(filterProblem({ prefixes: ['a'], tenants: [] }), null);
    assert.equal(inCommunities({ prefixes: [], tenants: ['t1'] }, { key: 'x', tenant: 't1' }), true);
    assert.equal(inCommunities({ prefixes: ['a'], tenants: [] }, { key: 'xa', tenant: '' }), false);
  });
});

describe('engine overlay: the leader ships a filtered learner its communities only', () => {
  it('leader_last_seq is the unfiltered end; the payload holds no other community; promotion is refused while filtered', () => {
    const w = new Lockstep();
    w.bootstrap(['a', 'b', 'c'], ['d']);
    assert.ok(w.elect('a'));
    const leader = w.leader()!;
    w.admin('filter', 'd', leader.name, { prefixes: ['keep'], tenants: [] });
    w.tickUntil(() => w.node('d').status().filter !== undefined, 200);
    w.propose('drop-me');
    w.propose('keep-me');
    w.tickUntil(() => w.node('d').status().appliedSeq === leader.status().lastSeq, 300);
    const ships = w.messages.filter((m) => m.to === 'd' && m.kind === 'request' && m.request?.method === 'ShipSegment');
    const carrying = ships.filter((m) => m.request!.method === 'ShipSegment' && m.request!.body.payload[0] === 2);
    assert.ok(carrying.length > 0, 'filtered frames were shipped');
    for (const m of carrying) {
      const body = m.request!.method === 'ShipSegment' ? m.request!.body : null;
      assert.equal(new TextDecoder('latin1').decode(body!.payload).includes('drop-me'), false);
      const frame = decodeSegmentFrame(body!.payload);
      assert.ok(frame.ok);
      assert.equal(body!.leaderLastSeq, frame.frame.prevSeq + frame.frame.entries.length);
    }
    assert.equal(w.node('d').holds('keep-me'), true);
    assert.equal(w.node('d').holds('drop-me'), false);
    w.admin('promote', 'd', leader.name);
    const results = leader.effects.filter((e) => e.type === 'adminResult');
    assert.equal(
      results[results.length - 1]!.type === 'adminResult' && results[results.length - 1]!.code,
      'member-filtered',
    );
  });
});
