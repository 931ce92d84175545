// Snapshot kind (part of snapshot-integrity): an installed snapshot is of the kind its puller is (docs/protocol.md,
// "Filtered snapshots"): a member the committed roster does not filter never installs a cut, and a filtered member
// never a full snapshot. The puller's driver (engine/snapshot-install.ts snapshotFilterProblem, run right before the
// swap) and an engine assert keep it so; this judges the install itself, from the committed log and the puller's
// disk, so that a wrong leader serving one kind for the other and a puller that skips its check are caught by the
// simulator too (test/sim/snapshot-kind.test.ts).
import { decodeRoster } from '../../engine/roster.js';
import type { SnapshotMeta } from '../../engine/types.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';

type RosterAt = (seq: number) => ReturnType<typeof decodeRoster>;

/**
 * checkKindFor judges one install (called as the puller's state machine takes it, before its engine hears of it).
 *   - A cut (meta.filter) on a member that the committed roster does not filter: the roster at the cut's epoch names
 *     no filter for it; or, while the committed history does not reach that epoch (a leader cuts by its newest
 *     roster, committed or not), the newest committed roster names none and the puller's disk says it holds the full
 *     log (HardState.filteredData absent or -1). A puller behind the record that filters it may rightly take a cut
 *     of an epoch it has not seen while it wipes toward a filtered log (filteredData 0): not judged.
 *   - A full snapshot on a filtered member: the puller's disk says it holds filtered data (HardState.filteredData
 *     >= 0: a cut, filtered ships, or a wipe toward them; -1 or absent = the full log or a wipe toward it), and the
 *     newest committed roster filters it (or its own newest roster does: a filter set by a record not yet
 *     committed). A member whose filter was cleared wipes toward the full log first (-1), and one that holds the
 *     full log when it first hears of its filter takes a full snapshot rightly (its data is full until a filtered
 *     frame wipes it): neither is judged.
 */
export function checkKindFor(
  invariant: string,
  node: SimNode,
  meta: SnapshotMeta,
  where: string,
  rosterAt: RosterAt,
  contiguousSeq: number,
): void {
  const id = node.status?.id ?? 0;
  if (id === 0) return;
  const filtersAt = (seq: number): boolean | null => {
    const roster = rosterAt(seq);
    return roster === null ? null : roster.filters?.[id] !== undefined;
  };
  const now = filtersAt(contiguousSeq);
  const held = node.storage.hardState?.filteredData ?? -1;
  if (meta.filter) {
    const atEpoch = meta.filter.epoch <= contiguousSeq ? filtersAt(meta.filter.epoch) : null;
    if (atEpoch === false || (atEpoch === null && now === false && held < 0))
      violate(
        invariant,
        `${where}: a cut (epoch ${meta.filter.epoch}) installed on member ${id}, which the committed roster does not filter: a full member never installs a cut`,
        node.index,
      );
    return;
  }
  const ownFilter = node.status?.filter !== undefined;
  if (held >= 0 && (now === true || ownFilter))
    violate(
      invariant,
      `${where}: a full snapshot installed on member ${id}, which holds filtered data (epoch ${held}) and ${now === true ? 'the committed roster' : 'its own newest roster'} filters: a filtered member never installs a full snapshot`,
      node.index,
    );
}
