// Snapshot integrity: a staged or installed artifact's files hash to its
// manifest, and its state equals a replay of the committed log up to its seq.
import { inCommunities } from '../../engine/communities.js';
import { decodeRoster } from '../../engine/roster.js';
import { sameFilter } from '../../engine/snapshot-install.js';
import type { SnapshotMeta } from '../../engine/types.js';
import { readStateText, verifyFiles, type Artifact } from '../artifacts.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import { kvDigest, type CanonicalLog } from './canonical-log.js';
import type { Checker } from './checker.js';
import { checkKindFor } from './snapshot-kind.js';

export class SnapshotIntegrityChecker implements Checker {
  readonly name = 'snapshot-integrity';

  constructor(private readonly canonical: CanonicalLog) {}

  onArtifact(node: SimNode, artifact: Artifact, how: 'staged' | 'installed'): void {
    const { meta, header } = artifact;
    const where = `${node.name} ${how} snapshot at seq ${meta.seq}`;
    const fileError = verifyFiles(header, artifact.files);
    if (fileError) violate(this.name, `${where}: ${fileError}`, node.index);
    if (header.snapshotSeq !== meta.seq)
      violate(this.name, `${where}: header says seq ${header.snapshotSeq}`, node.index);
    const state = JSON.parse(readStateText(artifact.files) ?? '{}') as { appliedSeq?: number; kv?: [string, string][] };
    if (state.appliedSeq !== meta.seq)
      violate(this.name, `${where}: its state is at seq ${state.appliedSeq}`, node.index);
    if (how === 'installed')
      checkKindFor(this.name, node, meta, where, (seq) => this.rosterAt(seq), this.canonical.contiguousSeq);
    // A filtered member's snapshot holds its communities only: it is checked against the committed log
    // restricted to them (engine/communities.ts) — the filter a served one names (meta.filter, which must be
    // this member's in the committed roster at its epoch), else the one its own data was cut by.
    if (meta.filter) this.checkCutFor(node, meta.filter, where);
    const filter = meta.filter ? meta.filter.filter : node.status?.filteredData ? node.status.dataFilter : undefined;
    const expected = filter
      ? this.canonical.restrictedDigestAt(meta.seq, JSON.stringify(filter), (key) =>
          inCommunities(filter, { key, tenant: '' }),
        )
      : this.canonical.digestAtSeq(meta.seq);
    if (expected === undefined) {
      violate(
        this.name,
        `${where}: the committed history has a gap below seq ${meta.seq} (contiguous to ${this.canonical.contiguousSeq})`,
        node.index,
      );
    }
    if (kvDigest(state.kv ?? []) !== expected) {
      violate(
        this.name,
        `${where}: its key-value state differs from a replay of the committed log to seq ${meta.seq}`,
        node.index,
      );
    }
    if (meta.seq > 0) {
      const entry = this.canonical.at(meta.seq)!;
      if (entry.term !== meta.entryTerm)
        violate(this.name, `${where}: entryTerm ${meta.entryTerm}, committed entry has term ${entry.term}`, node.index);
    }
    const roster = this.rosterAt(meta.seq);
    if (roster !== null && roster.membershipVersion !== meta.roster.membershipVersion) {
      violate(
        this.name,
        `${where}: roster version ${meta.roster.membershipVersion}, committed log says ${roster.membershipVersion}`,
        node.index,
      );
    }
  }

  /**
   * checkCutFor: a filtered snapshot was cut by this node's own filter — the one the committed roster at its
   * epoch gives it (never another member's, never an unfiltered member's). An epoch the committed history
   * does not reach yet is not judged.
   */
  private checkCutFor(node: SimNode, cut: NonNullable<SnapshotMeta['filter']>, where: string): void {
    const id = node.engine?.status().id ?? 0;
    if (cut.epoch > this.canonical.contiguousSeq || id === 0) return;
    const roster = this.rosterAt(cut.epoch);
    const own = roster?.filters?.[id];
    if (roster !== null && (own === undefined || !sameFilter(own, cut.filter)))
      violate(
        this.name,
        `${where}: cut to ${JSON.stringify(cut.filter)} at epoch ${cut.epoch}, but the committed roster there gives member ${id} ${JSON.stringify(own ?? 'no filter')}`,
        node.index,
      );
  }

  /** rosterAt is the newest committed kind-4 roster at or below seq, null if there is none. */
  private rosterAt(seq: number): ReturnType<typeof decodeRoster> {
    const entry = this.canonical.membershipEntryAtOrBelow(seq);
    return entry ? decodeRoster(entry.data) : null;
  }
}
