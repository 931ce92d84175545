// Write allocation bench (not a test): the bytes each member allocates per write under `writers` concurrent
// one-call writers (one unary svc.store.v1 Propose per write at the leader, as bench/write-tail.ts), for finding
// and cutting the leader's garbage (its scavenges sit on the write path). It starts a three-node cluster as a user
// does with bench/cluster/alloc-probe.mjs loaded into each member, runs a warm-up, then samples every allocation
// (V8's sampling heap profiler, freed objects included) for `seconds` and prints, per member: estimated bytes
// allocated per write (sampled bytes / the leader's proposals in the window), scavenges, and for the leader
// the functions allocating most (self bytes per write). The leader's profile is kept (--keep DIR).
//
//   npx tsx bench/write-alloc.ts [--writers 64] [--seconds 4] [--warmup 1.5] [--top 25] [--keep FILE] [--insecure] [--node-option X]
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { startSvcCluster } from './cluster/svc-cluster.js';
import { payload, SVC_VALUE_CHARS } from './cluster/load.js';
import { numberArg } from './cluster/trace-files.js';
import { scrapeMembers } from './cluster/member-metrics.js';
import { waitUntil } from './cluster/ports.js';

const PROBE = fileURLToPath(new URL('./cluster/alloc-probe.mjs', import.meta.url));
const PROFILE_WAIT_MS = 20_000;

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

function flatten(node: ProfileNode, into: Map<string, number>): number {
  const f = node.callFrame;
  const where = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/wt-[^/]+\//, '').replace(/^file:\/\//, '')}:${f.lineNumber + 1}`;
  into.set(where, (into.get(where) ?? 0) + node.selfSize);
  let total = node.selfSize;
  for (const c of node.children) total += flatten(c, into);
  return total;
}

async function main(): Promise<void> {
  const writers = numberArg('writers', 64);
  const seconds = numberArg('seconds', 4);
  const warmup = numberArg('warmup', 1.5);
  const top = numberArg('top', 25);
  const keepAt = process.argv.indexOf('--keep');
  const keep = keepAt > 0 ? process.argv[keepAt + 1] : undefined;
  const dir = await mkdtemp(join(tmpdir(), 'svc-write-alloc-'));
  const probeDir = join(dir, 'probe');
  await mkdir(probeDir);
  process.env.ALLOC_PROBE_DIR = probeDir;
  const svc = await startSvcCluster(
    join(dir, 'svc'),
    [`--import=${PROBE}`, ...process.argv.flatMap((arg, i) => (arg === '--node-option' ? [process.argv[i + 1]!] : []))],
    [],
    process.argv.includes('--insecure'),
  );
  try {
    const members = svc.cluster.members;
    const pids = new Map<string, number>();
    for (const f of await readdir(probeDir)) {
      if (!f.endsWith('.argv')) continue;
      const argv = await readFile(join(probeDir, f), 'utf8');
      const member = members.find((m) => argv.includes(`/${m.name}.`) || argv.includes(`/${m.name}/`));
      if (member) pids.set(member.name, Number(f.replace('.argv', '')));
    }
    if (pids.size !== members.length) throw new Error(`found ${pids.size} member pids: ${[...pids].join(' ')}`);
    const signalAll = (): void => {
      for (const pid of pids.values()) process.kill(pid, 'SIGUSR2');
    };
    const windowFrom = performance.now() + warmup * 1000;
    const windowTo = windowFrom + seconds * 1000;
    let before = scrapeMembers(members);
    const atWindow = setTimeout(() => {
      signalAll();
      before = scrapeMembers(members);
    }, warmup * 1000);
    let windowWrites = 0;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        // Bounded by the window's end.
        for (let i = 0; performance.now() < windowTo; i++) {
          const sentMs = performance.now();
          await svc.putAlone(`alloc/w${w}/${i}`, payload(SVC_VALUE_CHARS, i)).catch(() => undefined);
          if (sentMs >= windowFrom) windowWrites++;
        }
      }),
    );
    clearTimeout(atWindow);
    signalAll();
    const after = await scrapeMembers(members);
    const beforeScrapes = await before;
    await waitUntil(
      async () => (await readdir(probeDir)).filter((f) => f.endsWith('.heapprofile')).length === pids.size,
      'the members to write their allocation profiles',
      PROFILE_WAIT_MS,
    );
    const leaderAt = members.findIndex((m) => m.name === svc.leaderName);
    const delta = (i: number, key: string): number => (after[i]!.get(key) ?? 0) - (beforeScrapes[i]?.get(key) ?? 0);
    const proposals = delta(leaderAt, 'svc_proposal_batch_size_sum');
    console.log(
      `${writers} writers: ${(windowWrites / seconds).toFixed(0)} writes/s in the window; leader ${svc.leaderName} took ${proposals} proposals`,
    );
    for (const [i, m] of members.entries()) {
      const file = join(probeDir, `${pids.get(m.name)}.heapprofile`);
      const profile = JSON.parse(await readFile(file, 'utf8')) as { head: ProfileNode };
      const byFunction = new Map<string, number>();
      const total = flatten(profile.head, byFunction);
      const leader = m.name === svc.leaderName;
      const scavenges = delta(i, 'svc_process_nodejs_gc_duration_seconds_count{kind="minor"}');
      console.log(
        `  ${m.name}${leader ? ' (leader)' : ''}: ${(total / proposals).toFixed(0)} bytes allocated per write (${(total / 1e6).toFixed(1)} MB), ${scavenges} scavenges, ${delta(i, 'svc_process_nodejs_gc_duration_seconds_count{kind="major"}')} mark-compacts`,
      );
      if (leader) {
        if (keep) await copyFile(file, keep);
        for (const [where, bytes] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top))
          console.log(`      ${(bytes / proposals).toFixed(0).padStart(6)} B/write  ${where}`);
      }
    }
  } finally {
    await svc.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
