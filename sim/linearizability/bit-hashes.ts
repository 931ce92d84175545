// The hashes of linearized-operation sets (linearized-set.ts keeps them, memo-table.ts keys its table by them).
/** mix32: murmur3's finaliser, a fixed integer bijection (no randomness: verdicts must be reproducible). */
export function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/**
 * bitHashes(n)[i]: the hash contribution of operation i being linearized. A set's hash is the XOR
 * of its members' contributions, so adding or removing one updates it in O(1).
 */
export function bitHashes(n: number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = mix32(i + 1);
  return out;
}
