// CRC-32C (Castagnoli), table-driven. The segment frame's checksum: cheap, and
// good at the burst errors a torn or garbled payload shows.
// Slicing-by-8 (eight 256-entry tables, eight bytes per step): the same checksum as one table a byte at a time,
// about four times faster; every ship frames its entries and every receipt checks them, so it is on the engine's
// hot path (the simulator's profile). Written here rather than taken from npm: the engine imports no package.
const TABLES = buildTables();

function buildTables(): Uint32Array {
  const tables = new Uint32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    tables[n] = c >>> 0;
  }
  // tables[t * 256 + n]: the CRC of byte n followed by t zero bytes.
  for (let n = 0; n < 256; n++) {
    let c = tables[n]!;
    for (let t = 1; t < 8; t++) {
      c = tables[c & 0xff]! ^ (c >>> 8);
      tables[t * 256 + n] = c >>> 0;
    }
  }
  return tables;
}

/** crc32c of bytes[start, end). */
export function crc32c(bytes: Uint8Array, start = 0, end = bytes.length): number {
  const t = TABLES;
  let crc = 0xffffffff;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const low = crc ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    crc =
      t[7 * 256 + (low & 0xff)]! ^
      t[6 * 256 + ((low >>> 8) & 0xff)]! ^
      t[5 * 256 + ((low >>> 16) & 0xff)]! ^
      t[4 * 256 + (low >>> 24)]! ^
      t[3 * 256 + bytes[i + 4]!]! ^
      t[2 * 256 + bytes[i + 5]!]! ^
      t[256 + bytes[i + 6]!]! ^
      t[bytes[i + 7]!]!;
  }
  for (; i < end; i++) crc = t[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
