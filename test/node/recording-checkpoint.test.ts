// A recording whose run start has rotated out of the ring still replays (format 3): three real nodes in
// child processes (mutual TLS) record into rings of a few small segments while they take writes, until
// every member's run line is gone from its ring; each member's recording then replays from the earliest
// checkpoint left (the engine's state at that segment's start) with identical effect digests at every step.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { NodeConfig } from '../../cli/node/config.js';
import { readRecording } from '../../recording/reader.js';
import { replayPaths } from '../../sim/replay/cli.js';
import { toScenario } from '../../sim/replay/to-scenario.js';
import { replayTrace } from '../../sim/replay/trace.js';
import { ChildNode } from './child-node.js';
import { getStatus, makePki, nodeConfig, planNodes, removeDir, tempDir, waitFor } from './harness.js';

/** Small segments, so a few hundred writes rotate the start out; snapshots keep the engines' logs (and so the checkpoints) short. */
const RECORDING = { limits: { recordingSegmentBytesMax: 48 * 1024, recordingBytesMax: 120 * 1024 } };
const ENGINE_LIMITS = {
  snapshotEntryCountThreshold: 100,
  snapshotLogBytesPercentMin: 0,
  compactionRetainEntryCount: 20,
};
const WRITES_MAX = 4_000;

describe('flight recorder: a run whose start rotated out replays from a checkpoint', function () {
  this.timeout(240_000);
  let dir: string;
  const configs = new Map<string, NodeConfig>();
  const children: ChildNode[] = [];

  before(async function () {
    dir = await tempDir('recording-checkpoint');
    const names = ['c1', 'c2', 'c3'];
    const pki = await makePki(dir, names);
    const plans = await planNodes(names);
    const bootstrap = plans.map((p) => p.member);
    for (const plan of plans)
      configs.set(
        plan.name,
        nodeConfig(
          plan,
          join(dir, plan.name),
          pki.tls(plan.name),
          { bootstrap },
          { recording: RECORDING, engineLimits: ENGINE_LIMITS },
        ),
      );
    children.push(...(await Promise.all(names.map((name) => ChildNode.start(configs.get(name)!)))));
  });

  after(async function () {
    await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
    if (dir) await removeDir(dir);
  });

  const recordingOf = (name: string): string => join(configs.get(name)!.dataDir, 'recording');
  const startRotatedOut = (name: string): boolean => {
    const runs = readRecording(recordingOf(name));
    return runs.length === 1 && runs[0]!.head === null && runs[0]!.checkpoint !== null;
  };

  it('every member replays from its earliest checkpoint with identical digests at every step', async function () {
    const leader = async (): Promise<ChildNode> => {
      for (const child of children) {
        if ((await getStatus(`http://${child.config.httpListen}`).catch(() => null))?.role === 'leader') return child;
      }
      throw new Error('no leader yet');
    };
    await waitFor(async () => (await leader().catch(() => null)) !== null, 'a leader', 15_000);
    let written = 0;
    while (written < WRITES_MAX && ![...configs.keys()].every(startRotatedOut)) {
      const target = await leader();
      await Promise.all(Array.from({ length: 20 }, (_, i) => target.put(`k/${written + i}`, { i: written + i })));
      written += 20;
    }
    assert.ok([...configs.keys()].every(startRotatedOut), `every member's run start rotated out (${written} writes)`);
    await Promise.all(children.map((c) => c.stop()));
    children.length = 0;

    const lines: string[] = [];
    const outcome = replayPaths([...configs.keys()].map(recordingOf), (line) => void lines.push(line));
    process.stdout.write(`      after ${written} writes:\n${lines.map((l) => `      ${l}\n`).join('')}`);
    assert.ok(outcome.ok, lines.join('\n'));
    assert.equal(outcome.runs.length, 3);
    for (const run of outcome.runs) {
      assert.ok(run.fromCheckpoint > 0, `${run.node} started from a checkpoint`);
      assert.equal(run.divergence, null);
      assert.equal(run.skipped, '');
      // Every recorded step after the checkpoint replayed (how many fit in the ring's 48 KiB segments after it
      // depends on the lines' size: with effect texts, 80-129 here).
      assert.ok(run.matched >= 20 && run.matched === run.recorded, `${run.node}: ${run.matched}/${run.recorded}`);
    }
    assert.ok(
      lines.some((l) => /started from the checkpoint after step \d+/.test(l)),
      'the replay says so',
    );
    // The viewer's trace and --to-scenario take runs that start from a checkpoint as well.
    const trace = replayTrace(outcome.runs, 'from checkpoints');
    assert.ok(trace.messages > 0 && trace.matched > 0, `${trace.messages} messages, ${trace.matched} matched`);
    assert.match(toScenario(outcome.runs, 'from checkpoints'), /expect safe/);
  });
});
