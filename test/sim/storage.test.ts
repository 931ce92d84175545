import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Entry } from '../../engine/types.js';
import { SimStorage } from '../../sim/storage.js';
import { LogView } from '../../sim/log-view.js';
import { Prng } from '../../sim/prng.js';

function entries(from: number, count: number, term: number): Entry[] {
  return Array.from({ length: count }, (_, i) => ({
    seq: from + i,
    term,
    kind: 1,
    data: new Uint8Array([from + i, term]),
  }));
}

describe('sim/storage', () => {
  it('makes appends durable in order and reports each one', () => {
    const disk = new SimStorage();
    assert.equal(disk.append(1, entries(1, 3, 1), 0, 5_000).error, null);
    const second = disk.append(4, entries(4, 2, 1), 100, 1_000);
    assert.equal(second.syncAtUs, 5_000, 'a later append never syncs before an earlier one');
    assert.deepEqual(disk.syncDue(4_999), []);
    assert.deepEqual(disk.syncDue(5_000), [
      { lastSeq: 3, lastTerm: 1 },
      { lastSeq: 5, lastTerm: 1 },
    ]);
    assert.equal(disk.durable.lastSeq, 5);
  });

  it("echoes an append's log generation in its sync notice (a notice from before an engine's wipe is told apart)", () => {
    const disk = new SimStorage();
    disk.append(1, entries(1, 2, 1), 0, 0);
    disk.append(1, [], 0, 0, 1);
    disk.append(1, entries(1, 2, 1), 0, 0, 1);
    assert.deepEqual(disk.syncDue(0), [
      { lastSeq: 2, lastTerm: 1 },
      { lastSeq: 0, lastTerm: 0, generation: 1 },
      { lastSeq: 2, lastTerm: 1, generation: 1 },
    ]);
  });

  it('reports a truncating empty append as the entry before it', () => {
    const disk = new SimStorage();
    disk.append(1, entries(1, 5, 1), 0, 0);
    disk.syncDue(0);
    disk.append(4, [], 10, 0);
    assert.deepEqual(disk.syncDue(10), [{ lastSeq: 3, lastTerm: 1 }]);
    assert.equal(disk.durable.lastSeq, 3);
  });

  it('refuses an append that would leave a hole', () => {
    const disk = new SimStorage();
    assert.match(disk.append(3, entries(3, 1, 1), 0, 0).error ?? '', /hole/);
    assert.match(
      disk.append(1, [{ seq: 2, term: 1, kind: 1, data: new Uint8Array() }], 0, 0).error ?? '',
      /contiguous/,
    );
  });

  it('loses unsynced appends on a crash, keeping synced ones', () => {
    const disk = new SimStorage();
    disk.append(1, entries(1, 3, 1), 0, 0);
    disk.syncDue(0);
    disk.append(4, entries(4, 3, 1), 0, 1_000);
    disk.crash(new Prng('c'), 0);
    assert.equal(disk.written.lastSeq, 3);
    assert.equal(disk.pendingCount, 0);
  });

  it('after a crash with torn writes, holds a whole-entry prefix of what was written', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer(),
        (sizes, synced, salt) => {
          const disk = new SimStorage();
          let next = 1;
          const written: Entry[] = [];
          sizes.forEach((size, i) => {
            const batch = entries(next, size, 1);
            disk.append(next, batch, 0, i < synced ? 0 : 1_000);
            written.push(...batch);
            next += size;
          });
          disk.syncDue(0);
          const durableBefore = disk.durable.lastSeq;
          disk.crash(new Prng(`t${salt}`), 1);
          const kept = disk.written.entries;
          assert.ok(disk.written.lastSeq >= durableBefore, 'a crash never loses synced entries');
          kept.forEach((e, i) => assert.equal(e, written[i], 'whole entries, in order, from what was written'));
        },
      ),
    );
  });

  it('installs a snapshot by Raft rule: keep a continuing suffix, else drop the log', () => {
    const disk = new SimStorage();
    disk.append(1, entries(1, 6, 2), 0, 0);
    disk.syncDue(0);
    disk.installSnapshot({ seq: 4, entryTerm: 2, roster: { membershipVersion: 1, nextMemberId: 2, members: [] } });
    assert.deepEqual(
      disk.durable.entries.map((e) => e.seq),
      [5, 6],
    );
    disk.installSnapshot({ seq: 9, entryTerm: 3, roster: { membershipVersion: 1, nextMemberId: 2, members: [] } });
    assert.deepEqual(disk.durable.entries, []);
    assert.equal(disk.durable.base, 9);
    assert.equal(disk.durable.termAt(9), 3);
  });

  it('recovers the entries that continue the newest snapshot', () => {
    const disk = new SimStorage();
    disk.append(1, entries(1, 8, 1), 0, 0);
    disk.syncDue(0);
    disk.compact(3);
    const roster = { membershipVersion: 1, nextMemberId: 2, members: [] };
    assert.deepEqual(
      disk.recover({ seq: 5, entryTerm: 1, roster }).map((e) => e.seq),
      [6, 7, 8],
    );
    assert.deepEqual(
      disk.recover({ seq: 5, entryTerm: 9, roster }),
      [],
      'a WAL that does not continue the snapshot is dropped',
    );
  });

  it('compacts a log view without losing the term at its base', () => {
    const view = new LogView();
    view.write(1, entries(1, 5, 3));
    view.compact(3);
    assert.equal(view.base, 3);
    assert.equal(view.termAt(3), 3);
    assert.equal(view.entryAt(3), undefined);
    assert.equal(view.entryAt(4)!.seq, 4);
    view.compact(99);
    assert.equal(view.base, 5, 'never past the last entry');
  });
});
