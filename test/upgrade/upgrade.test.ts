// Rolling upgrade across two real versions: a git worktree of an older commit (UPGRADE_FROM, default 29c7609, the
// last commit before SIGTERM handoffs and autopilot) beside HEAD. Three members start on the old version; with
// writes flowing they are upgraded one at a time to HEAD (SIGTERM, start HEAD's bin/svc.js on the same data dir
// and ports, wait until /ready), followers first; the old leader predates the SIGTERM handoff, so the procedure
// (docs/operations.md) moves leadership by hand first (`svc members transfer` to an upgraded member). Then the
// leader, now a HEAD member, is rolled back to the old version: it hands off on SIGTERM by itself.
// Expected term changes: one for the transfer, one for the rollback's handoff, none from an election timeout.
// 0 acknowledged writes lost. Minutes long: `make upgrade-test` (SVC_UPGRADE_TEST=1), not in `make test`.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeDir, runCli, SVC_BIN, tempDir, tlsTargetArgs, waitFor } from '../cli/helpers.js';
import { RollingCluster, TermWatch, Writer } from '../cli/rolling-cluster.js';

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
/** UPGRADE_FROM is the older version: a tag once releases exist, else this fixed commit. */
const UPGRADE_FROM = process.env.UPGRADE_FROM ?? '29c7609';
/** WRITES_BETWEEN_STEPS: acknowledged writes awaited after each step, so every step runs under load. */
const WRITES_BETWEEN_STEPS = 20;
const CONDITION_TIMEOUT_MS = 60_000;

const describeUpgrade = process.env.SVC_UPGRADE_TEST === '1' ? describe : describe.skip;

describeUpgrade(`rolling upgrade ${UPGRADE_FROM} → HEAD and back, with writes flowing`, function () {
  this.timeout(900_000);
  let dir: string;
  let oldTree: string;
  let cluster: RollingCluster | null = null;

  before(async function () {
    dir = await tempDir('upgrade');
    oldTree = join(dir, 'old');
    execFileSync('git', ['-C', REPO, 'worktree', 'add', '--detach', oldTree, UPGRADE_FROM], { stdio: 'pipe' });
    const samePackages =
      readFileSync(join(oldTree, 'package.json'), 'utf8') === readFileSync(join(REPO, 'package.json'), 'utf8');
    if (samePackages) symlinkSync(join(REPO, 'node_modules'), join(oldTree, 'node_modules'));
    else execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: oldTree, stdio: 'pipe' });
  });

  after(async () => {
    cluster?.killAll();
    if (oldTree && existsSync(oldTree))
      execFileSync('git', ['-C', REPO, 'worktree', 'remove', '--force', oldTree], { stdio: 'pipe' });
    if (dir) await removeDir(dir);
  });

  it('upgrades one member at a time and rolls one back: 0 acknowledged writes lost, no election but the handoffs', async function () {
    const OLD_BIN = join(oldTree, 'bin', 'svc.js');
    cluster = await RollingCluster.create(dir, 3);
    const c = cluster;
    const names = c.members.map((m) => m.plan.name);
    for (const name of names) c.start(name, OLD_BIN);
    for (const name of names) await c.waitReady(name);
    await c.waitLeader();

    const writer = new Writer(c, 'upgrade');
    const waitWrites = async (): Promise<void> => {
      const target = writer.acked.length + WRITES_BETWEEN_STEPS;
      await waitFor(() => writer.acked.length >= target, 'more acknowledged writes', CONDITION_TIMEOUT_MS);
    };
    await waitWrites();
    const terms = new TermWatch(c);
    terms.start();
    let handoffs = 0;
    let transfers = 0;
    const restart = async (name: string, bin: string): Promise<void> => {
      const stderr = await c.stop(name);
      if (/handed leadership to/.test(stderr)) handoffs += 1;
      c.start(name, bin);
      await c.waitReady(name);
      await waitWrites();
    };

    // Followers first.
    const oldLeader = (await c.waitLeader()).name;
    const followers = names.filter((n) => n !== oldLeader);
    for (const name of followers) await restart(name, SVC_BIN);
    // The old leader cannot hand off on SIGTERM: move leadership to an upgraded member by hand, then upgrade it.
    const moved = await runCli([
      'members',
      'transfer',
      followers[0]!,
      '--node',
      c.member(followers[0]!).plan.member.grpcAddr,
      ...tlsTargetArgs(c.pki.adminTls()),
    ]);
    assert.equal(moved.code, 0, moved.stderr);
    transfers += 1;
    await waitFor(
      async () => (await c.leader())?.name === followers[0],
      `${followers[0]} to lead`,
      CONDITION_TIMEOUT_MS,
    );
    await restart(oldLeader, SVC_BIN);

    // Roll one back: the leader (a HEAD member) hands off on SIGTERM, then runs the old version again.
    const headLeader = (await c.waitLeader()).name;
    await restart(headLeader, OLD_BIN);

    await writer.stop();
    terms.stop();
    const lost = await writer.lostKeys();
    writer.close();
    console.log(
      `      upgrade ${UPGRADE_FROM} → HEAD → rollback of ${headLeader}: writes acknowledged ${writer.acked.length}, lost ${lost.length}, ` +
        `unacknowledged ${writer.failed}; transfers ${transfers}, handoffs ${handoffs}, term changes ${terms.changes} ` +
        `(expected ${transfers + handoffs}: terms ${[...terms.terms].sort((a, b) => a - b).join(',')})`,
    );
    assert.deepEqual(lost, [], 'no acknowledged write is lost');
    assert.equal(handoffs, 1, 'the HEAD leader handed off when rolled back');
    assert.equal(terms.changes, transfers + handoffs, 'no election but the transfer and the handoff');
  });
});
