// CanonicalLog is the one committed history every node's applies must agree
// with (state-machine safety), plus a reference state machine replayed along it
// whose content digest is kept per seq, so a snapshot can be checked in O(keys).
import type { Entry } from '../../engine/types.js';
import { EntryKind } from '../../engine/types.js';
import { commandTakesEffect, decodeCommand, opaqueCommand } from '../state-machine.js';
import { sameBytes } from '../artifacts.js';
import { violate } from '../violation.js';

const DIGEST_MODULUS = 2 ** 52;

export class CanonicalLog {
  /** entries[seq] is the entry first applied at seq (index 0 unused). */
  private readonly entries: (Entry | undefined)[] = [undefined];
  private readonly appliedBy: number[] = [0];
  private readonly referenceKv = new Map<string, string>();
  private referenceSeq = 0;
  private referenceDigest = 0;
  /** digestAt[seq] is the reference state's content digest after applying seq. */
  private readonly digestAt: number[] = [0];
  /** membershipSeqs are the seqs of kind-4 entries in the history, ascending. */
  private readonly membershipSeqs: number[] = [];

  get contiguousSeq(): number {
    return this.referenceSeq;
  }

  at(seq: number): Entry | undefined {
    return this.entries[seq];
  }

  /** record checks an applied entry against the history (state-machine safety) and extends it. */
  record(nodeIndex: number, nodeName: string, entry: Entry): void {
    const known = this.entries[entry.seq];
    if (entry.kind === EntryKind.Withheld) {
      // A filtered member's placeholder (engine/communities.ts) stands for an event batch of that term; it
      // never becomes the history (the batch's bytes come from a member that holds them).
      if (known && (known.term !== entry.term || known.kind !== EntryKind.EventBatch)) {
        violate(
          'state-machine-safety',
          `node ${nodeName} applied a withheld batch at seq ${entry.seq} (term ${entry.term}) ` +
            `but node n${this.appliedBy[entry.seq]! + 1} applied (term ${known.term}, kind ${known.kind})`,
          nodeIndex,
        );
      }
      return;
    }
    if (known) {
      if (known.term !== entry.term || known.kind !== entry.kind || !sameBytes(known.data, entry.data)) {
        violate(
          'state-machine-safety',
          `node ${nodeName} applied seq ${entry.seq} as (term ${entry.term}, kind ${entry.kind}, ${entry.data.length} B) ` +
            `but node n${this.appliedBy[entry.seq]! + 1} applied (term ${known.term}, kind ${known.kind}, ${known.data.length} B)`,
          nodeIndex,
        );
      }
      return;
    }
    this.entries[entry.seq] = entry;
    this.appliedBy[entry.seq] = nodeIndex;
    if (entry.kind === EntryKind.Membership) {
      this.membershipSeqs.push(entry.seq);
      this.membershipSeqs.sort((a, b) => a - b);
    }
    this.advanceReference();
  }

  /** membershipEntryAtOrBelow is the newest kind-4 entry at or below seq. */
  membershipEntryAtOrBelow(seq: number): Entry | undefined {
    let found: number | undefined;
    for (const s of this.membershipSeqs) {
      if (s > seq) break;
      found = s;
    }
    return found === undefined ? undefined : this.entries[found];
  }

  /**
   * restrictedDigestAt: the reference state's digest at seq over the keys `keep` keeps (a filtered member's
   * communities, named `name`); undefined past the history. Kept per name and extended as asked, like digestAt.
   */
  restrictedDigestAt(seq: number, name: string, keep: (key: string) => boolean): number | undefined {
    if (seq > this.referenceSeq) return undefined;
    let view = this.restricted.get(name);
    if (!view) {
      view = { kv: new Map(), digest: 0, digestAt: [0] };
      this.restricted.set(name, view);
    }
    for (let s = view.digestAt.length; s <= seq; s++) {
      const e = this.entries[s]!;
      if (e.kind === EntryKind.EventBatch) {
        const command = decodeCommand(e.data) ?? opaqueCommand(e.data);
        const old = view.kv.get(command.key);
        if (keep(command.key) && commandTakesEffect(command, old)) {
          if (old !== undefined) view.digest = subDigest(view.digest, pairDigest(command.key, old));
          view.kv.set(command.key, command.value);
          view.digest = addDigest(view.digest, pairDigest(command.key, command.value));
        }
      }
      view.digestAt[s] = view.digest;
    }
    return view.digestAt[seq];
  }

  /** restricted: per filter (by name), the reference state restricted to its keys, and its digest per seq. */
  private readonly restricted = new Map<string, { kv: Map<string, string>; digest: number; digestAt: number[] }>();

  /** digestAtSeq is the reference state's digest at seq, undefined if the history has a gap below it. */
  digestAtSeq(seq: number): number | undefined {
    return seq <= this.referenceSeq ? this.digestAt[seq] : undefined;
  }

  private advanceReference(): void {
    for (;;) {
      const next = this.entries[this.referenceSeq + 1];
      if (!next) return;
      if (next.kind === EntryKind.EventBatch) {
        // Free text is what a lockstep script writes (KvStateMachine's opaqueCommands); a seeded run's
        // entries are all commands (its state machines refuse anything else).
        const command = decodeCommand(next.data) ?? opaqueCommand(next.data);
        const old = command ? this.referenceKv.get(command.key) : undefined;
        if (command && commandTakesEffect(command, old)) {
          if (old !== undefined) this.referenceDigest = subDigest(this.referenceDigest, pairDigest(command.key, old));
          this.referenceKv.set(command.key, command.value);
          this.referenceDigest = addDigest(this.referenceDigest, pairDigest(command.key, command.value));
        }
      }
      this.referenceSeq++;
      this.digestAt[this.referenceSeq] = this.referenceDigest;
    }
  }
}

/** kvDigest is the same order-free digest over a whole key-value list. */
export function kvDigest(pairs: Iterable<readonly [string, string]>): number {
  let digest = 0;
  for (const [key, value] of pairs) digest = addDigest(digest, pairDigest(key, value));
  return digest;
}

function addDigest(a: number, b: number): number {
  return (a + b) % DIGEST_MODULUS;
}

function subDigest(a: number, b: number): number {
  return (a - b + DIGEST_MODULUS) % DIGEST_MODULUS;
}

/** pairDigest: two FNV-1a variants over "key=value", combined into 52 bits. */
function pairDigest(key: string, value: string): number {
  const text = `${key}=${value}`;
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return (b & 0xfffff) * 0x1_0000_0000 + a;
}
