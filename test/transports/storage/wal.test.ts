import assert from 'node:assert/strict';
import { appendFile, readdir, readFile, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { storageLimits } from '../../../transports/storage/limits.js';
import { Wal, WalError, segmentFileName, type DurablePoint } from '../../../transports/storage/wal.js';
import { entries, entry, makeTempDir, removeTempDir, summary } from './helpers.js';

describe('storage/wal', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await makeTempDir('wal');
  });
  afterEach(async () => {
    await removeTempDir(dir);
  });

  async function segmentFiles(): Promise<string[]> {
    return (await readdir(dir)).filter((n) => n.endsWith('.wal')).sort();
  }

  /** writeTwentyRecords appends entries 1..20 one by one (one 66-byte record each) and closes the WAL. */
  async function writeTwentyRecords(): Promise<{ segment: string; path: string }> {
    const { wal } = await Wal.open(dir);
    for (let seq = 1; seq <= 20; seq++) await wal.append(seq, [entry(seq, 1, 40)]);
    await wal.close();
    const [segment] = await segmentFiles();
    return { segment: segment!, path: join(dir, segment!) };
  }

  it('recovers exactly what was appended', async () => {
    const { wal } = await Wal.open(dir);
    await wal.append(1, entries(1, 10, 1));
    await wal.append(11, entries(11, 5, 2, 0));
    const last = await wal.append(16, entries(16, 3, 2, 3000));
    assert.deepEqual(last, { lastSeq: 18, lastTerm: 2 });
    await wal.close();

    const reopened = await Wal.open(dir);
    assert.equal(reopened.corruption, null);
    assert.equal(reopened.tornTail, null);
    assert.deepEqual(
      summary(reopened.entries),
      summary([...entries(1, 10, 1), ...entries(11, 5, 2, 0), ...entries(16, 3, 2, 3000)]),
    );
    assert.deepEqual(reopened.wal.durablePoint(), { lastSeq: 18, lastTerm: 2 });
    await reopened.wal.close();
  });

  it('truncates at fromSeq: a rewrite drops fromSeq and after', async () => {
    const { wal } = await Wal.open(dir);
    await wal.append(1, entries(1, 10, 1));
    assert.deepEqual(await wal.append(6, entries(6, 3, 2)), { lastSeq: 8, lastTerm: 2 });
    // A pure truncation reports the new end and the term of the entry now last.
    assert.deepEqual(await wal.append(8, []), { lastSeq: 7, lastTerm: 2 });
    assert.deepEqual(await wal.append(4, []), { lastSeq: 3, lastTerm: 1 });
    await wal.append(4, entries(4, 2, 3));
    await wal.close();

    const reopened = await Wal.open(dir);
    assert.deepEqual(summary(reopened.entries), summary([...entries(1, 3, 1), ...entries(4, 2, 3)]));
    await reopened.wal.close();
  });

  it('restarts the log when an append starts past its end (after a snapshot install)', async () => {
    const { wal } = await Wal.open(dir);
    await wal.append(1, entries(1, 5, 1));
    assert.deepEqual(await wal.append(100, entries(100, 3, 4)), { lastSeq: 102, lastTerm: 4 });
    await wal.close();
    const reopened = await Wal.open(dir);
    assert.deepEqual(summary(reopened.entries), summary(entries(100, 3, 4)));
    await reopened.wal.close();
  });

  it('cuts a torn tail on open, and later appends work', async () => {
    const { segment, path } = await writeTwentyRecords();
    const fullBytes = (await stat(path)).size;
    await truncate(path, fullBytes - 5);
    await appendFile(path, Buffer.from('garbage after the cut: not a record'));

    const reopened = await Wal.open(dir);
    assert.equal(reopened.corruption, null);
    assert.ok(reopened.tornTail, 'the torn tail is reported');
    assert.equal(reopened.tornTail.segment, segment);
    assert.deepEqual(summary(reopened.entries), summary(Array.from({ length: 19 }, (_, i) => entry(i + 1, 1, 40))));
    assert.equal((await stat(path)).size, reopened.tornTail.offset, 'the file is cut back to the last good record');
    assert.deepEqual(await reopened.wal.append(20, [entry(20, 2, 40)]), { lastSeq: 20, lastTerm: 2 });
    await reopened.wal.append(21, [entry(21, 2, 40)]);
    await reopened.wal.close();

    const again = await Wal.open(dir);
    assert.equal(again.tornTail, null);
    assert.deepEqual(summary(again.entries.slice(-3)), summary([entry(19, 1, 40), entry(20, 2, 40), entry(21, 2, 40)]));
    await again.wal.close();
  });

  it('cuts a zero-filled tail (a file extended but never written)', async () => {
    const { wal } = await Wal.open(dir);
    await wal.append(1, entries(1, 3, 1));
    await wal.close();
    const [segment] = await segmentFiles();
    await appendFile(join(dir, segment!), Buffer.alloc(4096));
    const reopened = await Wal.open(dir);
    assert.equal(reopened.corruption, null);
    assert.equal(reopened.tornTail?.bytesCut, 4096);
    assert.equal(reopened.entries.length, 3);
    await reopened.wal.close();
  });

  it('reports corruption before the tail instead of skipping it', async () => {
    const { path } = await writeTwentyRecords();
    const bytes = await readFile(path);
    const recordBytes = bytes.length / 20;
    bytes[4 * recordBytes + 30] ^= 0x01; // inside record 5's data
    await writeFile(path, bytes);

    const reopened = await Wal.open(dir);
    assert.ok(reopened.corruption, 'corruption is reported');
    assert.equal(reopened.corruption.offset, 4 * recordBytes);
    assert.match(reopened.corruption.reason, /checksum/);
    assert.equal(reopened.tornTail, null);
    assert.deepEqual(
      reopened.entries.map((e) => e.seq),
      [1, 2, 3, 4],
      'only the prefix before the damage',
    );
    assert.equal((await stat(path)).size, bytes.length, 'nothing is cut');
    assert.throws(
      () => reopened.wal.append(5, [entry(5, 1)]),
      (err: unknown) => err instanceof WalError && err.code === 'corrupt',
    );

    await reopened.wal.reset();
    await reopened.wal.append(50, entries(50, 2, 3));
    await reopened.wal.close();
    const fresh = await Wal.open(dir);
    assert.equal(fresh.corruption, null);
    assert.deepEqual(
      fresh.entries.map((e) => e.seq),
      [50, 51],
    );
    await fresh.wal.close();
  });

  it('reports a bad tail in a segment that is not the last as corruption', async () => {
    const limits = storageLimits({ walSegmentBytesMax: 400, walRecordBytesMax: 200 });
    const { wal } = await Wal.open(dir, limits);
    for (let seq = 1; seq <= 30; seq++) await wal.append(seq, [entry(seq, 1, 50)]);
    await wal.close();
    const files = await segmentFiles();
    assert.ok(files.length >= 3, `rolled into ${files.length} segments`);
    const first = join(dir, files[0]!);
    await truncate(first, (await stat(first)).size - 3);

    const reopened = await Wal.open(dir, limits);
    assert.ok(reopened.corruption);
    assert.equal(reopened.corruption.segment, files[0]);
    assert.equal(reopened.tornTail, null);
    await reopened.wal.close();
  });

  it('reports a missing middle segment', async () => {
    const limits = storageLimits({ walSegmentBytesMax: 400, walRecordBytesMax: 200 });
    const { wal } = await Wal.open(dir, limits);
    for (let seq = 1; seq <= 30; seq++) await wal.append(seq, [entry(seq, 1, 50)]);
    await wal.close();
    const files = await segmentFiles();
    await unlink(join(dir, files[1]!));
    const reopened = await Wal.open(dir, limits);
    assert.match(reopened.corruption?.reason ?? '', /missing/);
    await reopened.wal.close();
  });

  it('group-commits concurrent appends: fewer syncs than appends, resolved in order', async () => {
    const { wal } = await Wal.open(dir);
    const durableSeen: number[] = [];
    wal.onDurable((lastSeq) => durableSeen.push(lastSeq));
    const appendCount = 200;
    const resolvedOrder: number[] = [];
    const promises: Array<Promise<DurablePoint>> = [];
    for (let seq = 1; seq <= appendCount; seq++) {
      promises.push(
        wal.append(seq, [entry(seq, 1, 128)]).then((p) => {
          resolvedOrder.push(p.lastSeq);
          return p;
        }),
      );
    }
    await Promise.all(promises);
    const stats = wal.stats();
    assert.equal(stats.appendCount, appendCount);
    assert.ok(stats.syncCount < appendCount, `${stats.syncCount} syncs for ${appendCount} appends`);
    assert.ok(stats.syncCount >= 1);
    assert.deepEqual(
      resolvedOrder,
      Array.from({ length: appendCount }, (_, i) => i + 1),
    );
    assert.equal(durableSeen.length, stats.batchCount, 'one durability report per group commit');
    assert.equal(durableSeen[durableSeen.length - 1], appendCount);
    assert.ok(
      durableSeen.every((s, i) => i === 0 || s > durableSeen[i - 1]!),
      'durability reports only move forward',
    );
    await wal.close();
    const reopened = await Wal.open(dir);
    assert.equal(reopened.entries.length, appendCount);
    await reopened.wal.close();
  });

  it('lets appenders that wait on each other share syncs: appends arriving during a sync ride the next one', async () => {
    const { wal } = await Wal.open(dir);
    const appenderCount = 16;
    const roundCount = 10;
    let nextSeq = 1;
    const appender = async (): Promise<void> => {
      for (let round = 0; round < roundCount; round++) {
        const seq = nextSeq++;
        await wal.append(seq, [entry(seq, 1, 128)]);
      }
    };
    await Promise.all(Array.from({ length: appenderCount }, appender));
    const stats = wal.stats();
    assert.equal(stats.appendCount, appenderCount * roundCount);
    // One append per sync would be 160 syncs; group commit needs about one per round.
    assert.ok(
      stats.syncCount <= 2 * roundCount,
      `${stats.syncCount} syncs for ${stats.appendCount} appends in ${roundCount} rounds`,
    );
    await wal.close();
  });

  it('writes a lone append before its caller yields to the event loop, batched with the appends made beside it', async () => {
    const { wal } = await Wal.open(dir);
    const before = wal.stats();
    // A leader's propose step runs in a setImmediate callback: the WAL must not wait for a later loop turn
    // (other I/O first) before writing and syncing, or a lone writer pays that turn on every commit.
    await new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        const first = wal.append(1, [entry(1, 1, 40)]);
        const second = wal.append(2, [entry(2, 1, 40)]);
        assert.equal(wal.stats().bytesWritten, before.bytesWritten, 'append only encodes and enqueues');
        queueMicrotask(() => {
          try {
            const written = wal.stats().bytesWritten - before.bytesWritten;
            assert.ok(written > 0, 'the write started within the same task, not on a later loop turn');
            Promise.all([first, second]).then(() => {
              assert.equal(wal.stats().batchCount - before.batchCount, 1, 'both appends rode one group commit');
              assert.equal(wal.stats().bytesWritten - before.bytesWritten, written);
              resolve();
            }, reject);
          } catch (err) {
            reject(err as Error);
          }
        });
      });
    });
    await wal.close();
  });

  it('rolls segments at walSegmentBytesMax and compacts whole segments only', async () => {
    const limits = storageLimits({ walSegmentBytesMax: 1000, walRecordBytesMax: 200 });
    const { wal } = await Wal.open(dir, limits);
    await wal.append(1, entries(1, 60, 1, 50)); // 76-byte records: 13 per segment
    const files = await segmentFiles();
    assert.ok(files.length >= 4, `rolled into ${files.length} segments`);
    for (const name of files) assert.ok((await stat(join(dir, name))).size <= 1000, `${name} stays within the limit`);

    assert.equal(await wal.compact(5), 0, 'the first segment still holds entries above 5');
    const deleted = await wal.compact(30);
    assert.equal(deleted, 2);
    assert.deepEqual(await segmentFiles(), files.slice(2));
    assert.equal(await wal.compact(1000), files.length - 3, 'the segment being written is kept');
    assert.deepEqual(await segmentFiles(), files.slice(-1));
    await wal.append(61, entries(61, 2, 1, 50));
    await wal.close();

    const reopened = await Wal.open(dir, limits);
    assert.equal(reopened.corruption, null);
    const seqs = reopened.entries.map((e) => e.seq);
    assert.equal(seqs[seqs.length - 1], 62);
    assert.ok(
      seqs.every((s, i) => i === 0 || s === seqs[i - 1]! + 1),
      'contiguous',
    );
    await reopened.wal.close();
  });

  it('lets compaction delete a segment whose tail a durable truncate dropped', async () => {
    const limits = storageLimits({ walSegmentBytesMax: 1000, walRecordBytesMax: 200 });
    const { wal } = await Wal.open(dir, limits);
    await wal.append(1, entries(1, 13, 1, 50)); // fills the first segment exactly
    await wal.append(14, entries(14, 5, 1, 50));
    await wal.append(10, entries(10, 20, 2, 50)); // 10..13 in the first segment are now dead
    assert.equal(await wal.compact(9), 1);
    await wal.close();
    const reopened = await Wal.open(dir, limits);
    assert.deepEqual(
      reopened.entries.map((e) => [e.seq, e.term]),
      Array.from({ length: 20 }, (_, i) => [10 + i, 2]),
    );
    await reopened.wal.close();
  });

  it('refuses bad appends with a clear error', async () => {
    const limits = storageLimits({ walSegmentBytesMax: 4096, walRecordBytesMax: 1024, walQueuedBytesMax: 4096 });
    const { wal } = await Wal.open(dir, limits);
    const refused = (code: string) => (err: unknown) => err instanceof WalError && err.code === code;
    assert.throws(() => wal.append(0, []), refused('invalid-argument'));
    assert.throws(() => wal.append(1, [entry(2, 1)]), refused('invalid-argument'));
    assert.throws(() => wal.append(1, [entry(1, 1), entry(3, 1)]), refused('invalid-argument'));
    assert.throws(() => wal.append(1, [{ ...entry(1, 1), kind: 256 }]), refused('invalid-argument'));
    assert.throws(() => wal.append(1, [entry(1, 1, 2000)]), refused('invalid-argument'));
    assert.throws(() => wal.append(1, entries(1, 10, 1, 900)), refused('queue-full'));
    assert.equal(wal.stats().appendCount, 0, 'nothing refused was enqueued');
    await wal.append(1, [entry(1, 1)]);
    await wal.close();
    assert.throws(() => wal.append(2, [entry(2, 1)]), refused('closed'));
  });

  it('names segments by a zero-padded index', () => {
    assert.equal(segmentFileName(12), '0000000000000012.wal');
  });
});
