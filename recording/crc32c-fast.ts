// CRC-32C (Castagnoli) eight bytes at a step ("slicing-by-8"): the same checksum as engine/crc32c.ts, which
// takes a byte per step and is the engine's (left as it is: engine/ is not changed for the recorder). The
// recorder checks every shipped segment's checksum (recording/frame-redact.ts), and byte by byte that was
// most of a follower's recording work. No npm package: the maintained fast ones are native addons, a
// build dependency for a few lines of table lookups.
const TABLES = buildTables();

function buildTables(): Uint32Array[] {
  const t0 = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t0[n] = c >>> 0;
  }
  const tables = [t0];
  for (let k = 1; k < 8; k++) {
    const prev = tables[k - 1]!;
    const next = new Uint32Array(256);
    for (let n = 0; n < 256; n++) next[n] = (prev[n]! >>> 8) ^ t0[prev[n]! & 0xff]!;
    tables.push(next);
  }
  return tables;
}

const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES as [
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
  Uint32Array,
];

/** crc32cFast of bytes[start, end): equal to engine/crc32c.ts crc32c. */
export function crc32cFast(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let crc = 0xffffffff;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    crc ^= bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    const hi = bytes[i + 4]! | (bytes[i + 5]! << 8) | (bytes[i + 6]! << 16) | (bytes[i + 7]! << 24);
    crc =
      T7[crc & 0xff]! ^
      T6[(crc >>> 8) & 0xff]! ^
      T5[(crc >>> 16) & 0xff]! ^
      T4[crc >>> 24]! ^
      T3[hi & 0xff]! ^
      T2[(hi >>> 8) & 0xff]! ^
      T1[(hi >>> 16) & 0xff]! ^
      T0[hi >>> 24]!;
  }
  for (; i < end; i++) crc = T0[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
