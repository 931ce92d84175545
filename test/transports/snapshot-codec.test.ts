import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as pb from '../../proto/gen/svc/replication/v1/replication.js';
import { decodeSnapshotChunk, encodeSnapshotChunk, encodeSnapshotFileChunk } from '../../transports/grpc/methods.js';

const fileChunk = fc.record({
  path: fc.string({ unit: 'binary', maxLength: 40 }),
  offset: fc.oneof(
    fc.constant(0),
    fc.nat(),
    fc.maxSafeNat(),
    fc.constantFrom(127, 128, 2 ** 32 - 1, 2 ** 32, 2 ** 35 + 3),
  ),
  data: fc.uint8Array({ maxLength: 600 }),
  last: fc.boolean(),
});

describe('snapshot chunk codec', () => {
  it('writes file chunks byte for byte as ts-proto does, and they decode back', () => {
    fc.assert(
      fc.property(fileChunk, (file) => {
        const ours = encodeSnapshotFileChunk(file);
        const reference = pb.SnapshotChunk.encode({ chunk: { $case: 'file', value: file } }).finish();
        assert.deepEqual(new Uint8Array(ours), reference);
        const back = decodeSnapshotChunk(ours);
        assert.equal(back.chunk?.$case, 'file');
        if (back.chunk?.$case !== 'file') return;
        assert.equal(back.chunk.value.path, file.path);
        assert.equal(back.chunk.value.offset, file.offset);
        assert.equal(back.chunk.value.last, file.last);
        assert.deepEqual(new Uint8Array(back.chunk.value.data), file.data);
      }),
      { numRuns: 500 },
    );
  });

  it('a 1 MiB chunk encodes to its data plus a few header bytes', () => {
    const data = Buffer.alloc(1024 * 1024, 7);
    const bytes = encodeSnapshotChunk({
      chunk: { $case: 'file', value: { path: 'state/kv.bin', offset: 5 * 1024 * 1024, data, last: false } },
    });
    assert.ok(bytes.length > data.length && bytes.length < data.length + 32, `${bytes.length} bytes`);
    assert.deepEqual(
      new Uint8Array(bytes),
      pb.SnapshotChunk.encode({
        chunk: { $case: 'file', value: { path: 'state/kv.bin', offset: 5 * 1024 * 1024, data, last: false } },
      }).finish(),
    );
  });

  it('refuses an offset that is not a non-negative safe integer', () => {
    for (const offset of [-1, 1.5, 2 ** 53]) {
      assert.throws(
        () => encodeSnapshotFileChunk({ path: 'a', offset, data: new Uint8Array(1), last: false }),
        RangeError,
      );
    }
  });
});
