// effectsDigest: a short hash of a step's effects over a canonical encoding, the thing replay compares.
// Canonical: the effects as the engine built them (same code, same field order), with bytes written as
// the recording can reproduce them: in `hashed` mode the store's values count by their length only (a
// replay has zeros of that length in their place, recording/codec.ts) and a ShipSegment payload by its
// frame's fields; in `full` mode every byte counts. SHA-1 from node:crypto: native, fast, and collisions
// here are accidents, not attacks (a digest only ever meets the digest of the same step's replay).
import { createHash } from 'node:crypto';
import { EntryKind } from '../engine/types.js';
import type { Effect } from '../engine/types.js';
import type { PayloadMode } from './format.js';

type Holder = Record<string, unknown>;

export function effectsDigest(effects: readonly Effect[], mode: PayloadMode): string {
  return createHash('sha1').update(canonicalEffects(effects, mode)).digest('hex').slice(0, 16);
}

/** canonicalEffects is the text the digest hashes (shown whole when a replay diverges). */
export function canonicalEffects(effects: readonly Effect[], mode: PayloadMode): string {
  return JSON.stringify(effects, function (this: Holder, name: string, serialized: unknown) {
    const v = this[name];
    if (!(v instanceof Uint8Array)) return serialized;
    if (mode === 'hashed') {
      if (name === 'payload') return frameSkeleton(v);
      if (name === 'data' && (typeof this.kind !== 'number' || this.kind === EntryKind.EventBatch))
        return { len: v.length };
    }
    return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  });
}

/**
 * frameSkeleton reads a segment frame's fields (docs/protocol.md, "Segment frame") without its values:
 * the header, each entry's seq, term, kind and length, and the data of entries that are not values. The
 * engine wrote this frame itself, so its checksum is not re-checked here (that is the receiver's job).
 */
export function frameSkeleton(bytes: Uint8Array): unknown {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u64 = (at: number): number => view.getUint32(at) * 0x1_0000_0000 + view.getUint32(at + 4);
  if (bytes.length < 33) return { len: bytes.length };
  const head = [view.getUint8(0), u64(1), u64(9), u64(17)];
  const count = view.getUint32(25);
  const entries: unknown[] = [];
  let at = 29;
  for (let i = 0; i < count && at + 21 <= bytes.length - 4; i++) {
    const kind = view.getUint8(at + 16);
    const length = view.getUint32(at + 17);
    const body = at + 21;
    entries.push(
      kind === EntryKind.EventBatch
        ? [u64(at), u64(at + 8), kind, length]
        : [u64(at), u64(at + 8), kind, Buffer.from(bytes.subarray(body, body + length)).toString('base64')],
    );
    at = body + length;
  }
  return { head, entries, len: bytes.length };
}
