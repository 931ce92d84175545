// A node whose roster lags follows a legitimately promoted leader, in the seeded world (loss,
// duplication, reordering, every checker on), while forged calls claiming leadership from a
// stranger hit it at the same time: it must follow the promoted leader and nobody else.
// The scripted version is scenarios/lagging-roster-follows-promoted-leader.txt.
import assert from 'node:assert/strict';
import { MemberRole } from '../../engine/types.js';
import { calmCluster, CALM_NETWORK } from '../../sim/presets.js';
import { encodeCommand } from '../../sim/state-machine.js';
import type { Cluster } from '../../sim/cluster.js';
import type { SimNode } from '../../sim/node.js';

/** SEED_COUNT: worlds tried (each a different network draw). */
const SEED_COUNT = 6;
/** STEP_WAIT_MS bounds each stage (elections, joins, promotion, catch-up). */
const STEP_WAIT_MS = 30_000;
const STRANGER = 99;

const put = (key: string, value: string, writeId: number) => encodeCommand({ op: 'put', key, value, writeId });

/** retryAdmin repeats an operator command until its effect shows (a leader may refuse "retry"). */
function retryAdmin(cluster: Cluster, done: () => boolean, issue: () => void): boolean {
  for (let attempt = 0; attempt < 40 && !done(); attempt++) {
    issue();
    cluster.runUntilTrue(done, 750);
  }
  return done();
}

function forgedHeartbeat(term: number) {
  return {
    kind: 'heartbeat-term-bump' as const,
    clusterId: '',
    request: {
      method: 'Heartbeat' as const,
      body: {
        shardId: STRANGER,
        regionId: STRANGER,
        entityCount: 0,
        signalThroughputEps: 0,
        diskBytes: 0,
        replicationLag: {},
        lastHeartbeatNs: '0',
        term,
        leaderRegion: STRANGER,
        streamBaseline: 0,
        prevLogTerm: 0,
        prevLogSeq: 0,
        buildVersion: '',
        leaderLastSeq: 1,
      },
    },
  };
}

describe('sim: a lagging roster follows a promoted leader', function () {
  this.timeout(300_000);
  for (let seed = 1; seed <= SEED_COUNT; seed++) {
    it(`seed ${seed}: a learner that missed a join, a promotion and a transfer follows the new leader, not a stranger`, () => {
      const cluster = calmCluster(3, {
        seed: `lagging-${seed}`,
        network: {
          ...CALM_NETWORK,
          lossProbability: 0.03,
          duplicateProbability: 0.05,
          reorderProbability: 0.1,
          oneWayDelayMsMax: 15,
        },
      });
      cluster.start();
      assert.ok(
        cluster.runUntilTrue(() => cluster.leader() !== null, STEP_WAIT_MS),
        'a first leader',
      );
      cluster.propose(cluster.leader()!.index, put('a', '1', 1));
      const lagging: SimNode = cluster.node(3);
      const promoted: SimNode = cluster.node(4);
      cluster.join(3, [0]);
      assert.ok(
        cluster.runUntilTrue(() => lagging.status?.ready === true, STEP_WAIT_MS),
        'n4 admitted and ready',
      );

      // n4 hears nothing while n5 joins, is promoted and takes over.
      cluster.isolate(3);
      cluster.join(4, [1]);
      assert.ok(
        cluster.runUntilTrue(() => promoted.status?.ready === true, STEP_WAIT_MS),
        'n5 admitted and ready',
      );
      const promotedId = promoted.status!.id;
      const roleIn = (node: SimNode, id: number) => node.status?.roster.members.find((m) => m.id === id)?.role;
      assert.ok(
        retryAdmin(
          cluster,
          () => {
            const l = cluster.leader();
            return l !== null && roleIn(l, promotedId) === MemberRole.Voter;
          },
          () => cluster.admin({ op: 'promote', memberId: promotedId }),
        ),
        'n5 promoted',
      );
      assert.ok(
        retryAdmin(
          cluster,
          () => cluster.leader() === promoted,
          () => cluster.admin({ op: 'transfer', memberId: promotedId }),
        ),
        'n5 leads',
      );
      cluster.propose(promoted.index, put('b', '2', 2));
      assert.ok(
        cluster.runUntilTrue(() => cluster.nodes.slice(0, 3).every((n) => n.machine.get('b') === '2'), STEP_WAIT_MS),
        'b committed',
      );
      assert.equal(roleIn(lagging, promotedId), undefined, 'n4 has not heard of n5');

      // A stranger claims leadership at n4 at once and keeps doing so; then n4 is healed.
      const leaderTerm = promoted.status!.term;
      for (const term of [leaderTerm, leaderTerm + 1, leaderTerm + 50])
        cluster.injectForeign(3, { ...forgedHeartbeat(term), clusterId: cluster.clusterId });
      cluster.heal();
      for (let i = 0; i < 5; i++) {
        cluster.runFor(300);
        cluster.injectForeign(3, { ...forgedHeartbeat(promoted.status!.term + 1), clusterId: cluster.clusterId });
      }
      const following = () =>
        lagging.status?.leaderId === promotedId &&
        lagging.machine.get('b') === '2' &&
        roleIn(lagging, promotedId) === MemberRole.Voter;
      assert.ok(
        cluster.runUntilTrue(following, STEP_WAIT_MS),
        `n4 follows n5 (leader ${lagging.status?.leaderId}, term ${lagging.status?.term}, b=${lagging.machine.get('b')})`,
      );
      assert.equal(lagging.status!.term, promoted.status!.term, "n4 took the leader's term, not the stranger's");
      cluster.runFor(100); // the last forged call is still on its way
      assert.ok(
        cluster.checkers.foreignTraffic.delivered >= 8,
        `the forged calls reached n4 and changed nothing (${cluster.checkers.foreignTraffic.delivered})`,
      );
    });
  }
});
