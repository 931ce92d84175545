// The flight recorder end to end: three real nodes in child processes over mutual TLS record every engine
// step (on by default). The test writes, kills the leader with -9, writes on under the new leader, restarts
// the old one and stops all three; then every member's recording replays on this build's engine with the
// identical effects digest at every step, the partial-history checkers pass, and the store's values are
// nowhere in the recordings. A planted non-determinism (sim/replay/planted.ts) is caught at the exact step.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromiumPath, launchChromium } from '../browser.js';
import type { NodeConfig } from '../../cli/node/config.js';
import { describeEffect } from '../../recording/describe.js';
import { readRecording, recordingFiles } from '../../recording/reader.js';
import type { BundleManifest } from '../../recording/bundle.js';
import { expandBundles, replayPaths, type ReplayOutcome } from '../../sim/replay/cli.js';
import { replayTrace } from '../../sim/replay/trace.js';
import { runScenarioFile } from '../../sim/scenario.js';
import { buildViewModel } from '../../sim/view/model.js';
import { writeView } from '../../sim/view/write.js';
import { plantedWallClock } from '../../sim/replay/planted.js';
import { replayRun } from '../../sim/replay/replay.js';
import { ChildNode } from './child-node.js';
import { getStatus, makePki, nodeConfig, planNodes, removeDir, tempDir, waitFor, type Pki } from './harness.js';

const WRITES_BEFORE_CRASH = 30;
const WRITES_AFTER_CRASH = 30;
const SECRET = 'p4ssw0rd-never-recorded';

describe('flight recorder: a real 3-node cluster replays step for step', function () {
  this.timeout(180_000);
  let dir: string;
  const configs = new Map<string, NodeConfig>();
  const children = new Map<string, ChildNode>();
  let outcome: ReplayOutcome | null = null;
  let killed = '';
  let pki: Pki;
  let bundleFile = '';

  async function leaderName(exclude = ''): Promise<string | null> {
    for (const [name, config] of configs) {
      if (name === exclude || !children.has(name)) continue;
      try {
        const s = await getStatus(`http://${config.httpListen}`);
        if (s.role === 'leader') return name;
      } catch {
        // down or starting
      }
    }
    return null;
  }

  async function writeThrough(names: string[], count: number, prefix: string): Promise<void> {
    let written = 0;
    for (let i = 0; written < count && i < count * 20; i++) {
      const name = names[i % names.length]!;
      try {
        await children.get(name)!.put(`${prefix}/${i}`, { secret: SECRET, i });
        written++;
      } catch {
        // not acknowledged (no leader yet): try again
      }
    }
    assert.equal(written, count, `${count} writes acknowledged`);
  }

  before(async function () {
    dir = await tempDir('recording');
    bundleFile = join(dir, 'incident.tar.gz');
    const names = ['r1', 'r2', 'r3'];
    pki = await makePki(dir, names);
    const plans = await planNodes(names);
    const bootstrap = plans.map((p) => p.member);
    for (const plan of plans)
      // Info lines, so the bundle's logs hold something to check (the children's stdout is not shown).
      configs.set(
        plan.name,
        nodeConfig(plan, join(dir, plan.name), pki.tls(plan.name), { bootstrap }, { logLevel: 'info' }),
      );
    const started = await Promise.all(names.map((name) => ChildNode.start(configs.get(name)!)));
    for (const child of started) children.set(child.config.name, child);
  });

  after(async function () {
    await Promise.all([...children.values()].map((c) => c.stop().catch(() => undefined)));
    // SVC_TEST_KEEP_RECORDING=1 keeps the recordings (and the page, replay.html) to look at afterwards.
    if (process.env.SVC_TEST_KEEP_RECORDING === '1') process.stdout.write(`      kept ${dir}\n`);
    else if (dir) await removeDir(dir);
  });

  it('writes, kill -9 of the leader, a restart: every member replays with identical digests at every step', async function () {
    await waitFor(async () => (await leaderName()) !== null, 'a leader', 15_000);
    const oldLeader = (killed = (await leaderName())!);
    const survivors = [...configs.keys()].filter((n) => n !== oldLeader);
    await writeThrough([...configs.keys()], WRITES_BEFORE_CRASH, 'before');
    await children.get(oldLeader)!.kill9();
    children.delete(oldLeader);
    await waitFor(async () => (await leaderName(oldLeader)) !== null, 'a new leader among the survivors', 15_000);
    await writeThrough(survivors, WRITES_AFTER_CRASH, 'after');
    children.set(oldLeader, await ChildNode.start(configs.get(oldLeader)!));
    await writeThrough([...configs.keys()], 10, 'rejoined');
    // svc debug bundle gathers every member's recording, status, metrics and recent log lines through the
    // admin API, with the admin certificate, while the cluster runs, into one .tar.gz.
    const admin = pki.adminTls() as { caFile: string; certFile: string; keyFile: string };
    const bundle = spawnSync(
      process.execPath,
      [
        'bin/svc.js',
        'debug',
        'bundle',
        '--out',
        bundleFile,
        '--window',
        '10m',
        '--node',
        configs.get(survivors[0]!)!.grpcListen,
        '--tls-ca',
        admin.caFile,
        '--tls-cert',
        admin.certFile,
        '--tls-key',
        admin.keyFile,
        '--tls-server-name',
        'localhost',
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(bundle.status, 0, bundle.stdout + bundle.stderr);
    assert.match(bundle.stdout, /^bundle=.*\.tar\.gz members=3 segments=\d+ bytes=\d+/m);
    assert.deepEqual(
      (await readdir(dir)).filter((n) => n.startsWith('.svc-bundle-') || n.endsWith('.partial')),
      [],
      'one file: the staging folder is gone',
    );
    await Promise.all([...children.values()].map((c) => c.stop()));
    children.clear();

    // The bundle replays like the data directories (up to the steps written when it was taken).
    const unpacked = expandBundles([bundleFile]);
    try {
      assert.deepEqual(
        unpacked.paths.map((p) => basename(dirname(p))),
        ['r1', 'r2', 'r3'],
      );
      const bundled = replayPaths(unpacked.paths, () => undefined);
      assert.ok(bundled.ok, 'the bundle replays identically');
      assert.equal(bundled.runs.length, 4, "the bundle holds every run, the killed leader's first one too");
      const root = dirname(dirname(unpacked.paths[0]!));
      const manifest = JSON.parse(await readFile(join(root, 'bundle.json'), 'utf8')) as BundleManifest;
      assert.deepEqual(
        manifest.members.map((m) => [m.name, m.error]),
        [...configs.keys()].map((name) => [name, '']),
      );
      for (const name of configs.keys()) {
        const status = JSON.parse(await readFile(join(root, name, 'status.json'), 'utf8')) as {
          name: string;
          metricsAddr: string;
        };
        assert.equal(status.name, name);
        assert.equal(
          status.metricsAddr,
          `http://${configs.get(name)!.metricsListen}`,
          'status names the metrics listener',
        );
        // Scraped at the member's metrics listener: the real exposition, not a note.
        assert.match(await readFile(join(root, name, 'metrics.txt'), 'utf8'), /^# HELP svc_/m);
        // The node's recent log lines, from its in-memory ring: its own, in the window.
        const logs = (await readFile(join(root, name, 'logs.jsonl'), 'utf8')).trim().split('\n');
        assert.ok(logs.length > 0, `${name} has log lines`);
        for (const line of logs) assert.equal((JSON.parse(line) as { node: string }).node, name);
        assert.ok(
          logs.some((l) => l.includes('node started')),
          `${name}'s logs hold its start`,
        );
      }
    } finally {
      unpacked.cleanup();
    }

    const recordings = [...configs.values()].map((c) => join(c.dataDir, 'recording'));
    const lines: string[] = [];
    outcome = replayPaths(recordings, (line) => lines.push(line));
    process.stdout.write(`${lines.map((l) => `      ${l}`).join('\n')}\n`);
    assert.ok(outcome.ok, lines.join('\n'));
    const oldLeaderRuns = outcome.runs.filter((r) => r.node === oldLeader);
    assert.equal(oldLeaderRuns.length, 2, 'the killed leader recorded two runs: before the kill and after its restart');
    for (const run of outcome.runs) {
      assert.equal(run.skipped, '', `${run.node} ${run.run} replayed from its start`);
      assert.ok(run.recorded > 10, `${run.node} ${run.run} recorded steps (${run.recorded})`);
      assert.equal(run.matched, run.recorded, `${run.node} ${run.run}: every step identical`);
    }
    assert.ok(
      outcome.runs.some((r) =>
        r.steps.some((s) => s.effects.some((e) => e.type === 'roleChanged' && e.role === 'leader')),
      ),
      'a leader election is in the replayed history',
    );

    // Secrets never enter the recording: the value is not there in plain or base64.
    for (const recording of recordings) {
      for (const file of recordingFiles(recording)) {
        const text = await readFile(file, 'utf8');
        assert.ok(!text.includes(SECRET), `${file} holds no value`);
        assert.ok(!text.includes(Buffer.from(SECRET).toString('base64').slice(0, 16)), `${file} holds no base64 value`);
      }
    }

    // A planted non-determinism is caught at the exact step: the first heartbeat sent after a tick (the
    // planted handler) carries the replaying machine's clock.
    const leaderRun = readRecording(recordings[[...configs.keys()].indexOf(oldLeader)]!)[0]!;
    // Format 3 records no effect texts: the effects are the faithful replay's (its digests all matched above).
    const leaderSteps = replayRun(leaderRun, { keepSteps: true }).steps;
    let perturbed = false;
    let expected = 0;
    for (const step of leaderSteps) {
      if (step.input.type === 'tick') perturbed = true;
      else if (step.input.type === 'stats') perturbed = false;
      const fx = step.effects.map(describeEffect);
      if (perturbed && fx.some((text) => / Heartbeat /.test(text) && text.startsWith('send '))) {
        expected = step.n;
        break;
      }
    }
    assert.ok(expected > 0, 'the old leader sent a heartbeat on a tick');
    const planted = replayRun(leaderRun, { engine: plantedWallClock() });
    assert.ok(planted.divergence, 'the planted clock read diverges');
    assert.equal(planted.divergence.step, expected, 'at the first step the clock read reaches an effect');
    assert.equal(planted.matched, expected - 1);
    assert.equal(
      (JSON.parse(planted.divergence.input) as { type: string }).type,
      leaderRun.steps[expected - 1]!.in.type,
    );
    assert.ok(planted.divergence.replayed.effects.some((fx) => / Heartbeat /.test(fx)));
    // Both lists: the node's own effects of that step (recording.effectTexts, on by default) beside the replay's.
    assert.deepEqual(planted.divergence.recorded.effects, leaderRun.steps[expected - 1]!.fx);
    assert.ok(planted.divergence.recorded.effects.some((fx) => / Heartbeat /.test(fx)));
    process.stdout.write(
      `      planted wall-clock read caught at step ${planted.divergence.step} of ${leaderRun.run}\n`,
    );
  });

  it('the viewer draws the three members as one space-time diagram on the wall-clock axis (Chromium)', async function () {
    if (!outcome) this.skip();
    const runs = outcome!.runs;
    const trace = replayTrace(runs, 'real 3-node recording');
    const traceFile = join(dir, 'replay.jsonl');
    const pageFile = join(dir, 'replay.html');
    writeFileSync(traceFile, `${trace.lines.join('\n')}\n`);
    const model = buildViewModel(trace.lines.join('\n'));
    assert.deepEqual(model.nodes, ['r1', 'r2', 'r3']);
    assert.equal(model.wallStartMs, trace.wallStartMs);
    const delivered = model.messages.filter((m) => m.fate === 'delivered');
    const calls = model.messages.filter((m) => !m.answer);
    // Every call is either matched to the input that received it or failed at its caller (lost: the
    // receiver was down), except a call sent within a second of the end of its receiver's or its caller's
    // run: a kill -9 loses the steps still buffered (up to recordingFlushMs), and a stop ends calls unanswered.
    const runEndsUs = runs.map((r) => ({
      lane: model.nodes.indexOf(r.node),
      endUs: ((r.steps.at(-1)?.atMs ?? 0) - trace.wallStartMs) * 1000,
    }));
    const unexplained = calls.filter(
      (m) =>
        m.fate === 'undelivered' &&
        !runEndsUs.some(
          (end) => (end.lane === m.to || end.lane === m.from) && Math.abs(end.endUs - m.sentUs) <= 1_000_000,
        ),
    );
    assert.deepEqual(
      unexplained.map((m) => m.text),
      [],
      'calls neither received nor failed',
    );
    // Every call is explained above; how many were delivered rather than failed at their caller depends on how long
    // the killed leader stayed down (its peers' calls to it fail meanwhile): 138 of 320 in one CI run.
    assert.ok(trace.matched > calls.length / 4, `${trace.matched} of ${calls.length} calls matched across members`);
    process.stdout.write(
      `      viewer: ${calls.length} calls, ${trace.matched} matched across members, ${calls.filter((m) => m.fate === 'lost').length} failed at the caller\n`,
    );
    assert.ok(
      delivered.some((m) => m.answer),
      'answers are linked back to their calls',
    );
    assert.ok(model.roles.some((r) => r.role === 'leader') && model.roles.some((r) => r.role === 'down'));
    writeView(traceFile, pageFile, 'real 3-node recording');
    if (!existsSync(chromiumPath)) this.skip();
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 600 } });
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(String(error)));
      await page.goto(pathToFileURL(pageFile).href);
      await page.locator('.lane').first().waitFor({ timeout: 30_000 });
      assert.deepEqual(await page.locator('.lane').allInnerTexts(), ['r1', 'r2', 'r3']);
      await page.click('#zoom-fit');
      await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
      const data = await page
        .locator('#diagram')
        .evaluate((c) => ({ ...(c as unknown as { dataset: Record<string, string> }).dataset }));
      assert.equal(Number(data.arrows) + Number(data.aggregated), model.messages.length, 'every message is drawn');
      // The axis is wall-clock time: the range starts at the first recorded step's UTC time of day.
      const first = new Date(trace.wallStartMs).toISOString().slice(11, 19);
      assert.match(await page.locator('#range').innerText(), new RegExp(`^${first}\\.\\d{3} UTC`));
      await page.screenshot({ path: join(dir, 'replay.png') });
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
    }
  });

  it('npm run sim -- --replay FILE.tar.gz: the command replays all three from the bundle, and --to-scenario turns the incident into a passing scenario', function () {
    if (!outcome) this.skip();
    const scenarioFile = join(dir, 'incident.txt');
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        'sim/cli.ts',
        '--replay',
        bundleFile,
        '--to-scenario',
        scenarioFile,
        '--view-out',
        join(dir, 'v.html'),
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(run.status, 0, run.stdout + run.stderr);
    const last = run.stdout.trim().split('\n').at(-1)!;
    assert.match(last, /^replay result=pass members=3 runs=4 steps=r1:(\d+)\/\1,r2:(\d+)\/\2,r3:(\d+)\/\3$/);
    assert.match(run.stdout, /^view=/m);
    const script = readFileSync(scenarioFile, 'utf8');
    process.stdout.write(`${script.replace(/^/gm, '      | ')}\n`);
    assert.match(script, new RegExp(`^crash ${killed}\\b`, 'm'), 'the kill -9 is in the scenario');
    assert.match(script, new RegExp(`^until not leader ${killed}\\b`, 'm'), 'and the leader change it caused');
    assert.match(script, new RegExp(`^restart ${killed}\\b`, 'm'), 'and the restart');
    const result = runScenarioFile(scenarioFile);
    assert.ok(result.commands > 5);
  });
});
