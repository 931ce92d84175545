// Scale 3 → 5 → 3 on svc node processes started as the StatefulSet starts its pods (every pod the same flags: the
// founders find themselves in the list, n4 and n5 join through the founders as learners). Autopilot (on by
// default in a node) promotes each new member once it has been caught up and heard for autopilotStableTicks: no
// admin command. Scale-down runs what a pod's preStop would, `svc members leave NAME` with the pod's own peer
// certificate (a member may make itself leave, nobody else), then SIGTERM: each leaves the roster. A third leave (3 → 2 voters) is refused: autopilotFailureTolerance 1 needs 3 voters. Writes flow
// throughout and none fails or is lost; the term never moves (no election: the cluster never lost its quorum).
import assert from 'node:assert/strict';
import { removeDir, runCli, SVC_BIN, tempDir, tlsTargetArgs, waitFor } from './helpers.js';
import { RollingCluster, statusOf, TermWatch, Writer } from './rolling-cluster.js';

const CONDITION_TIMEOUT_MS = 90_000;

describe('autopilot: scale 3 → 5 → 3 without a promote command, leaving on scale-down', function () {
  this.timeout(600_000);
  let dir: string;
  let cluster: RollingCluster | null = null;

  before(async () => {
    dir = await tempDir('autopilot');
  });

  after(async () => {
    cluster?.killAll();
    if (dir) await removeDir(dir);
  });

  it('promotes the two new members by itself and lets them leave; never below quorum', async function () {
    // A short stability window keeps the test short; the rule is the same at the default.
    cluster = await RollingCluster.create(dir, 3, 2, () => ({ engineLimits: { autopilotStableTicks: 20 } }));
    const c = cluster;
    for (const name of ['n1', 'n2', 'n3']) c.start(name, SVC_BIN);
    for (const name of ['n1', 'n2', 'n3']) await c.waitReady(name);
    await c.waitLeader();
    const writer = new Writer(c, 'scale');
    const terms = new TermWatch(c);
    terms.start();
    const roleOf = async (name: string): Promise<string> => {
      const leader = await c.leader();
      return leader?.members.find((m) => m.name === name)?.role ?? '';
    };

    // Scale up: the new pods join as learners and become voters with no admin command.
    const joined: string[] = [];
    for (const name of ['n4', 'n5']) {
      c.start(name, SVC_BIN);
      await waitFor(async () => (await roleOf(name)) !== '', `${name} to join`, CONDITION_TIMEOUT_MS);
      joined.push(await roleOf(name));
    }
    for (const name of ['n4', 'n5'])
      await waitFor(
        async () => (await roleOf(name)) === 'voter',
        `${name} promoted by autopilot`,
        CONDITION_TIMEOUT_MS,
      );
    const leader = (await c.waitLeader())!;
    assert.equal(leader.members.filter((m) => m.role === 'voter').length, 5);

    // What a pod's preStop can run: `svc members leave` with the pod's own peer certificate (no admin credential).
    const leave = (name: string, as = name) => {
      return runCli([
        'members',
        'leave',
        name,
        '--node',
        c.member(as).plan.member.grpcAddr,
        ...tlsTargetArgs(c.pki.tls(as)),
      ]);
    };
    // A member's certificate makes only that member leave.
    const other = await leave('n4', 'n5');
    assert.equal(other.code, 1);
    assert.match(other.stderr, /may only make its own member leave/);
    // Scale down: the StatefulSet stops the highest ordinal first; its preStop leaves, then SIGTERM.
    for (const name of ['n5', 'n4']) {
      const left = await leave(name);
      assert.equal(left.code, 0, left.stderr);
      await waitFor(async () => (await roleOf(name)) === 'removed', `${name} removed`, CONDITION_TIMEOUT_MS);
      await c.stop(name);
    }
    const after = await c.waitLeader();
    assert.equal(after.members.filter((m) => m.role === 'voter').length, 3);
    // Below the fault tolerance a leave is refused: the member stays a voter (docs/operations.md, scale-down).
    const refused = await leave('n3');
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /fewer than the 3 that tolerate 1 failure/);
    assert.equal(await roleOf('n3'), 'voter');

    await writer.stop();
    terms.stop();
    const lost = await writer.lostKeys();
    writer.close();
    const final = await statusOf(c.member('n1').plan.member.httpAddr);
    console.log(
      `      scale 3 → 5 → 3: joined as ${joined.join(', ')}; writes acknowledged ${writer.acked.length}, failed ${writer.failed}, lost ${lost.length}; ` +
        `term changes ${terms.changes}; final voters ${final?.members.filter((m) => m.role === 'voter').length}`,
    );
    assert.deepEqual(joined, ['learner', 'learner']);
    assert.ok(writer.acked.length > 0);
    assert.equal(writer.failed, 0, 'every write was acknowledged: the cluster kept its quorum');
    assert.deepEqual(lost, []);
    // Term changes are printed, not asserted: what scaling must keep is the quorum (every write acknowledged,
    // none lost, above). On a loaded machine a starved heartbeat can start one election that costs neither.
  });
});
