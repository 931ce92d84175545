import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import type { SnapshotHeader } from '../../../engine/rpc.js';
import type { SnapshotMeta } from '../../../engine/types.js';
import type { SnapshotFileChunk } from '../../../proto/gen/svc/replication/v1/replication.js';
import { storageLimits } from '../../../transports/storage/limits.js';
import { SnapshotError } from '../../../transports/storage/snapshot-paths.js';
import { SnapshotStore, type Artifact } from '../../../transports/storage/snapshots.js';
import { makeTempDir, removeTempDir, waitFor } from './helpers.js';

const CHUNK_BYTES = 1024;
const limits = storageLimits({ snapshotChunkBytes: CHUNK_BYTES });

function meta(seq: number, entryTerm = 2): SnapshotMeta {
  return {
    seq,
    entryTerm,
    roster: {
      membershipVersion: 1,
      nextMemberId: 3,
      members: [{ id: 1, name: 'n1', grpcAddr: 'n1:7000', httpAddr: 'n1:8000', role: 0 }],
    },
  };
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

async function* fromList<T>(items: readonly T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}

describe('storage/snapshots', () => {
  let source: string;
  let target: string;
  beforeEach(async () => {
    source = await makeTempDir('snap-src');
    target = await makeTempDir('snap-dst');
  });
  afterEach(async () => {
    await removeTempDir(source);
    await removeTempDir(target);
  });

  const contents = {
    big: randomBytes(2 * CHUNK_BYTES + 1),
    exact: randomBytes(CHUNK_BYTES),
    empty: Buffer.alloc(0),
    copied: randomBytes(5000),
  };

  async function stageSample(store: SnapshotStore, seq = 10): Promise<Artifact> {
    await writeFile(join(source, 'outside-source.bin'), contents.copied);
    return store.stage(
      meta(seq),
      [
        { path: 'state/big.bin', bytes: contents.big },
        { path: 'state/deep/exact.bin', bytes: contents.exact },
        { path: 'empty', bytes: contents.empty },
        { path: 'copied.bin', sourcePath: join(source, 'outside-source.bin') },
      ],
      { term: 5, leaderRegion: 1 },
    );
  }

  async function artifactChunks(store: SnapshotStore, artifact: Artifact): Promise<SnapshotFileChunk[]> {
    return collect(store.read(artifact));
  }

  async function leftovers(dir: string): Promise<string[]> {
    return (await readdir(join(dir, 'snapshots'))).filter((n) => n.startsWith('.'));
  }

  it('stages, serves and installs an artifact byte for byte', async () => {
    const src = await SnapshotStore.open(source, limits);
    const staged = await stageSample(src);
    const header = staged.header;
    assert.equal(header.needed, true);
    assert.equal(header.snapshotSeq, 10);
    assert.equal(header.term, 5);
    assert.equal(header.leaderRegion, 1);
    assert.deepEqual(
      header.files.map((f) => f.path),
      ['meta.json', 'state/big.bin', 'state/deep/exact.bin', 'empty', 'copied.bin'],
    );
    for (const [path, bytes] of [
      ['state/big.bin', contents.big],
      ['empty', contents.empty],
      ['copied.bin', contents.copied],
    ] as const) {
      const file = header.files.find((f) => f.path === path)!;
      assert.equal(file.size, bytes.length);
      assert.deepEqual(Buffer.from(file.blake3), Buffer.from(nobleBlake3(bytes)), `${path} digest matches the oracle`);
    }

    const chunks = await artifactChunks(src, staged);
    assert.ok(chunks.every((c) => c.data.length <= CHUNK_BYTES));
    const big = chunks.filter((c) => c.path === 'state/big.bin');
    assert.deepEqual(
      big.map((c) => [c.offset, c.data.length, c.last]),
      [
        [0, CHUNK_BYTES, false],
        [CHUNK_BYTES, CHUNK_BYTES, false],
        [2 * CHUNK_BYTES, 1, true],
      ],
    );
    assert.deepEqual(
      chunks.filter((c) => c.path === 'empty').map((c) => [c.offset, c.data.length, c.last]),
      [[0, 0, true]],
    );
    assert.deepEqual(
      [...new Set(chunks.map((c) => c.path))],
      header.files.map((f) => f.path),
      'files come in manifest order',
    );

    const dst = await SnapshotStore.open(target, limits);
    const installed = await dst.install(header, fromList(chunks));
    assert.deepEqual(installed.meta, meta(10));
    assert.deepEqual(installed.header, header);
    assert.deepEqual(await readFile(join(installed.dir, 'state/big.bin')), contents.big);
    assert.deepEqual(await readFile(join(installed.dir, 'state/deep/exact.bin')), contents.exact);
    assert.deepEqual(await readFile(join(installed.dir, 'copied.bin')), contents.copied);
    assert.equal(await dst.verify(installed), null);
    assert.deepEqual(await leftovers(target), []);

    const reopened = await SnapshotStore.open(target, limits);
    assert.equal(reopened.newest()?.name, '10-2');
    assert.deepEqual(reopened.newest()?.header, header);
  });

  it('serves the manifest digests, never rehashing: a byte flipped on disk fails the install and keeps the old state', async () => {
    const src = await SnapshotStore.open(source, limits);
    const dst = await SnapshotStore.open(target, limits);
    const old = await stageSample(src, 10);
    await dst.install(old.header, fromList(await artifactChunks(src, old)));

    const next = await stageSample(src, 20);
    const path = join(next.dir, 'state/big.bin');
    const bytes = await readFile(path);
    bytes[CHUNK_BYTES + 7] ^= 0x40;
    await writeFile(path, bytes);
    assert.match((await src.verify(next)) ?? '', /BLAKE3 mismatch/);

    await assert.rejects(
      dst.install(next.header, src.read(next)),
      (err: unknown) => err instanceof SnapshotError && /state\/big\.bin: BLAKE3 mismatch/.test(err.message),
    );
    assert.equal(dst.newest()?.name, '10-2', 'the old artifact is still current');
    assert.deepEqual((await readdir(join(target, 'snapshots'))).sort(), ['10-2']);
    assert.equal(await dst.verify(dst.newest()!), null);
  });

  it('fails a short, reordered, oversized or erroring stream and cleans up', async () => {
    const src = await SnapshotStore.open(source, limits);
    const staged = await stageSample(src);
    const chunks = await artifactChunks(src, staged);
    const dst = await SnapshotStore.open(target, limits);
    const cases: Array<[string, AsyncIterable<SnapshotFileChunk>, RegExp]> = [
      ['short stream', fromList(chunks.slice(0, -1)), /stream ended inside copied\.bin at 4096 of 5000 bytes/],
      [
        'missing file',
        fromList(chunks.filter((c) => c.path !== 'copied.bin')),
        /stream ended before 1 listed file\(s\), first "copied\.bin"/,
      ],
      [
        'file cut short',
        fromList(chunks.filter((c) => !(c.path === 'state/big.bin' && c.last))),
        /chunk for "state\/deep\/exact\.bin" out of manifest order \(expected "state\/big\.bin"\)/,
      ],
      [
        'last too early',
        fromList(
          chunks.map((c) => (c.path === 'state/big.bin' && c.offset === CHUNK_BYTES ? { ...c, last: true } : c)),
        ),
        /state\/big\.bin: ended at 2048 bytes, the header says 2049/,
      ],
      [
        'offset gap',
        fromList(chunks.filter((c) => !(c.path === 'state/big.bin' && c.offset === CHUNK_BYTES))),
        /offset 2048, expected 1024/,
      ],
      ['extra chunk', fromList([...chunks, chunks[0]!]), /extra chunk/],
      ['unknown path', fromList([chunks[0]!, { ...chunks[1]!, path: 'nope' }]), /unknown path "nope"/],
      [
        'size mismatch',
        fromList(chunks.map((c) => (c.path === 'empty' ? { ...c, data: Buffer.from('x') } : c))),
        /more than its 0 bytes/,
      ],
      [
        'producer throws',
        (async function* () {
          yield chunks[0]!;
          yield chunks[1]!;
          throw new Error('connection reset');
        })(),
        /connection reset/,
      ],
    ];
    for (const [name, stream, expected] of cases) {
      await assert.rejects(dst.install(staged.header, stream), expected, name);
      assert.equal(dst.newest(), null, `${name}: nothing installed`);
      assert.deepEqual(await leftovers(target), [], `${name}: temp directory removed`);
    }
  });

  it('refuses path traversal and bad headers before writing anything', async () => {
    const dst = await SnapshotStore.open(target, limits);
    const digest = Buffer.from(nobleBlake3(new Uint8Array(0)));
    const base: SnapshotHeader = {
      needed: true,
      snapshotSeq: 5,
      term: 1,
      leaderRegion: 1,
      files: [{ path: 'meta.json', size: 0, blake3: digest }],
    };
    const withPath = (path: string): SnapshotHeader => ({
      ...base,
      files: [...base.files, { path, size: 0, blake3: digest }],
    });
    const evil: Array<[SnapshotHeader, RegExp]> = [
      [withPath('../escape'), /'\.\.' segment/],
      [withPath('a/../../escape'), /'\.\.' segment/],
      [withPath('/etc/passwd'), /absolute/],
      [withPath('a//b'), /empty segment/],
      [withPath('a\\..\\b'), /backslash/],
      [withPath('manifest.json'), /reserved/],
      [withPath('meta.json'), /listed twice/],
      [
        { ...withPath('a/b'), files: [...withPath('a/b').files, { path: 'a', size: 0, blake3: digest }] },
        /both a file and a directory/,
      ],
      [{ ...base, files: [] }, /does not list meta.json/],
      [{ ...base, needed: false }, /no snapshot is needed/],
      [{ ...base, term: -1 }, /term must be a non-negative integer/],
      [{ ...base, snapshotSeq: 0 }, /snapshot_seq must be a positive integer/],
      [{ ...base, files: [{ path: 'meta.json', size: 0, blake3: Buffer.alloc(5) }] }, /32 bytes/],
    ];
    for (const [header, expected] of evil) {
      await assert.rejects(
        dst.install(header, fromList([])),
        (err: unknown) => err instanceof SnapshotError && expected.test(err.message),
        JSON.stringify(header.files.map((f) => f.path)),
      );
    }
    assert.deepEqual(await readdir(join(target, 'snapshots')), []);
    assert.deepEqual((await readdir(target)).sort(), ['snapshots'], 'nothing written beside the store');
  });

  it('refuses an artifact whose meta.json disagrees with its header or is not a SnapshotMeta', async () => {
    const dst = await SnapshotStore.open(target, limits);
    const send = (metaBytes: Buffer, snapshotSeq: number) =>
      dst.install(
        {
          needed: true,
          snapshotSeq,
          term: 1,
          leaderRegion: 1,
          files: [{ path: 'meta.json', size: metaBytes.length, blake3: Buffer.from(nobleBlake3(metaBytes)) }],
        },
        fromList([{ path: 'meta.json', offset: 0, data: metaBytes, last: true }]),
      );
    await assert.rejects(send(Buffer.from(JSON.stringify(meta(6))), 5), /meta\.json says seq 6, the header says 5/);
    await assert.rejects(send(Buffer.from('{"seq": 5}'), 5), /bad meta\.json: .*entryTerm/);
    assert.deepEqual(await readdir(join(target, 'snapshots')), []);
    await send(Buffer.from(JSON.stringify(meta(5))), 5);
    assert.equal(dst.newest()?.name, '5-2');
  });

  it('skips and reports an artifact that does not read back', async () => {
    const src = await SnapshotStore.open(source, limits);
    await stageSample(src, 10);
    const broken = await stageSample(src, 20);
    await writeFile(join(broken.dir, 'manifest.json'), '{');
    const reopened = await SnapshotStore.open(source, limits);
    assert.equal(reopened.newest()?.name, '10-2');
    assert.equal(reopened.problems.length, 1);
    assert.match(reopened.problems[0]!, /^20-2: .*not JSON/);
  });

  it('refuses reserved and unsafe paths when staging', async () => {
    const src = await SnapshotStore.open(source, limits);
    await assert.rejects(
      src.stage(meta(1), [{ path: 'meta.json', bytes: Buffer.alloc(1) }], { term: 1, leaderRegion: 1 }),
      /reserved/,
    );
    await assert.rejects(
      src.stage(meta(1), [{ path: '../x', bytes: Buffer.alloc(1) }], { term: 1, leaderRegion: 1 }),
      /'\.\.' segment/,
    );
    await assert.rejects(
      src.stage({ ...meta(1), seq: 0 }, [], { term: 1, leaderRegion: 1 }),
      /seq must be a positive integer/,
    );
    assert.deepEqual(await readdir(join(source, 'snapshots')), []);
  });

  it('aborts an install whose stream stalls, and cleans up', async () => {
    const src = await SnapshotStore.open(source, limits);
    const staged = await stageSample(src);
    const chunks = await artifactChunks(src, staged);
    const dst = await SnapshotStore.open(target, limits);
    let stallStarted = false;
    const stalled = (async function* () {
      yield chunks[0]!;
      stallStarted = true;
      await new Promise(() => undefined);
    })();
    const controller = new AbortController();
    const install = dst.install(staged.header, stalled, { signal: controller.signal });
    await waitFor(() => stallStarted, 'the stream to stall');
    controller.abort(new Error('pull timed out'));
    await assert.rejects(install, /install aborted: Error: pull timed out/);
    assert.deepEqual(await leftovers(target), []);
  });

  it('keeps the newest snapshotRetainCount artifacts, sparing one being read', async () => {
    const src = await SnapshotStore.open(source, limits);
    const first = await stageSample(src, 10);
    const reader = src.read(first);
    assert.equal((await reader.next()).done, false, 'a reader holds the oldest artifact');
    await stageSample(src, 20);
    await stageSample(src, 30);
    assert.deepEqual((await readdir(join(source, 'snapshots'))).sort(), ['10-2', '20-2', '30-2']);
    await reader.return(undefined);
    assert.deepEqual(await src.prune(), ['10-2']);
    await stageSample(src, 40);
    assert.deepEqual((await readdir(join(source, 'snapshots'))).sort(), ['30-2', '40-2']);
    assert.deepEqual(
      src.list().map((a) => a.name),
      ['40-2', '30-2'],
    );
  });

  it('drops local artifacts newer than an installed one, and leftovers on open', async () => {
    const src = await SnapshotStore.open(source, limits);
    const fromLeader = await stageSample(src, 15);
    const local = await SnapshotStore.open(target, limits);
    await local.stage(meta(30, 1), [{ path: 'x', bytes: Buffer.from('abandoned history') }], {
      term: 1,
      leaderRegion: 2,
    });
    await local.install(fromLeader.header, src.read(fromLeader));
    assert.deepEqual(
      local.list().map((a) => a.name),
      ['15-2'],
    );

    await mkdir(join(target, 'snapshots', '.install-99-abc'));
    await writeFile(join(target, 'snapshots', '.install-99-abc', 'half'), 'x');
    const reopened = await SnapshotStore.open(target, limits);
    assert.deepEqual(await readdir(join(target, 'snapshots')), ['15-2']);
    assert.equal(reopened.newest()?.meta.seq, 15);
  });

  it('with the hash worker, staging syncs and background syncs: installs byte for byte, and a flipped byte still fails and keeps the old state', async () => {
    // big.bin and copied.bin go to the worker, with a hash-ahead bound below one chunk and a sync every chunk.
    const workerLimits = storageLimits({
      snapshotChunkBytes: CHUNK_BYTES,
      snapshotHashOffThreadBytesMin: 2000,
      snapshotHashAheadBytesMax: 1000,
      snapshotSyncEveryBytes: CHUNK_BYTES,
      snapshotStageSyncEveryBytes: CHUNK_BYTES,
    });
    const src = await SnapshotStore.open(source, workerLimits);
    const dst = await SnapshotStore.open(target, workerLimits);
    const old = await stageSample(src, 10);
    // Staged a chunk at a time with an fdatasync after each: the bytes and the manifest's digest are whole.
    assert.deepEqual(await readFile(join(old.dir, 'state/big.bin')), contents.big);
    assert.equal(await src.verify(old), null);
    const installed = await dst.install(old.header, src.read(old));
    assert.deepEqual(await readFile(join(installed.dir, 'state/big.bin')), contents.big);
    assert.deepEqual(await readFile(join(installed.dir, 'copied.bin')), contents.copied);
    assert.equal(await dst.verify(installed), null);

    for (const flipped of ['state/big.bin', 'copied.bin']) {
      const next = await stageSample(src, 20);
      const path = join(next.dir, flipped);
      const bytes = await readFile(path);
      bytes[bytes.length - 3] ^= 0x01;
      await writeFile(path, bytes);
      const pattern = new RegExp(`${flipped.replace('.', '\\.')}: BLAKE3 mismatch`);
      await assert.rejects(
        dst.install(next.header, src.read(next)),
        (err: unknown) => err instanceof SnapshotError && pattern.test(err.message),
      );
      assert.deepEqual(
        (await readdir(join(target, 'snapshots'))).sort(),
        ['10-2'],
        'the old artifact is still the only one',
      );
      await removeTempDir(next.dir);
      await src.prune();
    }
  });
});
