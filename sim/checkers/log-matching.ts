// Log matching: two logs holding an entry with the same (seq, term) hold the
// same entry there and the same log before it. Checked as entries are written:
// each (seq, term) is bound to one content and one predecessor term; by
// induction that pins every prefix.
import { EntryKind, type Entry } from '../../engine/types.js';
import { sameBytes } from '../artifacts.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import type { Checker } from './checker.js';

interface Written {
  kind: number;
  data: Uint8Array;
  /** prevTerm is the term at seq-1 in the writer's log, -1 while unknown (after a snapshot base). */
  prevTerm: number;
  writer: number;
}

const TERM_KEY_SPACE = 1_000_000;

export class LogMatchingChecker implements Checker {
  readonly name = 'log-matching';
  private readonly seen = new Map<number, Written>();

  onAppend(node: SimNode, fromSeq: number, entries: readonly Entry[], prevTerm: number | undefined): void {
    let previous = prevTerm ?? -1;
    for (const entry of entries) {
      if (entry.term >= TERM_KEY_SPACE)
        violate(this.name, `term ${entry.term} is beyond what the checker indexes`, node.index);
      const key = entry.seq * TERM_KEY_SPACE + entry.term;
      const known = this.seen.get(key);
      if (!known) {
        this.seen.set(key, { kind: entry.kind, data: entry.data, prevTerm: previous, writer: node.index });
      } else {
        // A filtered member's withheld placeholder matches the event batch it stands for (engine/communities.ts).
        const withheld = known.kind === EntryKind.Withheld || entry.kind === EntryKind.Withheld;
        const batches = (known.kind === EntryKind.EventBatch || entry.kind === EntryKind.EventBatch) && withheld;
        if (known.kind === EntryKind.Withheld && entry.kind === EntryKind.EventBatch) {
          known.kind = entry.kind;
          known.data = entry.data;
          known.writer = node.index;
        }
        if (withheld && !batches && known.kind !== entry.kind) {
          violate(
            this.name,
            `${node.name} wrote (seq ${entry.seq}, term ${entry.term}) withheld where n${known.writer + 1} holds kind ${known.kind}`,
            node.index,
          );
        }
        if (!withheld && (known.kind !== entry.kind || !sameBytes(known.data, entry.data))) {
          violate(
            this.name,
            `${node.name} wrote (seq ${entry.seq}, term ${entry.term}) with other content than n${known.writer + 1}`,
            node.index,
          );
        }
        if (known.prevTerm >= 0 && previous >= 0 && known.prevTerm !== previous) {
          violate(
            this.name,
            `${node.name} holds (seq ${entry.seq}, term ${entry.term}) after term ${previous}, ` +
              `n${known.writer + 1} after term ${known.prevTerm}: the logs differ before a matching entry`,
            node.index,
          );
        }
        if (known.prevTerm < 0 && previous >= 0) known.prevTerm = previous;
      }
      previous = entry.term;
    }
    void fromSeq;
  }
}
