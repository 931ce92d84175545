import assert from 'node:assert/strict';
import { crc32c } from '../../engine/crc32c.js';

/** bytewise: CRC-32C one table lookup per byte, the textbook form the sliced one must equal. */
function bytewise(bytes: Uint8Array, start: number, end: number): number {
  let crc = 0xffffffff;
  for (let i = start; i < end; i++) {
    crc ^= bytes[i]!;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? 0x82f63b78 ^ (crc >>> 1) : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

describe('engine/crc32c', () => {
  it('gives the standard check value and RFC 3720 vectors', () => {
    assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
    assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
    assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
    assert.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e);
    assert.equal(crc32c(new Uint8Array(0)), 0);
  });

  it('equals the bytewise checksum for every length and offset up to 40 bytes (8 at a time, then the tail)', () => {
    const bytes = Uint8Array.from({ length: 48 }, (_, i) => (i * 167 + 13) & 0xff);
    for (let start = 0; start < 8; start++)
      for (let end = start; end <= 48; end++)
        assert.equal(crc32c(bytes, start, end), bytewise(bytes, start, end), `[${start}, ${end})`);
  });
});
