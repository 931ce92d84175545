// Overlay: the community-overlay filter (docs/protocol.md, "Filtered members"). A filtered member's state
// is the committed log's state restricted to its communities — checked at every frontier it reports (each
// ReportApplied it sends), against the reference state replayed along the committed history — and it holds
// no key outside them. No report of a filtered member ever moves a commit.
import { inCommunities } from '../../engine/communities.js';
import type { Effect } from '../../engine/types.js';
import type { SimNode } from '../node.js';
import { violate } from '../violation.js';
import { kvDigest, type CanonicalLog } from './canonical-log.js';
import type { Checker, StepRecord } from './checker.js';

export class OverlayChecker implements Checker {
  readonly name = 'overlay';

  constructor(private readonly canonical: CanonicalLog) {}

  readonly beforeEffectTypes: readonly Effect['type'][] = ['send'];

  beforeEffect(node: SimNode, effect: Effect): void {
    if (effect.type !== 'send' || effect.request.method !== 'ReportApplied') return;
    const status = node.engine?.status();
    // Checked against the filter its data was cut by (its filter epoch's); none known: unfiltered, or its log
    // does not reach that record yet.
    const filter = status?.filteredData ? status.dataFilter : undefined;
    if (!filter) return;
    const keep = (key: string): boolean => inCommunities(filter, { key, tenant: '' });
    const pairs = node.machine.pairs();
    const stray = pairs.find(([key]) => !keep(key));
    if (stray)
      violate(this.name, `${node.name}, filtered to ${JSON.stringify(filter)}, holds key ${stray[0]}`, node.index);
    const applied = node.machine.appliedSeq;
    const expected = this.canonical.restrictedDigestAt(applied, JSON.stringify(filter), keep);
    if (expected !== undefined && kvDigest(pairs) !== expected)
      violate(
        this.name,
        `${node.name} reports seq ${effect.request.body.appliedSeqno} holding a state (applied ${applied}) that is not the committed log's restricted to ${JSON.stringify(filter)}`,
        node.index,
      );
  }

  afterStep(step: StepRecord): void {
    const { input, before, after, node } = step;
    if (input.type !== 'request' || input.request.method !== 'ReportApplied' || after.role !== 'leader') return;
    const id = input.request.body.reporterShard;
    const filtered = after.roster.filters?.[id] !== undefined || before?.roster.filters?.[id] !== undefined;
    if (filtered && before?.role === 'leader' && after.commitSeq !== before.commitSeq)
      violate(
        this.name,
        `${node.name}'s commit moved ${before.commitSeq} → ${after.commitSeq} on a report of filtered member ${id}`,
        node.index,
      );
  }
}
