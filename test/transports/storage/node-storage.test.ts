import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { emptyRestoredState } from '../../../engine/restored.js';
import type { HardState, SnapshotMeta } from '../../../engine/types.js';
import { openNodeStorage, entriesAfterSnapshot } from '../../../transports/storage/node-storage.js';
import { entries, makeTempDir, removeTempDir, summary } from './helpers.js';

const roster = {
  membershipVersion: 1,
  nextMemberId: 2,
  members: [{ id: 1, name: 'n1', grpcAddr: 'n1:7000', httpAddr: 'n1:8000', role: 0 }],
};
const hardState: HardState = {
  term: 3,
  votedFor: 1,
  selfId: 1,
  commitSeq: 45,
  rosterBase: null,
  halted: '',
  reseed: false,
  removed: false,
};

describe('storage/openNodeStorage', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await makeTempDir('node');
  });
  afterEach(async () => {
    await removeTempDir(dir);
  });

  it('starts a fresh node from nothing', async () => {
    const storage = await openNodeStorage(dir);
    assert.equal(storage.fresh, true);
    assert.equal(storage.corruption, null);
    assert.deepEqual(storage.restored, emptyRestoredState());
    await storage.close();
  });

  it('restores hard state, the newest snapshot and the log after it', async () => {
    const storage = await openNodeStorage(dir);
    await storage.hardStateStore.save(hardState);
    await storage.wal.append(1, entries(1, 30, 2));
    await storage.wal.append(31, entries(31, 20, 3));
    const meta: SnapshotMeta = { seq: 30, entryTerm: 2, roster };
    const artifact = await storage.snapshots.stage(meta, [{ path: 'state.bin', bytes: Buffer.from('state at 30') }], {
      term: 3,
      leaderRegion: 1,
    });
    await storage.wal.compact(20);
    await storage.close();

    const reopened = await openNodeStorage(dir);
    assert.equal(reopened.fresh, false);
    assert.equal(reopened.corruption, null);
    assert.deepEqual(reopened.restored.hardState, hardState);
    assert.deepEqual(reopened.restored.snapshot, meta);
    assert.deepEqual(reopened.restored.snapshotHeader, artifact.header);
    assert.equal(reopened.restored.appliedSeq, 30);
    assert.deepEqual(summary(reopened.restored.entries), summary(entries(31, 20, 3)));
    assert.deepEqual(await readFile(join(reopened.snapshots.newest()!.dir, 'state.bin')), Buffer.from('state at 30'));
    await reopened.close();
  });

  it('keeps recovering after the engine resets the log past an installed snapshot', async () => {
    const storage = await openNodeStorage(dir);
    await storage.wal.append(1, entries(1, 10, 1));
    // What the engine asks after installing a snapshot at 500: the log now starts after it.
    await storage.wal.append(501, []);
    await storage.wal.append(501, entries(501, 3, 4));
    await storage.snapshots.stage({ seq: 500, entryTerm: 4, roster }, [], { term: 4, leaderRegion: 2 });
    await storage.close();
    const reopened = await openNodeStorage(dir);
    assert.equal(reopened.corruption, null);
    assert.deepEqual(
      reopened.restored.entries.map((e) => e.seq),
      [501, 502, 503],
    );
    await reopened.close();
  });

  it('reports WAL damage before the tail as corruption', async () => {
    const storage = await openNodeStorage(dir);
    await storage.wal.append(1, entries(1, 10, 1));
    await storage.close();
    const walDir = join(dir, 'wal');
    const [segment] = await readdir(walDir);
    const bytes = await readFile(join(walDir, segment!));
    bytes[20] ^= 0xff;
    await writeFile(join(walDir, segment!), bytes);
    const reopened = await openNodeStorage(dir);
    assert.match(reopened.corruption ?? '', /WAL .*\.wal at byte 0: record checksum mismatch/);
    assert.deepEqual(reopened.restored.entries, []);
    await reopened.close();
  });

  it('drops a tail from another history and reports a gap after the snapshot', () => {
    const meta: SnapshotMeta = { seq: 30, entryTerm: 2, roster };
    const divergent = entriesAfterSnapshot([...entries(25, 6, 1), ...entries(31, 5, 1)], meta);
    assert.deepEqual(divergent, { entries: [], gap: null, droppedDivergentTail: true });
    const matching = entriesAfterSnapshot([...entries(25, 6, 2), ...entries(31, 5, 2)], meta);
    assert.deepEqual(
      matching.entries.map((e) => e.seq),
      [31, 32, 33, 34, 35],
    );
    const gap = entriesAfterSnapshot(entries(40, 5, 2), meta);
    assert.match(gap.gap ?? '', /resumes at seq 40 but the snapshot ends at 30/);
    assert.deepEqual(
      entriesAfterSnapshot(entries(1, 10, 1), meta).entries,
      [],
      'a log behind the snapshot adds nothing',
    );
    assert.deepEqual(
      entriesAfterSnapshot(entries(3, 2, 1), null).gap,
      'the WAL resumes at seq 3 but the snapshot ends at 0: entries between are missing',
    );
  });
});
