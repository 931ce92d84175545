// Backup and restore end to end, with real processes over mutual TLS: a three-node cluster (child processes)
// takes writes; `svc backup` (bin/svc.js, the admin certificate) copies it while a writer goes on (what was
// acknowledged before it began is in it, what after it ended is not: a document's version is its commit
// seqno, so the state at the index is exactly known); more writes follow; `svc backup
// verify` passes; a flipped byte, a cut file and a wrong magic are each refused by verify and by restore with
// nothing written; `svc restore` then founds a NEW cluster (new cluster id, new certificates) whose three
// founders serve exactly the state at the backup's index (not the later writes), a fourth node joining later
// installs it from the leader, and the new cluster takes writes of its own.
import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsonObject } from '../../store/document-store.js';
import { restoreBackup, type RestorePlan } from '../../cli/backup/restore-command.js';
import { ChildNode } from '../node/child-node.js';
import {
  getStatus,
  makePki,
  nodeConfig,
  planNodes,
  type Pki,
  type PlannedNode,
  type StatusDoc,
} from '../node/harness.js';
import { removeDir, runCli, tempDir, tlsTargetArgs, waitFor } from './helpers.js';

const WRITES_BEFORE = 30;
const WRITES_AFTER = 10;
/** WRITER_ACKS_AROUND_BACKUP: the concurrent writer's acknowledged puts awaited before the backup and after it. */
const WRITER_ACKS_AROUND_BACKUP = 5;
const WRITER_PUTS_MAX = 5_000;
const LEADER_TIMEOUT_MS = 30_000;
const CONVERGE_TIMEOUT_MS = 30_000;

type Dump = Awaited<ReturnType<ChildNode['dump']>>;

/** adminFlags are the `svc backup` target flags for a cluster's admin certificate and these members. */
function adminFlags(pki: Pki, plans: PlannedNode[]): string[] {
  return [...plans.flatMap((p) => ['--node', p.member.grpcAddr]), ...tlsTargetArgs(pki.adminTls())];
}

async function leaderOf(plans: PlannedNode[]): Promise<StatusDoc | null> {
  for (const plan of plans) {
    try {
      const s = await getStatus(plan.member.httpAddr);
      if (s.role === 'leader') return s;
    } catch {
      // not answering yet
    }
  }
  return null;
}

describe('svc backup and svc restore on real nodes over mutual TLS', function () {
  this.timeout(300_000);
  let dir: string;
  let backupFile: string;
  let sourcePki: Pki;
  let sourcePlans: PlannedNode[];
  const source = new Map<string, ChildNode>();
  const restored = new Map<string, ChildNode>();
  /**
   * atBackup is the source's state at the backup's index: the writes before it (every node applied alike), and
   * of the unique keys a writer put while the backup ran, those committed at or below the index (a document's
   * version is the seqno that committed it).
   */
  let atBackup: Dump['entries'];
  let backupIndex = 0;

  before(async function () {
    dir = await tempDir('backup');
    backupFile = join(dir, 'cluster.svcbak');
    const names = ['s1', 's2', 's3'];
    sourcePki = await makePki(dir, names, 'source');
    sourcePlans = await planNodes(names);
    const bootstrap = sourcePlans.map((p) => p.member);
    const started = await Promise.all(
      sourcePlans.map((plan) =>
        ChildNode.start(nodeConfig(plan, join(dir, plan.name), sourcePki.tls(plan.name), { bootstrap })),
      ),
    );
    for (const child of started) source.set(child.config.name, child);
  });

  after(async function () {
    await Promise.all([...source.values(), ...restored.values()].map((c) => c.stop().catch(() => undefined)));
    if (dir) await removeDir(dir);
  });

  it('svc backup copies the cluster at a committed index while writes go on; later writes are not in it; verify passes', async function () {
    await waitFor(async () => (await leaderOf(sourcePlans)) !== null, 'a leader', LEADER_TIMEOUT_MS);
    const nodes = [...source.values()];
    for (let i = 0; i < WRITES_BEFORE; i++)
      await nodes[i % nodes.length]!.put(`before/${String(i).padStart(3, '0')}`, { i, phase: 'before' });
    await nodes[1]!.put('before/000', { i: 0, phase: 'overwritten before the backup' });
    // Every member has applied alike: that state is what a backup at this point must hold.
    await waitFor(
      async () => new Set(await Promise.all(nodes.map(async (n) => (await n.dump()).appliedSeq))).size === 1,
      'the members to apply alike',
      CONVERGE_TIMEOUT_MS,
    );
    const before = await nodes[0]!.dump();
    assert.equal(before.entries.length, WRITES_BEFORE);

    // A writer puts unique keys through a follower's store while the backup runs: some acknowledged before the
    // backup began (they must be in it), some after it ended (they must not be).
    const during: string[] = [];
    let stopWriter = false;
    const writer = (async () => {
      for (let i = 0; i < WRITER_PUTS_MAX && !stopWriter; i++) {
        const key = `during/${String(i).padStart(4, '0')}`;
        await nodes[2]!.put(key, { i, phase: 'during' });
        during.push(key);
      }
    })();
    await waitFor(() => during.length >= WRITER_ACKS_AROUND_BACKUP, 'writes before the backup', CONVERGE_TIMEOUT_MS);
    const ackedBeforeBackup = [...during];
    const result = await runCli(['backup', '--out', backupFile, '--json', ...adminFlags(sourcePki, sourcePlans)], {
      cwd: dir,
    });
    const ackedBeforeEnd = during.length;
    await waitFor(
      () => during.length >= ackedBeforeEnd + WRITER_ACKS_AROUND_BACKUP,
      'writes after the backup',
      CONVERGE_TIMEOUT_MS,
    );
    stopWriter = true;
    await writer;
    assert.equal(result.code, 0, result.stderr);
    const written = JSON.parse(result.stdout) as {
      path: string;
      bytes: number;
      manifest: { index: number; term: number; clusterId: string; roster: Array<{ name: string }>; files: unknown[] };
    };
    backupIndex = written.manifest.index;
    assert.equal(written.path, backupFile);
    assert.equal(written.manifest.clusterId, sourcePki.clusterId);
    assert.ok(backupIndex >= before.appliedSeq, `index ${backupIndex} covers every acknowledged write`);
    await waitFor(
      async () => (await nodes[0]!.dump()).entries.length === WRITES_BEFORE + during.length,
      "the writer's keys applied everywhere",
      CONVERGE_TIMEOUT_MS,
    );
    const duringEntries = (await nodes[0]!.dump()).entries.filter((e) => e.key.startsWith('during/'));
    const inBackup = duringEntries.filter((e) => e.version <= backupIndex);
    for (const key of ackedBeforeBackup)
      assert.ok(
        inBackup.some((e) => e.key === key),
        `${key}, acknowledged before the backup began, is in it`,
      );
    for (const key of during.slice(ackedBeforeEnd))
      assert.ok(!inBackup.some((e) => e.key === key), `${key}, acknowledged after the backup ended, is not in it`);
    atBackup = [...before.entries, ...inBackup].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    assert.deepEqual(written.manifest.roster.map((m) => m.name).sort(), ['s1', 's2', 's3']);
    assert.deepEqual(
      (await readdir(dir)).filter((name) => name.includes('.tmp-')),
      [],
      'no temp file is left beside the backup',
    );

    for (let i = 0; i < WRITES_AFTER; i++)
      await nodes[i % nodes.length]!.put(`after/${String(i).padStart(3, '0')}`, { i, phase: 'after' });
    await nodes[2]!.put('before/001', { i: 1, phase: 'overwritten after the backup' });

    const verify = await runCli(['backup', 'verify', backupFile], { cwd: dir });
    assert.equal(verify.code, 0, verify.stderr);
    assert.match(
      verify.stdout,
      new RegExp(`^ok: .*cluster\\.svcbak \\(${written.bytes} bytes, BLAKE3 [0-9a-f]{64}\\)`),
    );
    assert.match(
      verify.stdout,
      new RegExp(`cluster ${sourcePki.clusterId}, index ${backupIndex}, term ${written.manifest.term}`),
    );
    assert.match(verify.stdout, /file store\.json: \d+ bytes, BLAKE3 [0-9a-f]{64}/);
  });

  it('a flipped byte, a cut file and a wrong magic are refused by verify and by restore, with nothing written', async function () {
    const good = await readFile(backupFile);
    const flipped = Buffer.from(good);
    flipped[Math.floor(good.length * 0.75)]! ^= 0x01;
    const wrongMagic = Buffer.from(good);
    wrongMagic[0] = 0x50;
    const bad: Array<[string, Buffer, RegExp]> = [
      ['flipped', flipped, /BLAKE3 .*damaged/],
      ['truncated', good.subarray(0, good.length - 100), /truncated/],
      ['magic', wrongMagic, /not an svc backup \(wrong magic/],
    ];
    const founder = ['--founder', 'x1,127.0.0.1:7001,http://127.0.0.1:8001'];
    for (const [name, bytes, message] of bad) {
      const file = join(dir, `${name}.svcbak`);
      await writeFile(file, bytes);
      const verify = await runCli(['backup', 'verify', file], { cwd: dir });
      assert.equal(verify.code, 1, `${name}: verify exits 1`);
      assert.match(verify.stderr, message, name);
      const missingDir = join(dir, `restore-${name}`);
      const restore = await runCli(['restore', file, '--data-dir', missingDir, ...founder], { cwd: dir });
      assert.equal(restore.code, 1, `${name}: restore exits 1`);
      assert.match(restore.stderr, message, name);
      assert.match(restore.stderr, /nothing was written/);
      await assert.rejects(readdir(missingDir), { code: 'ENOENT' }, `${name}: no data directory was made`);
    }
    // In process from here (each svc run costs seconds of tsx start-up on two shared cores).
    const plan = (dataDir: string, file: string, clusterId?: string): RestorePlan => ({
      file,
      dataDir,
      name: 'x1',
      founders: [{ name: 'x1', grpcAddr: '127.0.0.1:7001', httpAddr: 'http://127.0.0.1:8001' }],
      clusterId,
    });
    // An empty data directory (a mounted volume, say) stays empty.
    const emptyDir = join(dir, 'restore-empty');
    await mkdir(emptyDir);
    await assert.rejects(restoreBackup(plan(emptyDir, join(dir, 'flipped.svcbak'))), /damaged/);
    assert.deepEqual(await readdir(emptyDir), []);
    // The source cluster's own id is refused: a restore always founds a new cluster.
    await assert.rejects(
      restoreBackup(plan(join(dir, 'same-id'), backupFile, sourcePki.clusterId)),
      /is the backed-up cluster's own/,
    );
    await assert.rejects(readdir(join(dir, 'same-id')), { code: 'ENOENT' });
    // A data directory that holds anything is refused too, and left as it was.
    const used = join(dir, 'used');
    await mkdir(used);
    await writeFile(join(used, 'hard-state.json'), '{}');
    await assert.rejects(restoreBackup(plan(used, backupFile)), /is not empty \(hard-state\.json\)/);
    assert.deepEqual(await readdir(used), ['hard-state.json']);
  });

  it('svc restore founds a new cluster that serves exactly the state at the backup index; a joiner installs it; writes go on', async function () {
    // The source cluster still has its later writes; it is stopped before the new cluster starts (two shared cores).
    const s1 = source.get('s1')!;
    assert.deepEqual((await s1.get('after/000'))?.value, { i: 0, phase: 'after' });
    await Promise.all([...source.values()].map((c) => c.stop()));
    source.clear();

    const names = ['r1', 'r2', 'r3', 'r4'];
    const pki = await makePki(dir, names, 'restored');
    assert.notEqual(pki.clusterId, sourcePki.clusterId);
    const plans = await planNodes(names);
    const founders = plans.slice(0, 3);
    const founderFlags = founders.flatMap((p) => ['--founder', `${p.name},${p.member.grpcAddr},${p.member.httpAddr}`]);
    for (const plan of founders) {
      const result = await runCli(
        [
          'restore',
          backupFile,
          '--data-dir',
          join(dir, plan.name),
          '--name',
          plan.name,
          '--cluster-id',
          pki.clusterId,
          ...founderFlags,
        ],
        { cwd: dir },
      );
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, new RegExp(`NEW cluster ${pki.clusterId}`));
    }
    const bootstrap = founders.map((p) => p.member);
    const started = await Promise.all(
      founders.map((plan) =>
        ChildNode.start(nodeConfig(plan, join(dir, plan.name), pki.tls(plan.name), { bootstrap })),
      ),
    );
    for (const child of started) {
      restored.set(child.config.name, child);
      // Recovered from the restored artifact: the state at the backup's index, before any new entry.
      assert.equal(child.startStatus?.appliedSeq, backupIndex, `${child.config.name} starts at the backup's index`);
    }
    await waitFor(
      async () => (await leaderOf(founders)) !== null,
      'a leader of the restored cluster',
      LEADER_TIMEOUT_MS,
    );
    for (const child of started) assert.deepEqual((await child.dump()).entries, atBackup, child.config.name);

    const joinerPlan = plans[3]!;
    const joiner = await ChildNode.start(
      nodeConfig(joinerPlan, join(dir, joinerPlan.name), pki.tls(joinerPlan.name), {
        seeds: founders.map((p) => p.member.grpcAddr),
      }),
    );
    restored.set(joinerPlan.name, joiner);
    await waitFor(
      async () => (await joiner.dump()).appliedSeq >= backupIndex,
      'the joiner to install the restored state',
      CONVERGE_TIMEOUT_MS,
    );
    assert.deepEqual((await joiner.dump()).entries, atBackup, 'the joiner holds the backed-up state');

    // Exactly the backup: the writes made after it are absent, the overwrite before it is there.
    const r1 = restored.get('r1')!;
    assert.equal(await r1.get('after/000'), null);
    assert.deepEqual((await r1.get('before/001'))?.value, { i: 1, phase: 'before' });
    assert.deepEqual((await r1.get('before/000'))?.value, { i: 0, phase: 'overwritten before the backup' });
    const value: JsonObject = { written: 'after the restore' };
    await restored.get('r2')!.put('restored/new', value);
    await waitFor(
      async () => JSON.stringify((await joiner.get('restored/new'))?.value) === JSON.stringify(value),
      'a write to the new cluster to reach the joiner',
      CONVERGE_TIMEOUT_MS,
    );
    const status = await getStatus(founders[0]!.member.httpAddr);
    assert.deepEqual(status.members.map((m) => m.name).sort(), names);
  });
});
