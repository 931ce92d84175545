// Crashes with real processes: three nodes in child processes over mutual TLS. The leader is
// killed with SIGKILL while two writers keep writing through the followers; a new leader takes
// over, no acknowledged write is lost, and the old leader restarts from its data directory,
// rejoins and converges. Then a follower's WAL is damaged before its tail: it restarts with the
// reseed marker latched (/health 503), reinstalls from the leader's snapshot and turns 200.
import assert from 'node:assert/strict';
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsonObject } from '../../store/document-store.js';
import type { NodeConfig } from '../../cli/node/config.js';
import { ChildNode } from './child-node.js';
import {
  getStatus,
  httpGet,
  httpStatus,
  makePki,
  nodeConfig,
  planNodes,
  removeDir,
  tempDir,
  waitFor,
  type PlannedNode,
  type StatusDoc,
} from './harness.js';

/** Snapshots every 50 applied entries with nothing retained, so a reseeding node must install one. */
const ENGINE_LIMITS = { snapshotEntryCountThreshold: 50, snapshotLogBytesPercentMin: 0, compactionRetainEntryCount: 0 };
const WRITES_BEFORE_CRASH = 40;
const WRITES_AFTER_CRASH = 40;
const WRITER_PUTS_MAX = 2_000;

describe('node: crashes with real processes (kill -9)', function () {
  this.timeout(120_000);
  let dir: string;
  let plans: PlannedNode[];
  const configs = new Map<string, NodeConfig>();
  const children = new Map<string, ChildNode>();
  const acknowledged = new Map<string, { value: JsonObject; version: number }>();

  async function statusOf(name: string): Promise<StatusDoc | null> {
    try {
      return await getStatus(configs.get(name)!.httpAdvertise ?? `http://${configs.get(name)!.httpListen}`);
    } catch {
      return null;
    }
  }

  async function leaderName(exclude = ''): Promise<string | null> {
    let best: StatusDoc | null = null;
    for (const name of children.keys()) {
      if (name === exclude) continue;
      const s = await statusOf(name);
      if (s?.role === 'leader' && (!best || s.term > best.term)) best = s;
    }
    return best?.name ?? null;
  }

  /** writer puts keys through one node until told to stop; only answered puts count as acknowledged. */
  function startWriter(name: string, stopAt: () => boolean): { done: Promise<number> } {
    const done = (async () => {
      let errors = 0;
      for (let i = 0; i < WRITER_PUTS_MAX && !stopAt(); i++) {
        const key = `${name}/${String(i).padStart(5, '0')}`;
        const value = { writer: name, i };
        try {
          const { version } = await children.get(name)!.put(key, value);
          acknowledged.set(key, { value, version });
        } catch {
          errors++; // not acknowledged: it may or may not have committed
        }
      }
      return errors;
    })();
    return { done };
  }

  before(async function () {
    dir = await tempDir('crash');
    const names = ['c1', 'c2', 'c3'];
    const pki = await makePki(dir, names);
    plans = await planNodes(names);
    const bootstrap = plans.map((p) => p.member);
    for (const plan of plans) {
      configs.set(
        plan.name,
        nodeConfig(plan, join(dir, plan.name), pki.tls(plan.name), { bootstrap }, { engineLimits: ENGINE_LIMITS }),
      );
    }
    const started = await Promise.all(names.map((name) => ChildNode.start(configs.get(name)!)));
    for (const child of started) children.set(child.config.name, child);
  });

  after(async function () {
    await Promise.all([...children.values()].map((c) => c.stop().catch(() => undefined)));
    if (dir) await removeDir(dir);
  });

  it('kill -9 of the leader mid-write: a new leader, no acknowledged write lost, the old leader restarts from disk and converges', async function () {
    await waitFor(async () => (await leaderName()) !== null, 'a leader', 15_000);
    const oldLeader = (await leaderName())!;
    const oldTerm = (await statusOf(oldLeader))!.term;
    const writers = [...children.keys()].filter((n) => n !== oldLeader);
    let stop = false;
    const running = writers.map((name) => startWriter(name, () => stop));
    try {
      await waitFor(
        () => acknowledged.size >= WRITES_BEFORE_CRASH,
        `${WRITES_BEFORE_CRASH} acknowledged writes`,
        20_000,
      );
      const ackedAtCrash = acknowledged.size;
      await children.get(oldLeader)!.kill9();

      await waitFor(async () => (await leaderName(oldLeader)) !== null, 'a new leader among the survivors', 15_000);
      const newLeader = (await leaderName(oldLeader))!;
      assert.notEqual(newLeader, oldLeader);
      assert.ok((await statusOf(newLeader))!.term > oldTerm, 'the new leader leads a later term');
      await waitFor(
        () => acknowledged.size >= ackedAtCrash + WRITES_AFTER_CRASH,
        'writes to go on under the new leader',
        30_000,
      );
    } finally {
      stop = true;
      await Promise.all(running.map((w) => w.done));
    }

    // The old leader comes back on its own data directory and ports.
    const restarted = await ChildNode.start(configs.get(oldLeader)!);
    children.set(oldLeader, restarted);
    assert.ok(restarted.startStatus!.lastSeq > 0, `restarted from its WAL (lastSeq ${restarted.startStatus!.lastSeq})`);
    assert.ok(restarted.startStatus!.term >= oldTerm);
    const leader = (await leaderName())!;
    const leaderHttp = `http://${configs.get(leader)!.httpListen}`;
    const commitAfter = (await getStatus(leaderHttp)).commitSeq;
    await waitFor(
      async () => (await httpStatus(`http://${configs.get(oldLeader)!.httpListen}/health`)) === 200,
      'the restarted node to turn healthy',
      20_000,
    );
    await waitFor(
      async () => ((await statusOf(oldLeader))?.appliedSeq ?? 0) >= commitAfter,
      'the restarted node to apply everything',
      20_000,
    );

    // Every acknowledged write is on every node, at the version it was acknowledged with.
    for (const [name, child] of children) {
      const dump = await child.dump();
      const byKey = new Map(dump.entries.map((e) => [e.key, e]));
      for (const [key, { value, version }] of acknowledged) {
        const held = byKey.get(key);
        assert.ok(held, `${name} lost acknowledged write ${key}`);
        assert.deepEqual({ value: held.value, version: held.version }, { value, version }, `${name}: ${key}`);
      }
    }
    const dumps = await Promise.all([...children.values()].map((c) => c.dump()));
    const target = Math.min(...dumps.map((d) => d.appliedSeq));
    assert.ok(target >= commitAfter);
    // The replicas agree entry for entry (compare at the same applied seqno).
    await waitFor(
      async () => {
        const now = await Promise.all([...children.values()].map((c) => c.dump()));
        return (
          now.every((d) => d.appliedSeq === now[0]!.appliedSeq) &&
          now.every((d) => JSON.stringify(d.entries) === JSON.stringify(now[0]!.entries))
        );
      },
      'identical replicas',
      10_000,
    );
    // And the restarted node takes writes again, and reads them back at once.
    const written = await restarted.put('after/restart', { ok: true });
    assert.deepEqual(await restarted.get('after/restart'), { value: { ok: true }, version: written.version });
    const health = await httpGet(`http://${configs.get(oldLeader)!.metricsListen}/metrics`);
    assert.match(health.text, /svc_wal_sync_seconds_count \d+/);
  });

  it('a WAL damaged before its tail: the node restarts with the reseed marker, reinstalls from a snapshot, turns 200', async function () {
    const leader = (await leaderName())!;
    const victim = [...children.keys()].find((n) => n !== leader)!;
    // Enough writes for the leader to snapshot and compact past the victim's log start.
    for (let i = 0; i < 60; i++) await children.get(leader)!.put(`reseed/${i}`, { i });
    const leaderHttp = `http://${configs.get(leader)!.httpListen}`;
    await waitFor(async () => (await getStatus(leaderHttp)).compactedSeq > 0, 'the leader to compact', 10_000);
    await children.get(victim)!.stop();
    const walDir = join(configs.get(victim)!.dataDir, 'wal');
    const segments = (await readdir(walDir)).filter((f) => f.endsWith('.wal')).sort();
    const handle = await open(join(walDir, segments[0]!), 'r+');
    try {
      // Byte 12 lies in the first record's body: its CRC fails and valid records follow it.
      const byte = Buffer.alloc(1);
      await handle.read(byte, 0, 1, 12);
      byte[0] = byte[0]! ^ 0xff;
      await handle.write(byte, 0, 1, 12);
      await handle.sync();
    } finally {
      await handle.close();
    }
    const restarted = await ChildNode.start(configs.get(victim)!);
    children.set(victim, restarted);
    assert.equal(restarted.startStatus!.reseed, true, 'the reseed marker is latched at start');
    const victimHttp = `http://${configs.get(victim)!.httpListen}`;
    const first = await httpGet(`${victimHttp}/health`);
    assert.equal(first.status, 503, first.text);
    await waitFor(
      async () => (await httpStatus(`${victimHttp}/health`)) === 200,
      'the reseeded node to turn healthy',
      30_000,
    );
    const s = await getStatus(victimHttp);
    assert.equal(s.reseed, false);
    assert.ok(s.snapshotSeq > 0, 'it installed a snapshot');
    const dump = await restarted.dump();
    const byKey = new Map(dump.entries.map((e) => [e.key, e]));
    for (const [key, { version }] of acknowledged)
      assert.equal(byKey.get(key)?.version, version, `${key} after the reseed`);
    for (let i = 0; i < 60; i++) assert.ok(byKey.has(`reseed/${i}`));
  });
});
