// Only the snapshot part of bench/cluster.ts:
//   npx tsx bench/cluster/snap-probe.ts [MiB] [rounds] [--cpu-prof DIR] [--only drained|install]
// With --cpu-prof, this process and the serving child write .cpuprofile files to DIR and their
// summaries are printed.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Session } from 'node:inspector/promises';
import { writeFile } from 'node:fs/promises';
import { summarizeProfiles } from './profile.js';
import { measureSnapshotTransfer } from './snapshot.js';

const args = process.argv.slice(2);
const profIndex = args.indexOf('--cpu-prof');
const profDir = profIndex >= 0 ? resolve(args[profIndex + 1] ?? 'snap-prof') : null;
const onlyIndex = args.indexOf('--only');
const onlyArg = onlyIndex >= 0 ? args[onlyIndex + 1] : undefined;
if (onlyArg !== undefined && onlyArg !== 'drained' && onlyArg !== 'install')
  throw new Error('--only takes drained or install');
const only: 'drained' | 'install' | undefined = onlyArg;
const flagged = new Set([profIndex, onlyIndex].filter((i) => i >= 0).flatMap((i) => [i, i + 1]));
const positional = args.filter((_, i) => !flagged.has(i));
const mib = Number(positional[0] ?? 256);
const rounds = Number(positional[1] ?? 5);

const dir = await mkdtemp(join(tmpdir(), 'snap-'));
let session: Session | null = null;
if (profDir) {
  await mkdir(profDir, { recursive: true });
  session = new Session();
  session.connect();
  await session.post('Profiler.enable');
}
try {
  const r = await measureSnapshotTransfer(dir, mib, rounds, {
    ...(profDir ? { childExecArgv: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] } : {}),
    ...(only ? { paths: [only] } : {}),
    beforeRounds: async () => {
      if (session) await session.post('Profiler.start');
    },
  });
  console.log(
    `${(r.bytes / 1e6).toFixed(0)} MB, ${rounds} interleaved rounds; median MB/s, median per-round ratio to raw, per-round MB/s`,
  );
  for (const row of r.rows)
    console.log(
      `${row.path}: ${row.mbPerSecond.toFixed(0)} MB/s, ratio ${row.ratioToRaw.toFixed(2)}, CPU ms/MB client ${row.clientCpuMsPerMb.toFixed(2)} server ${row.serverCpuMsPerMb.toFixed(2)} [${row.samples.map((s) => s.toFixed(0)).join(' ')}]`,
    );
} finally {
  await rm(dir, { recursive: true, force: true });
}
if (session && profDir) {
  const { profile } = await session.post('Profiler.stop');
  await writeFile(join(profDir, `CPU.0.0.${process.pid}.0.001.cpuprofile`), JSON.stringify(profile));
  for (const s of await summarizeProfiles(profDir, 25)) {
    console.log(`\n${s.file} (${s.pid === process.pid ? 'client' : 'server child'}) ${s.totalMs.toFixed(0)} ms`);
    for (const a of s.byArea)
      console.log(`  ${a.area.padEnd(28)} ${a.ms.toFixed(0).padStart(7)} ms ${(a.share * 100).toFixed(1)}%`);
    for (const f of s.byFunction)
      console.log(`  ${f.ms.toFixed(0).padStart(7)} ms ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.name}`);
  }
}
