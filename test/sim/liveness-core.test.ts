// The liveness phase's core (sim/run.ts excludeMinority): one voter may be kept down, but never while a
// joiner awaits admission — the leader admits only once every voter has reported capability bit 0 to
// it, so a voter kept down would refuse the joiner for good. Seed 54484 found the hole: a joiner that
// was down at the heal (and restarted into the core a moment later) did not count.
import assert from 'node:assert/strict';
import { calmCluster } from '../../sim/presets.js';
import { Prng } from '../../sim/prng.js';
import { excludeMinority } from '../../sim/run.js';
import type { Cluster } from '../../sim/cluster.js';

/** ELECTION_WAIT_MS bounds how long a calm cluster may take to elect (a few election timeouts). */
const ELECTION_WAIT_MS = 10_000;
/** JOINER_SLOT: calmCluster(3)'s first joiner slot. */
const JOINER_SLOT = 3;

/** keepDownPrng: a PRNG whose first draw decides to keep a voter down (chance 0.25 passes). */
function keepDownPrng(): Prng {
  for (let i = 0; ; i++) {
    if (new Prng(`keep-down ${i}`).chance(0.25)) return new Prng(`keep-down ${i}`);
  }
}

/** electedCluster: three founders with a leader. */
function electedCluster(): Cluster {
  const cluster = calmCluster(3);
  cluster.start();
  assert.ok(
    cluster.runUntilTrue(() => cluster.leader() !== null, ELECTION_WAIT_MS),
    'a leader within the bound',
  );
  return cluster;
}

describe('sim liveness phase: the voter kept down (excludeMinority)', () => {
  it('keeps one voter down when no joiner awaits admission (the control)', () => {
    const cluster = electedCluster();
    const excluded = new Set<number>();
    excludeMinority(cluster, excluded, keepDownPrng());
    assert.equal(excluded.size, 1);
    const [victim] = excluded;
    assert.notEqual(victim, cluster.leader()!.index);
    assert.equal(cluster.node(victim!).state, 'down');
  });

  it('keeps no voter down while a live joiner awaits admission', () => {
    const cluster = electedCluster();
    cluster.join(JOINER_SLOT, [cluster.leader()!.index]);
    const excluded = new Set<number>();
    excludeMinority(cluster, excluded, keepDownPrng());
    assert.deepEqual([...excluded], []);
  });

  it('keeps no voter down while a joiner that is down at the heal awaits admission (seed 54484)', () => {
    const cluster = electedCluster();
    cluster.join(JOINER_SLOT, [cluster.leader()!.index]);
    cluster.crash(JOINER_SLOT);
    assert.equal(cluster.node(JOINER_SLOT).memberId, 0, 'crashed before it was admitted');
    const excluded = new Set<number>();
    excludeMinority(cluster, excluded, keepDownPrng());
    assert.deepEqual([...excluded], []);
    assert.ok(cluster.nodes.slice(0, 3).every((n) => n.state === 'up'));
  });
});
