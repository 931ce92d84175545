import assert from 'node:assert/strict';
import { blake3 } from '@noble/hashes/blake3.js';
import { ArtifactStore, captureArtifact, readMeta, readStateText, verifyFiles } from '../../sim/artifacts.js';
import { KvStateMachine, encodeCommand, decodeCommand } from '../../sim/state-machine.js';
import type { SnapshotMeta } from '../../engine/types.js';

const roster = { membershipVersion: 1, nextMemberId: 2, members: [] };

function machineAt(seq: number): KvStateMachine {
  const machine = new KvStateMachine();
  for (let s = 1; s <= seq; s++) {
    assert.equal(
      machine.apply({
        seq: s,
        term: 1,
        kind: 1,
        data: encodeCommand({ op: 'put', key: `k${s % 3}`, value: `v${s}`, writeId: s }),
      }),
      null,
    );
  }
  return machine;
}

describe('sim/artifacts and state machine', () => {
  it('captures files with their BLAKE3 once, and verifies them', () => {
    const meta: SnapshotMeta = { seq: 5, entryTerm: 1, roster };
    const artifact = captureArtifact(meta, machineAt(5).stateJson(), 2, 1);
    assert.deepEqual(
      artifact.header.files.map((f) => f.path),
      ['meta.json', 'state.json'],
    );
    for (const f of artifact.header.files)
      assert.deepEqual(new Uint8Array(f.blake3), blake3(artifact.files.get(f.path)!));
    assert.equal(verifyFiles(artifact.header, artifact.files), null);
    assert.deepEqual(readMeta(artifact.files), meta);
  });

  it('rejects a corrupted, missing or resized file', () => {
    const artifact = captureArtifact({ seq: 3, entryTerm: 1, roster }, machineAt(3).stateJson(), 1, 1);
    const corrupt = new Map(artifact.files);
    const bytes = Uint8Array.from(corrupt.get('state.json')!);
    bytes[2] ^= 1;
    corrupt.set('state.json', bytes);
    assert.match(verifyFiles(artifact.header, corrupt) ?? '', /BLAKE3/);
    const missing = new Map(artifact.files);
    missing.delete('meta.json');
    assert.match(verifyFiles(artifact.header, missing) ?? '', /lists 2 files/);
    const resized = new Map(artifact.files);
    resized.set('meta.json', new Uint8Array(1));
    assert.match(verifyFiles(artifact.header, resized) ?? '', /bytes/);
  });

  it('keeps only the newest artifacts and finds one by its header', () => {
    const store = new ArtifactStore(2);
    for (const seq of [3, 9, 6])
      store.add(captureArtifact({ seq, entryTerm: 1, roster }, machineAt(seq).stateJson(), 1, 1));
    assert.equal(store.count, 2);
    assert.equal(store.newest()!.meta.seq, 9);
    const six = store.newest()!;
    assert.equal(store.forHeader(six.header), six);
    assert.equal(store.forHeader({ ...six.header, snapshotSeq: 3 }), undefined);
  });

  it('an installed artifact deletes the newer ones, whose state it replaced (as SnapshotStore.install does)', () => {
    const store = new ArtifactStore(4);
    const at = (seq: number, entryTerm = 1) =>
      captureArtifact({ seq, entryTerm, roster }, machineAt(seq).stateJson(), entryTerm, 1);
    store.add(at(2));
    store.add(at(4, 2));
    store.add(at(5));
    store.install(at(4, 1));
    assert.deepEqual(
      store.list().map((a) => `${a.meta.seq}/${a.meta.entryTerm}`),
      ['2/1', '4/1'],
    );
    assert.equal(store.newest()!.meta.seq, 4, 'a restart loads the installed one');
  });

  it('applies in order only, and round-trips its state through state.json', () => {
    const machine = machineAt(4);
    assert.match(machine.apply({ seq: 6, term: 1, kind: 2, data: new Uint8Array() }) ?? '', /does not follow/);
    assert.match(machine.apply({ seq: 5, term: 1, kind: 1, data: new Uint8Array([1]) }) ?? '', /not a put/);
    const copy = new KvStateMachine();
    assert.equal(copy.load(machine.stateJson()), null);
    assert.equal(copy.stateJson(), machine.stateJson());
    assert.equal(copy.appliedSeq, 4);
    assert.match(copy.load('{"appliedSeq":1,"kv":[[1,2]]}') ?? '', /bad kv pair/);
    assert.match(copy.load('nope') ?? '', /not JSON/);
    const artifact = captureArtifact({ seq: 4, entryTerm: 1, roster }, machine.stateJson(), 1, 1);
    assert.equal(readStateText(artifact.files), machine.stateJson());
  });

  it('decodes only well-formed put commands', () => {
    assert.deepEqual(decodeCommand(encodeCommand({ op: 'put', key: 'a', value: 'b', writeId: 3 })), {
      op: 'put',
      key: 'a',
      value: 'b',
      writeId: 3,
    });
    assert.equal(decodeCommand(new TextEncoder().encode('{"op":"del"}')), null);
    assert.equal(decodeCommand(new Uint8Array([0xff])), null);
  });
});
