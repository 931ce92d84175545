// BLAKE3 of a snapshot file, remembered by content. A run hashes the same bytes again and again: every member
// stages a snapshot of the same state at the same seq, and every install verifies the bytes a leader staged
// (seeds 1..5: 2,940 hashes of 814 distinct contents). Comparing bytes is native and far cheaper than hashing
// them in JavaScript (@noble/hashes, whose rounds also allocate), and a digest depends on nothing but the bytes,
// so the memo changes no result.
import { blake3 } from '@noble/hashes/blake3.js';

/** BLAKE3_MEMO_ENTRIES_MAX bounds the remembered contents (oldest forgotten first); at most 2 MiB held. */
export const BLAKE3_MEMO_ENTRIES_MAX = 32;
/** BLAKE3_MEMO_BYTES_MAX: a larger file is hashed every time and not remembered. */
export const BLAKE3_MEMO_BYTES_MAX = 64 * 1024;

interface Remembered {
  /** bytes: a copy, so no caller's later write to its array can make the memo answer for other bytes. */
  bytes: Buffer;
  digest: Uint8Array;
}

const remembered: Remembered[] = [];

/** blake3Of returns BLAKE3-256 of `bytes` (a fresh array the caller may keep or change). */
export function blake3Of(bytes: Uint8Array): Uint8Array {
  if (bytes.length > BLAKE3_MEMO_BYTES_MAX) return blake3(bytes);
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  // Newest first: a verification usually follows the staging it checks.
  for (let i = remembered.length - 1; i >= 0; i--) {
    const entry = remembered[i]!;
    if (entry.bytes.length === view.length && entry.bytes.equals(view)) return entry.digest.slice();
  }
  const digest = blake3(bytes);
  if (remembered.length >= BLAKE3_MEMO_ENTRIES_MAX) remembered.shift();
  remembered.push({ bytes: Buffer.from(view), digest: digest.slice() });
  return digest;
}
