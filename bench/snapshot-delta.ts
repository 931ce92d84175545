// Snapshot staging bench (not a test): what one staging costs a member, whole against layered. It fills a
// StoreStateMachine with --keys new keys (bench/cluster.ts's values and request ids), stages it whole into a
// SnapshotStore in a temp directory, then --rounds times applies --delta more writes (new keys, or with
// --rewrite existing ones) and stages again: layered (StoreSnapshots' rule: a delta over the last artifact) and,
// on a second store beside it, whole (snapshotLayerCountMax 1, every staging the whole state, as before layers).
// Each staging's process CPU (encoding, hashing and writing: the threadpool's work too), wall time and bytes
// written. Both are paced as a node paces them (storageLimits.snapshotStageLoopSharePercent).
//
//   npx tsx bench/snapshot-delta.ts [--keys 800000] [--delta 100000] [--rounds 3] [--rewrite]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { EntryKind } from '../engine/types.js';
import { singleMemberSnapshotMeta as metaAt } from '../test/store/snapshot-fixtures.js';
import { encodeCommand } from '../store/command.js';
import { storeLimits } from '../store/limits.js';
import { StoreSnapshots } from '../store/snapshot-files.js';
import { StoreStateMachine } from '../store/state-machine.js';
import { SnapshotStore } from '../transports/storage/snapshots.js';
import { SVC_VALUE_CHARS } from './cluster/load.js';
import { numberArg } from './cluster/trace-files.js';

/** stageOnce stages `snapshots`' capture into `store` and measures it. */
async function stageOnce(
  sm: StoreStateMachine,
  snapshots: StoreSnapshots,
  store: SnapshotStore,
): Promise<{ cpuMs: number; wallMs: number; writtenMb: number; layers: number }> {
  const cpuFrom = process.cpuUsage();
  const wallFrom = performance.now();
  const capture = snapshots.capture();
  const files = await capture.encode(store.stagingPause());
  const artifact = await store.stage(metaAt(sm.appliedSeq), files, { term: 1, leaderRegion: 1 });
  capture.staged(artifact);
  const cpu = process.cpuUsage(cpuFrom);
  const written = files.reduce((sum, file) => sum + ('bytes' in file ? file.bytes.length : 0), 0);
  return {
    cpuMs: (cpu.user + cpu.system) / 1000,
    wallMs: performance.now() - wallFrom,
    writtenMb: written / 1e6,
    layers: capture.layerCount,
  };
}

async function main(): Promise<void> {
  const keyCount = numberArg('keys', 800_000);
  const deltaCount = numberArg('delta', 100_000);
  const rounds = numberArg('rounds', 3);
  const rewrite = process.argv.includes('--rewrite');
  const sm = new StoreStateMachine();
  let written = 0;
  const write = (key: number): void => {
    written += 1;
    const command = {
      op: 'put' as const,
      key: `bench/c64/w${key % 64}/${key}`,
      value: { d: String(written).padEnd(SVC_VALUE_CHARS, 'x') },
      requestId: `bench-${written}`,
    };
    sm.apply({ seq: written, term: 1, kind: EntryKind.EventBatch, data: encodeCommand(command) });
  };
  for (let i = 1; i <= keyCount; i++) write(i);
  const dir = await mkdtemp(join(tmpdir(), 'snapshot-delta-'));
  try {
    const layeredStore = await SnapshotStore.open(join(dir, 'layered'));
    const wholeStore = await SnapshotStore.open(join(dir, 'whole'));
    const layered = new StoreSnapshots(sm, storeLimits());
    const whole = new StoreSnapshots(sm, storeLimits({ snapshotLayerCountMax: 1 }));
    // The first staging of each is whole; their changed-key counts are the state machine's, shared, so each
    // round marks once: the layered one captures first (it reads the changed keys), the whole one after.
    const first = await stageOnce(sm, layered, layeredStore);
    await stageOnce(sm, whole, wholeStore);
    console.log(
      `${keyCount} keys: first staging (whole) ${first.cpuMs.toFixed(0)} ms CPU, ${first.wallMs.toFixed(0)} ms wall, ${first.writtenMb.toFixed(1)} MB`,
    );
    for (let round = 1; round <= rounds; round++) {
      for (let i = 1; i <= deltaCount; i++)
        write(rewrite ? 1 + ((round * 7919 + i * 104729) % keyCount) : keyCount + (round - 1) * deltaCount + i);
      const delta = await stageOnce(sm, layered, layeredStore);
      const all = await stageOnce(sm, whole, wholeStore);
      console.log(
        `round ${round}: ${sm.size} documents, ${deltaCount} ${rewrite ? 'rewrites' : 'new keys'} since; ` +
          `layered (${delta.layers} layers) ${delta.cpuMs.toFixed(0)} ms CPU, ${delta.wallMs.toFixed(0)} ms wall, ${delta.writtenMb.toFixed(1)} MB written; ` +
          `whole ${all.cpuMs.toFixed(0)} ms CPU, ${all.wallMs.toFixed(0)} ms wall, ${all.writtenMb.toFixed(1)} MB; ` +
          `CPU layered/whole ${(delta.cpuMs / all.cpuMs).toFixed(2)}`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

void main();
