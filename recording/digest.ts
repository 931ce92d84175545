// effectsDigest: a short hash of a step's effects over a canonical encoding, the thing replay compares.
// Canonical: the effects as the engine built them (same code, same field order), with bytes counted as
// the recording can reproduce them: in `hashed` mode the store's values count by their length only (a
// replay has zeros of that length in their place, recording/codec.ts) and a ShipSegment payload by its
// frame's fields; in `full` mode every byte counts.
//
// Format 2 hashes that canonical form as it walks the effects (recording/canonical-hash.ts): no text is
// built, which is what made format 1's digest (SHA-1 of canonicalEffects' JSON) the largest part of the
// recorder's cost. Format 4 hashes the same form in fewer words (recording/step-digest.ts). canonicalEffects
// stays: it is the same canonical form as text, shown when a replay diverges, and format 1's digest for
// reading older recordings.
import { createHash } from 'node:crypto';
import { EntryKind } from '../engine/types.js';
import type { Effect } from '../engine/types.js';
import { CanonicalHash, hashValue, type BytesRule } from './canonical-hash.js';
import type { PayloadMode } from './format.js';
import { stepDigest, stepDigestV5 } from './step-digest.js';

type Holder = Record<string, unknown>;

/** effectsDigest is the step digest of formats 2 and 3: 16 hex digits. */
export function effectsDigest(effects: readonly Effect[], mode: PayloadMode): string {
  const hash = new CanonicalHash();
  hashValue(hash, effects, mode === 'hashed' ? hashedBytes : wholeBytes);
  return hash.hex();
}

/**
 * effectsDigestFor is the digest a recording of `version` holds (1: SHA-1 of canonicalEffects; 2 and 3:
 * effectsDigest; 4: recording/step-digest.ts stepDigest; 5 and 6: its stepDigestV5, what the recorder writes now).
 */
export function effectsDigestFor(version: number, effects: readonly Effect[], mode: PayloadMode): string {
  if (version === 1) return effectsDigestV1(effects, mode);
  if (version <= 3) return effectsDigest(effects, mode);
  if (version === 4) return stepDigest(effects, mode);
  return stepDigestV5(effects, mode);
}

export function effectsDigestV1(effects: readonly Effect[], mode: PayloadMode): string {
  return createHash('sha1').update(canonicalEffects(effects, mode)).digest('hex').slice(0, 16);
}

const wholeBytes: BytesRule = (hash, bytes) => hash.bytes(bytes);

/** hashedBytes: canonicalEffects' rules for `hashed` mode, fed to the hash without building the skeleton. */
const hashedBytes: BytesRule = (hash, bytes, name, holder) => {
  if (name === 'payload') hashFrameSkeleton(hash, bytes);
  else if (name === 'data' && isValueHolder(holder as Holder)) hash.number(bytes.length);
  else hash.bytes(bytes);
};

function isValueHolder(holder: Holder): boolean {
  return typeof holder.kind !== 'number' || holder.kind === EntryKind.EventBatch;
}

/** hashFrameSkeleton feeds what frameSkeleton returns, field for field, straight from the frame's bytes. */
function hashFrameSkeleton(hash: CanonicalHash, bytes: Uint8Array): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const u64 = (at: number): number => view.getUint32(at) * 0x1_0000_0000 + view.getUint32(at + 4);
  hash.objectStart();
  if (bytes.length >= 33) {
    hash.key('head');
    hash.arrayStart(4);
    hash.number(view.getUint8(0));
    hash.number(u64(1));
    hash.number(u64(9));
    hash.number(u64(17));
    const count = view.getUint32(25);
    hash.key('entries');
    let at = 29;
    for (let i = 0; i < count && at + 21 <= bytes.length - 4; i++) {
      const kind = view.getUint8(at + 16);
      const length = view.getUint32(at + 17);
      const body = at + 21;
      hash.arrayStart(4);
      hash.number(u64(at));
      hash.number(u64(at + 8));
      hash.number(kind);
      if (kind === EntryKind.EventBatch) hash.number(length);
      else hash.bytes(bytes, body, Math.min(body + length, bytes.length));
      at = body + length;
    }
    // The entry count goes last (the walk does not know it up front): it still separates frames.
    hash.word(count);
  }
  hash.key('len');
  hash.number(bytes.length);
  hash.objectEnd();
}

/** canonicalEffects is the canonical form as text (format 1 hashed it; a divergence shows it whole). */
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
