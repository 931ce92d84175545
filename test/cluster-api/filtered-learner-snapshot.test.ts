// A read replica of one community behind its leader's compaction point, on real nodes (docs/protocol.md,
// "Filtered snapshots"): three voters and a filtered learner in child processes, mutual TLS on gRPC, real
// fsync, snapshots staged every few entries and the log compacted right behind them. The learner is stopped,
// the leader writes records outside its communities and one inside, stages and compacts past everything the
// learner holds; restarted, the learner cannot be reached by pushes and fetches a snapshot, which the leader
// (knowing the caller by its certificate) cuts to the learner's communities. It catches up to the leader's
// commit, holds the record of its community written while it was down, and holds no record outside its
// communities — none was ever sent to it, and its installed artifact holds none either.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ApiCluster } from './api-cluster.js';
import { waitFor } from '../node/harness.js';
import { joinThroughFollower, LeaderAdmin, leaderAndFollower } from './filtered-learner-setup.js';

/** FILTER_PREFIXES: the community (`kept/`) and what the API's authentication reads at the member. */
const FILTER_PREFIXES = ['kept/', 'keys/', 'keys-by-hash/', 'users/'];
/** SNAPSHOT_EVERY_ENTRY_COUNT: a snapshot every few entries, so the leader compacts past the stopped learner. */
const SNAPSHOT_EVERY_ENTRY_COUNT = 8;
/** OUTSIDE_WHILE_DOWN_COUNT: records outside its communities written while the learner is down. */
const OUTSIDE_WHILE_DOWN_COUNT = 24;
/** CONVERGE_TIMEOUT_MS bounds each wait for the replica. */
const CONVERGE_TIMEOUT_MS = 90_000;

describe('cluster-api: a filtered learner behind the compaction point catches up by a filtered snapshot', function () {
  this.timeout(600_000);
  const cluster = new ApiCluster();

  before(async () => {
    await cluster.start({
      joiners: ['d'],
      nodeConfig: {
        engineLimits: {
          snapshotEntryCountThreshold: SNAPSHOT_EVERY_ENTRY_COUNT,
          snapshotLogBytesPercentMin: 0,
          compactionRetainEntryCount: 0,
        },
      },
    });
  });
  after(async () => {
    await cluster.stop();
  });

  it('stopped, compacted past, restarted: installs a cut of its communities over mutual TLS and holds nothing else', async () => {
    const { leader, follower } = await leaderAndFollower(cluster);
    const admin = LeaderAdmin.open(cluster, leader);
    let written = 0;
    /** put writes one record through the leader (Admin.Propose). */
    const put = async (key: string): Promise<void> => {
      const n = written++;
      await admin.put(key, { n }, `fls-${n}`);
    };
    const leaderNow = async (): Promise<string> => (await cluster.leaderName())!;
    /** caughtUp: d has applied the leader's commit. */
    const caughtUp = async (): Promise<boolean> => {
      const status = await cluster.statusOf('d');
      const now = await cluster.statusOf(await leaderNow());
      return status !== null && now !== null && status.appliedSeq >= now.commitSeq;
    };
    const d = (): ReturnType<ApiCluster['node']> => cluster.node('d');
    try {
      await put('secret/before');
      await joinThroughFollower(cluster, 'd', { leader, follower }, CONVERGE_TIMEOUT_MS);
      await admin.filter('d', FILTER_PREFIXES);
      await put('kept/first');
      await waitFor(
        async () => (await d().localKeys('kept/')).length === 1 && (await d().localKeys('secret/')).length === 0,
        'd filtered, holding its community only',
        CONVERGE_TIMEOUT_MS,
      );
      const heldBefore = (await cluster.statusOf('d'))!.appliedSeq;

      await d().stop();
      for (let i = 0; i < OUTSIDE_WHILE_DOWN_COUNT; i++) {
        await put(`secret/down-${i}`);
        if (i === OUTSIDE_WHILE_DOWN_COUNT / 2) await put('kept/while-down');
      }
      await waitFor(
        async () => ((await cluster.statusOf(await leaderNow()))?.snapshotSeq ?? 0) > heldBefore + 1,
        'the leader to stage and compact past what d holds',
        CONVERGE_TIMEOUT_MS,
      );

      await cluster.restart('d');
      await waitFor(caughtUp, 'd caught up to the leader commit', CONVERGE_TIMEOUT_MS);
      const status = (await cluster.statusOf('d'))!;
      assert.ok(
        status.snapshotSeq > heldBefore,
        `d installed a snapshot (at ${status.snapshotSeq}, held ${heldBefore})`,
      );
      assert.deepEqual((await d().localKeys('kept/')).sort(), ['kept/first', 'kept/while-down']);
      assert.deepEqual(await d().localKeys('secret/'), [], 'no record outside its communities is held');
      // Its snapshot directory: an artifact cut to its filter, holding no byte of another community.
      const snapshotsDir = join(d().config.dataDir, 'snapshots');
      const artifacts = readdirSync(snapshotsDir).filter((name) => !name.startsWith('.'));
      assert.ok(artifacts.length > 0);
      let cut = 0;
      for (const name of artifacts) {
        for (const file of readdirSync(join(snapshotsDir, name))) {
          const text = readFileSync(join(snapshotsDir, name, file), 'latin1');
          assert.equal(text.includes('secret/'), false, `${name}/${file} holds a record outside d's communities`);
          if (file === 'meta.json' && (JSON.parse(text) as { filter?: unknown }).filter !== undefined) cut++;
        }
      }
      assert.ok(cut > 0, 'an installed artifact names the filter it was cut by');

      // It goes on by ShipSegment: a write to its community reaches it.
      await put('kept/after');
      await waitFor(
        async () => (await d().localKeys('kept/')).includes('kept/after'),
        'd to take a write after the install',
        CONVERGE_TIMEOUT_MS,
      );
    } finally {
      admin.close();
    }
  });
});
