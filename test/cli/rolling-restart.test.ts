// A rolling restart of a three-node cluster (svc node processes, mutual TLS) with writes flowing: every member in
// turn gets SIGTERM and starts again on its data dir, the next only once it is ready. A leader hands leadership to
// its most caught-up voter before it stops (cli/node/handoff.ts), so the term moves exactly once per handoff and
// never by an election timeout; no acknowledged write is lost. Without the handoff the stopped leader's followers
// wait out their election timeout and elect: a term change with no handoff, and this test fails.
import assert from 'node:assert/strict';
import { removeDir, SVC_BIN, tempDir } from './helpers.js';
import { RollingCluster, TermWatch, Writer } from './rolling-cluster.js';

/** WRITES_BETWEEN_STEPS: acknowledged writes awaited after each restart, so every step runs under load. */
const WRITES_BETWEEN_STEPS = 20;

describe('rolling restart with SIGTERM: leaders hand off, no election, no lost write', function () {
  this.timeout(600_000);
  let dir: string;
  let cluster: RollingCluster | null = null;

  before(async () => {
    dir = await tempDir('rolling');
  });

  after(async () => {
    cluster?.killAll();
    if (dir) await removeDir(dir);
  });

  it('changes term exactly once per leader handoff and loses no acknowledged write', async function () {
    cluster = await RollingCluster.create(dir, 3);
    const names = cluster.members.map((m) => m.plan.name);
    for (const name of names) cluster.start(name, SVC_BIN);
    for (const name of names) await cluster.waitReady(name);
    await cluster.waitLeader();

    const writer = new Writer(cluster, 'rolling');
    const waitWrites = async (count: number): Promise<void> => {
      const target = writer.acked.length + count;
      const { waitFor } = await import('./helpers.js');
      await waitFor(() => writer.acked.length >= target, `${count} more acknowledged writes`, 60_000);
    };
    await waitWrites(WRITES_BETWEEN_STEPS);
    const terms = new TermWatch(cluster);
    terms.start();
    let handoffs = 0;
    let leaderStops = 0;
    // Followers first, the leader last (docs/operations.md): the leader is stopped once and hands off once.
    const leader = await cluster.waitLeader();
    const order = [...names.filter((n) => n !== leader.name), leader.name];
    for (const name of order) {
      const wasLeader = (await cluster.leader())?.name === name;
      if (wasLeader) leaderStops += 1;
      const stderr = await cluster.stop(name);
      if (/handed leadership to/.test(stderr)) handoffs += 1;
      cluster.start(name, SVC_BIN);
      await cluster.waitReady(name);
      await waitWrites(WRITES_BETWEEN_STEPS);
    }
    // And once more the other way round: this time the leader may be stopped first.
    for (const name of [...order].reverse()) {
      if ((await cluster.leader())?.name === name) leaderStops += 1;
      const stderr = await cluster.stop(name);
      if (/handed leadership to/.test(stderr)) handoffs += 1;
      cluster.start(name, SVC_BIN);
      await cluster.waitReady(name);
      await waitWrites(WRITES_BETWEEN_STEPS);
    }
    await writer.stop();
    terms.stop();
    const lost = await writer.lostKeys();
    writer.close();
    console.log(
      `      rolling restart: writes acknowledged ${writer.acked.length}, lost ${lost.length}, failed (unacknowledged) ${writer.failed}, ` +
        `leader stops ${leaderStops}, handoffs ${handoffs}, term changes ${terms.changes} (terms ${[...terms.terms].sort((a, b) => a - b).join(',')})`,
    );
    assert.deepEqual(lost, [], 'no acknowledged write is lost');
    assert.ok(leaderStops >= 1, 'a leader was stopped at least once');
    assert.equal(handoffs, leaderStops, 'every stopped leader handed off');
    assert.equal(terms.changes, handoffs, 'the term moved once per handoff, never by an election timeout');
  });
});
