import assert from 'node:assert/strict';
import { blake3 } from '@noble/hashes/blake3.js';
import { BLAKE3_MEMO_BYTES_MAX, BLAKE3_MEMO_ENTRIES_MAX, blake3Of } from '../../sim/blake3-memo.js';

const bytesOf = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('sim/blake3-memo', () => {
  it('gives BLAKE3 of the bytes, remembered or not, for equal contents in different arrays', () => {
    const text = '{"k1":"v1","k2":"v2"}';
    const first = blake3Of(bytesOf(text));
    assert.deepEqual(first, blake3(bytesOf(text)));
    assert.deepEqual(blake3Of(bytesOf(text)), first);
    // A view into a larger buffer is hashed over its own bytes only.
    const padded = bytesOf(`xx${text}yy`);
    assert.deepEqual(blake3Of(padded.subarray(2, 2 + text.length)), first);
  });

  it('is not fooled by a caller changing its array after hashing, nor by one flipped byte', () => {
    const bytes = bytesOf('state of the machine at seq 9');
    const digest = blake3Of(bytes);
    bytes[3] ^= 1;
    assert.deepEqual(blake3Of(bytes), blake3(bytes));
    assert.notDeepEqual(blake3Of(bytes), digest);
    // The digest handed out is the caller's own: changing it leaves the remembered one as it was.
    const handed = blake3Of(bytes);
    handed.fill(0);
    assert.deepEqual(blake3Of(bytes), blake3(bytes));
  });

  it('stays right past its bounds (more contents than it keeps, a file larger than it keeps)', () => {
    for (let i = 0; i < BLAKE3_MEMO_ENTRIES_MAX * 2; i++) {
      const bytes = bytesOf(`file ${i}`);
      assert.deepEqual(blake3Of(bytes), blake3(bytes), `content ${i}`);
    }
    for (let i = 0; i < BLAKE3_MEMO_ENTRIES_MAX * 2; i++)
      assert.deepEqual(blake3Of(bytesOf(`file ${i}`)), blake3(bytesOf(`file ${i}`)));
    const large = new Uint8Array(BLAKE3_MEMO_BYTES_MAX + 1).fill(7);
    assert.deepEqual(blake3Of(large), blake3(large));
  });
});
