// Layered store snapshots (store/snapshot-layers.ts, store/snapshot-files.ts) staged into a real SnapshotStore on
// disk: a staging over a basis writes only the keys changed since (the layers below hard-linked, their digests
// kept), every staged stack reads back as exactly the state at its seq, the limits make a staging whole again,
// and a stack that does not chain or hold together is refused.
import assert from 'node:assert/strict';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { EntryKind } from '../../engine/types.js';
import { singleMemberSnapshotMeta as metaAt } from './snapshot-fixtures.js';
import { encodeCommand, type StoreCommand } from '../../store/command.js';
import { storeLimits, type StoreLimits } from '../../store/limits.js';
import { loadStoreState, StoreSnapshots, type SnapshotArtifactAt } from '../../store/snapshot-files.js';
import { deltaFileName } from '../../store/snapshot-layers.js';
import { decodeStoreSnapshot, StoreStateMachine, type StoreState } from '../../store/state-machine.js';
import { storageLimits } from '../../transports/storage/limits.js';
import { SnapshotStore, type Artifact } from '../../transports/storage/snapshots.js';
import { makeTempDir, removeTempDir } from '../transports/storage/helpers.js';

/** Node is one state machine with its snapshots and an artifact store, staged the way SnapshotTransfer does. */
class Node {
  readonly sm = new StoreStateMachine();
  readonly snapshots: StoreSnapshots;
  private requestNumber = 0;

  constructor(
    readonly store: SnapshotStore,
    limits: Partial<StoreLimits> = {},
  ) {
    // Two documents a chunk, so writes made at the encoding's pauses land between its chunks.
    this.snapshots = new StoreSnapshots(this.sm, storeLimits(limits), 2);
  }

  apply(command: { op: 'put'; key: string; value: { n: number } } | { op: 'delete'; key: string }): void {
    this.requestNumber += 1;
    const full = { ...command, requestId: `r${this.requestNumber}` } as StoreCommand;
    this.sm.apply({ seq: this.sm.appliedSeq + 1, term: 1, kind: EntryKind.EventBatch, data: encodeCommand(full) });
  }

  put(key: string, n: number): void {
    this.apply({ op: 'put', key, value: { n } });
  }

  /** stage captures now and stages; `during` runs at each pause of the encoding (writes that must not leak in). */
  async stage(during: () => void = () => undefined): Promise<{ artifact: Artifact; expected: StoreState }> {
    const expected = decodeStoreSnapshot(this.sm.encodeSnapshot());
    assert.ok(expected.ok);
    const seq = this.sm.appliedSeq;
    const capture = this.snapshots.capture();
    const files = await capture.encode(async () => during());
    const artifact = await this.store.stage(metaAt(seq), files, { term: 1, leaderRegion: 1 });
    capture.staged(artifact);
    return { artifact, expected: expected.state };
  }
}

function fileNames(artifact: Artifact): string[] {
  return artifact.manifest.files.map((f) => f.path).filter((p) => p !== 'meta.json');
}

async function deltaRows(artifact: Artifact, seq: number): Promise<{ entries: unknown[]; deleted: unknown[] }> {
  return JSON.parse(await readFile(join(artifact.dir, deltaFileName(seq)), 'utf8')) as {
    entries: unknown[];
    deleted: unknown[];
  };
}

describe('store: layered snapshots', function () {
  this.timeout(120_000);
  let dir: string;
  let store: SnapshotStore;
  beforeEach(async () => {
    dir = await makeTempDir('layers');
    store = await SnapshotStore.open(dir, storageLimits({ snapshotRetainCount: 2 }));
  });
  afterEach(async () => {
    await removeTempDir(dir);
  });

  it('stages only what changed over its last snapshot: store.json linked with its digest, the delta holding the changed keys', async function () {
    const node = new Node(store);
    for (let i = 0; i < 50; i += 1) node.put(`k${String(i).padStart(2, '0')}`, i);
    const first = await node.stage();
    assert.deepEqual(fileNames(first.artifact), ['store.json']);
    node.put('k07', 700);
    node.put('new', 1);
    node.apply({ op: 'delete', key: 'k11' });
    node.apply({ op: 'delete', key: 'absent' });
    // Written while encoding (chunks of two: k11 is read after the first pause): not in this snapshot.
    const second = await node.stage(() => node.put('k11', 1100));
    assert.deepEqual(fileNames(second.artifact), ['store.json', deltaFileName(second.artifact.meta.seq)]);
    const rows = await deltaRows(second.artifact, second.artifact.meta.seq);
    assert.deepEqual(
      rows.entries.map((row) => (row as unknown[])[0]),
      ['k07', 'new'],
    );
    assert.deepEqual(rows.deleted, ['k11']);
    const [linked, original] = await Promise.all([
      stat(join(second.artifact.dir, 'store.json')),
      stat(join(first.artifact.dir, 'store.json')),
    ]);
    assert.equal(linked.ino, original.ino, 'store.json is the first artifact’s file, hard-linked');
    assert.deepEqual(second.artifact.manifest.files[1], first.artifact.manifest.files[1]);
    assert.deepEqual(await loadStoreState(second.artifact), second.expected);
    assert.equal(await store.verify(second.artifact), null);
  });

  it('every staged stack, through deltas, failures, restores and writes while encoding, reads back as the state at its seq', async function () {
    const op = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({ kind: fc.constant('put' as const), key: fc.integer({ min: 0, max: 9 }), n: fc.nat(99) }),
      },
      {
        weight: 2,
        arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 9 }) }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('stage' as const),
          during: fc.array(fc.record({ key: fc.integer({ min: 0, max: 9 }), n: fc.option(fc.nat(99)) }), {
            maxLength: 4,
          }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('failedStage' as const) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('restoreNewest' as const) }) },
    );
    let deltasSeen = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 10, maxLength: 40 }),
        fc.integer({ min: 2, max: 5 }),
        fc.constantFrom(200, 1_000, 100_000),
        async (ops, layerMax, rowsPercentMax) => {
          const runDir = await makeTempDir('layers-prop');
          try {
            const runStore = await SnapshotStore.open(runDir, storageLimits({ snapshotRetainCount: 2 }));
            const node = new Node(runStore, {
              snapshotLayerCountMax: layerMax,
              snapshotLayerRowsPercentMax: rowsPercentMax,
            });
            let lastSeq = 0;
            for (const step of ops) {
              if (step.kind === 'put') node.put(`k${step.key}`, step.n);
              else if (step.kind === 'delete') node.apply({ op: 'delete', key: `k${step.key}` });
              else if (step.kind === 'failedStage')
                node.snapshots.capture(); // captured, never staged
              else if (step.kind === 'restoreNewest') {
                const newest = runStore.newest();
                // As a reseed or an install would: the state goes back to the artifact's, later or earlier.
                if (newest) (await node.snapshots.load(newest))();
              } else if (node.sm.appliedSeq > lastSeq) {
                let next = 0;
                const { artifact, expected } = await node.stage(() => {
                  const write = step.during[next++];
                  if (write === undefined) return;
                  if (write.n === null) node.apply({ op: 'delete', key: `k${write.key}` });
                  else node.put(`k${write.key}`, 1000 + write.n);
                });
                lastSeq = artifact.meta.seq;
                if (fileNames(artifact).length > 1) deltasSeen += 1;
                assert.ok(fileNames(artifact).length <= layerMax);
                assert.deepEqual(await loadStoreState(artifact), expected);
                const reader = new StoreStateMachine();
                (await new StoreSnapshots(reader).load(artifact))();
                assert.deepEqual(decodeStoreSnapshot(reader.encodeSnapshot()), { ok: true, state: expected });
              }
            }
          } finally {
            await removeTempDir(runDir);
          }
        },
      ),
      { numRuns: 100 },
    );
    console.log('deltasSeen', deltasSeen);
    assert.ok(deltasSeen >= 30, `stagings that were deltas: ${deltasSeen}`);
  });

  it('writes the whole state again past snapshotLayerCountMax layers and past snapshotLayerRowsPercentMax rows', async function () {
    const counted = new Node(store, { snapshotLayerCountMax: 3 });
    const layerCounts: number[] = [];
    for (let round = 0; round < 5; round += 1) {
      counted.put(`new${round}`, round);
      layerCounts.push(fileNames((await counted.stage()).artifact).length);
    }
    assert.deepEqual(layerCounts, [1, 2, 3, 1, 2]);

    const rowsDir = await makeTempDir('layers-rows');
    try {
      // 10 documents, rows at most 150% of them: a delta rewriting 4 keys fits (14 rows), a second one does not (18).
      const rewritten = new Node(await SnapshotStore.open(rowsDir), { snapshotLayerRowsPercentMax: 150 });
      for (let i = 0; i < 10; i += 1) rewritten.put(`k${i}`, i);
      const counts: number[] = [fileNames((await rewritten.stage()).artifact).length];
      for (let round = 0; round < 2; round += 1) {
        for (let i = 0; i < 4; i += 1) rewritten.put(`k${i}`, 100 * round + i);
        counts.push(fileNames((await rewritten.stage()).artifact).length);
      }
      assert.deepEqual(counts, [1, 2, 1]);
    } finally {
      await removeTempDir(rowsDir);
    }
  });

  it('after a staging that never landed the next one is whole; after a load, a delta over the loaded artifact', async function () {
    const leader = new Node(store);
    for (let i = 0; i < 10; i += 1) leader.put(`k${i}`, i);
    await leader.stage();
    leader.put('k1', 11);
    leader.snapshots.capture(); // its write failed: the keys it took are in no delta
    leader.put('k2', 12);
    const after = await leader.stage();
    assert.deepEqual(fileNames(after.artifact), ['store.json']);
    assert.deepEqual(await loadStoreState(after.artifact), after.expected);

    // A follower installs the leader's artifact (as FetchSnapshot would), then stages a delta over it.
    leader.put('k3', 13);
    const layered = await leader.stage();
    assert.equal(fileNames(layered.artifact).length, 2);
    const followerDir = await makeTempDir('layers-follower');
    try {
      const followerStore = await SnapshotStore.open(followerDir);
      const installed = await followerStore.install(layered.artifact.header, store.read(layered.artifact));
      const follower = new Node(followerStore);
      (await follower.snapshots.load(installed))();
      assert.deepEqual(decodeStoreSnapshot(follower.sm.encodeSnapshot()), { ok: true, state: layered.expected });
      follower.apply({ op: 'delete', key: 'k4' });
      const staged = await follower.stage();
      assert.deepEqual(fileNames(staged.artifact), [
        'store.json',
        deltaFileName(layered.artifact.meta.seq),
        deltaFileName(staged.artifact.meta.seq),
      ]);
      assert.deepEqual(await loadStoreState(staged.artifact), staged.expected);
    } finally {
      await removeTempDir(followerDir);
    }
  });

  describe('a stack that does not hold together is refused', function () {
    const base = '{"v":1,"appliedSeq":10,"entries":[["a",3,{"n":1}],["b",4,{"n":2}]],"dedup":[]}';
    const delta = (baseSeq: number, seq: number, entries: string, deleted = '') =>
      `{"v":1,"kind":"delta","baseSeq":${baseSeq},"appliedSeq":${seq},"entries":[${entries}],"deleted":[${deleted}],"dedup":[]}`;

    async function artifactOf(name: string, files: Record<string, string>, seq: number): Promise<SnapshotArtifactAt> {
      const at = join(dir, name);
      await mkdir(at);
      for (const [path, text] of Object.entries(files)) await writeFile(join(at, path), text);
      return { dir: at, name, meta: { seq }, manifest: { files: Object.keys(files).map((path) => ({ path })) } };
    }

    it('reads a good stack (the control)', async function () {
      const good = await artifactOf(
        'good',
        { 'store.json': base, [deltaFileName(12)]: delta(10, 12, '["c",11,{"n":3}]', '"a"') },
        12,
      );
      const state = await loadStoreState(good);
      assert.deepEqual(state.sortedKeys, ['b', 'c']);
      assert.equal(state.appliedSeq, 12);
    });

    const cases: Array<[string, Record<string, string>, number, RegExp]> = [
      ['a gap between layers', { 'store.json': base, [deltaFileName(12)]: delta(11, 12, '') }, 12, /starts at seq 11/],
      [
        'a row written outside its layer',
        { 'store.json': base, [deltaFileName(12)]: delta(10, 12, '["c",9,{}]') },
        12,
        /outside the layer/,
      ],
      [
        'a key put and deleted in one layer',
        { 'store.json': base, [deltaFileName(12)]: delta(10, 12, '["c",11,{}]', '"c"') },
        12,
        /twice/,
      ],
      [
        'a delta whose name and seq disagree',
        { 'store.json': base, [deltaFileName(13)]: delta(10, 12, '') },
        13,
        /holds the layer at seq 12/,
      ],
      ['a file that is not a layer', { 'store.json': base, 'other.bin': 'x' }, 10, /not a store snapshot layer/],
      ['no store.json', { [deltaFileName(12)]: delta(10, 12, '') }, 12, /holds no store\.json/],
      [
        'a top below the meta’s seq',
        { 'store.json': base, [deltaFileName(12)]: delta(10, 12, '') },
        14,
        /at seq 12, its meta says 14/,
      ],
    ];
    for (const [title, files, seq, reason] of cases) {
      it(title, async function () {
        const bad = await artifactOf(title.replace(/\W+/g, '-'), files, seq);
        await assert.rejects(loadStoreState(bad), reason);
        await assert.rejects(new StoreSnapshots(new StoreStateMachine()).load(bad), reason);
      });
    }
  });

  it('a reused file whose artifact is gone fails the staging, naming it', async function () {
    await assert.rejects(
      store.stage(metaAt(5), [{ path: 'store.json', reuseFrom: '4-1' }], { term: 1, leaderRegion: 1 }),
      /the artifact it reuses, 4-1, is gone/,
    );
  });
});
