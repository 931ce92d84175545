import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { blake3 as nobleBlake3 } from '@noble/hashes/blake3.js';
import fc from 'fast-check';
import {
  blake3Bytes,
  blake3File,
  createBlake3Hasher,
  OffThreadBlake3,
  toHex,
} from '../../../transports/storage/blake3.js';
import { makeTempDir, removeTempDir } from './helpers.js';

// BLAKE3 works in 64-byte blocks and 1024-byte chunks: sizes around both, plus 0 and 1 MiB + 1.
const EDGE_SIZES = [
  0,
  1,
  63,
  64,
  65,
  1023,
  1024,
  1025,
  2047,
  2048,
  2049,
  3072,
  4096,
  8193,
  65535,
  65536,
  65537,
  1024 * 1024,
  1024 * 1024 + 1,
];

describe('storage/blake3 (hash-wasm against @noble/hashes)', () => {
  it('gives identical digests at block and chunk boundaries', async () => {
    for (const size of EDGE_SIZES) {
      const bytes = randomBytes(size);
      assert.equal(toHex(await blake3Bytes(bytes)), toHex(nobleBlake3(bytes)), `size ${size}`);
    }
  });

  it('gives identical digests on random inputs fed in random pieces', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 0, maxLength: 20_000 }),
        fc.array(fc.nat({ max: 5000 }), { maxLength: 8 }),
        async (bytes, cuts) => {
          const hasher = await createBlake3Hasher();
          let at = 0;
          for (const cut of cuts) {
            const end = Math.min(bytes.length, at + cut);
            hasher.update(bytes.subarray(at, end));
            at = end;
          }
          hasher.update(bytes.subarray(at));
          assert.equal(toHex(hasher.digest()), toHex(nobleBlake3(bytes)));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('streams a file to the same digest', async () => {
    const dir = await makeTempDir('b3');
    try {
      const bytes = randomBytes(1024 * 1024 + 1);
      await writeFile(join(dir, 'f'), bytes);
      const { digest, size } = await blake3File(join(dir, 'f'), 64 * 1024);
      assert.equal(size, bytes.length);
      assert.equal(toHex(digest), toHex(nobleBlake3(bytes)));
    } finally {
      await removeTempDir(dir);
    }
  });

  it('OffThreadBlake3 (the worker) agrees with the oracle, file after file, with waits on what is in flight', async () => {
    const worker = OffThreadBlake3.start();
    try {
      for (const size of [0, 1, 1025, 70_000]) {
        const bytes = randomBytes(size);
        // Bounded: the input is cut into at most ceil(size / 4096) + 1 pieces.
        for (let at = 0; at < size; at += 4096) {
          worker.update(bytes.subarray(at, Math.min(size, at + 4096)));
          await worker.waitInFlightAtMost(8192);
        }
        assert.equal(toHex(await worker.digest()), toHex(nobleBlake3(bytes)), `size ${size}`);
      }
    } finally {
      await worker.close();
    }
    assert.throws(() => worker.update(new Uint8Array(1)), /closed/);
    await assert.rejects(worker.digest(), /closed/);
  });
});
