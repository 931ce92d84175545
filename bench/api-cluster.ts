// Bench (not a test): the developer API on a three-node cluster (child processes, mTLS, real fsync, one shared
// redis-server), in one run:
//  1. authenticated GET /projects req/s on the leader and on a follower, each beside a bare Express handler
//     serving the same payload from the same node process. By default in alternating short slices (sliceMs of
//     the bare handler, then sliceMs of the API, in ABBA order, leader pair then follower pair, many pairs; one
//     closed-loop generator in this process, bench/api-load.ts, with the same 64 keep-alive connections per target
//     throughout): each pair shares the machine's state of its moment, so the median of per-pair ratios, with its
//     interquartile range, is what to read; beside it the serving process's CPU per request in each slice
//     (process.cpuUsage, steadier than throughput on a shared machine). With --autocannon, the earlier
//     measurement: autocannon in its own process for `seconds` per case, cases alternating for `rounds` rounds.
//  2. SSE delivery latency: run event streams held open on one node (10, then 1,000), events appended to the
//     runs' Redis streams by this process, latency = receipt - append on this process's clock.
//  3. with --read-index-cost: the leader's CPU per read index asked from this process over mTLS (idle, one
//     every readIndexGapMs, back to back, readIndexConcurrency callers), measured by process.cpuUsage(), as a
//     message on the ReadIndexStream call and as a unary ReadIndex call.
// Usage: tsx bench/api-cluster.ts [seconds-per-measurement] [rounds] [--cpu-prof] [--no-sse] [--read-index-cost]
//   [--read-index-calls-in-flight N] [--autocannon] [--pairs N] [--slice-ms N] [--node-option FLAG]...
//   Paired slices (the default) load each case for seconds x rounds in all, as the rounds did: pairs =
//   seconds x rounds x 1000 / sliceMs per node unless --pairs N; --slice-ms sets sliceMs (default 300).
//   --cpu-prof writes each node's CPU profile to a new temp directory (named at the end; nodes stop cleanly), and
//   prints each case's CPU by area and function, then per node the serving process's self time per request by
//   function, API case minus bare (what a keyed request costs beyond bare Express).
//   --no-sse skips part 2.
//   --node-option FLAG (repeatable) adds a flag to every node process, e.g. --node-option --max-semi-space-size=64.
//   --read-index-calls-in-flight N sets the nodes' storeLimits.readIndexCallsInFlightMax (1: a follower's reads
//   wait for its call in flight, the rule before overlapping calls), for a same-build comparison.
// Output: a line `paired slices: leader API/bare req/s …` (medians and IQRs, with the rate-limit lease waits and
// leases per keyed request: api/rate-limit/leased-limiter.ts), then the cases' table, whose last row
// (the follower's API case) stays the last line with --no-sse; its columns are those of the rounds, filled from the
// slices (see printCases).
import { execFile } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { appendRunEvent } from '../api/runs/run-records.js';
import { ApiCluster, type ApiNodeProcess } from '../test/cluster-api/api-cluster.js';
import type { ReadIndexBatchStats } from '../store/read-index-batch.js';
import type { LeaseStats } from '../api/rate-limit/leased-limiter.js';
import { areaOf } from './cluster/profile.js';
import { pemIdentity } from '../transports/grpc/peer-identity.js';
import { StoreClientPool, storeClientTransport } from '../transports/store-rpc/store-service.js';
import { HttpLoadTarget } from './api-load.js';

const connections = 64;
/** valueFlags take the argument after them. */
const valueFlags = new Set(['--read-index-calls-in-flight', '--pairs', '--slice-ms', '--node-option']);
const args = process.argv
  .slice(2)
  .filter((arg, index, all) => !arg.startsWith('--') && !valueFlags.has(all[index - 1] ?? ''));
const durationSeconds = Number(args[0] ?? 3);
const rounds = Number(args[1] ?? 2);
const cpuProfile = process.argv.includes('--cpu-prof');
const sse = !process.argv.includes('--no-sse');
const readIndexCost = process.argv.includes('--read-index-cost');
const inFlightFlag = process.argv.indexOf('--read-index-calls-in-flight');
/** readIndexCallsInFlightMax: the nodes' store limit when given (else their default). */
const readIndexCallsInFlightMax = inFlightFlag === -1 ? undefined : Number(process.argv[inFlightFlag + 1]);
if (
  readIndexCallsInFlightMax !== undefined &&
  !(Number.isSafeInteger(readIndexCallsInFlightMax) && readIndexCallsInFlightMax >= 1)
)
  throw new Error('--read-index-calls-in-flight takes a positive integer');
const autocannonRounds = process.argv.includes('--autocannon');
/** nodeOptions go to each node process (Node or V8 flags). */
const nodeOptions = process.argv.flatMap((arg, index, all) => (all[index - 1] === '--node-option' ? [arg] : []));
function flagValue(flag: string): number | undefined {
  const at = process.argv.indexOf(flag);
  if (at === -1) return undefined;
  const value = Number(process.argv[at + 1]);
  if (!(Number.isSafeInteger(value) && value >= 1)) throw new Error(`${flag} takes a positive integer`);
  return value;
}
/** sliceMs is one slice of the paired measurement; sliceWarmMs of it (the ramp) is left out of its rate. */
const sliceMs = flagValue('--slice-ms') ?? 300;
const sliceWarmMs = Math.min(50, Math.floor(sliceMs / 4));
/** sliceDrainMsMax bounds waiting for a slice's answers in flight after it ends. */
const sliceDrainMsMax = 10_000;
/** pairCount pairs of slices per node: the rounds' load time per case by default. */
const pairCount = flagValue('--pairs') ?? Math.max(1, Math.round((durationSeconds * rounds * 1000) / sliceMs));
/** readIndexGapMs spaces the calls of the paced ReadIndex phase; readIndexConcurrency callers run the last one. */
const readIndexGapMs = 20;
const readIndexConcurrency = 16;
const autocannonCli = createRequire(import.meta.url).resolve('autocannon/autocannon.js');

/** sseRunCount runs carry the events; streams are spread over them evenly. */
const sseRunCount = 100;
/** sseStreamCounts are the open-stream levels measured, in order. */
const sseStreamCounts = [10, 1_000];
/** sseRoundCount rounds append one event to every run, sseRoundGapMs apart. */
const sseRoundCount = 20;
const sseRoundGapMs = 250;
/** sseOpenConcurrencyMax bounds stream opens in flight. */
const sseOpenConcurrencyMax = 50;
/** sseWaitMsMax bounds waiting for the last deliveries of a level, and for streams to open or end. */
const sseWaitMsMax = 30_000;
/** projectCount projects are listed by GET /projects (the bare handler serves the same JSON). */
const projectCount = 10;

interface BenchCase {
  name: string;
  url: string;
  headers: Record<string, string>;
  bareOf?: string;
  /** best: the best round (autocannon), or every slice pooled (paired slices: mean req/s, latency of all). */
  best?: Measured;
  /** roundRps: req/s of each round or slice, in order (pair i of a node: its bare slice i and its API slice i). */
  roundRps: number[];
  /** sliceCpuUs: the serving process's CPU per answer in each slice (paired slices only), in order. */
  sliceCpuUs: number[];
  /** windowsUs are the monotonic-clock spans (µs, the clock of V8 CPU profiles) of this case's measurements. */
  windowsUs: Array<[number, number]>;
  /** requestsTotal counts the requests of every round. */
  requestsTotal: number;
  /** node serves an API case: its read-index calls and readers are counted over the case's rounds. */
  node?: ApiNodeProcess;
  readIndex?: ReadIndexBatchStats;
  /** rateLeases: the serving node's rate-limit leases (ahead of need) and waits for one over the case's measurements. */
  rateLeases?: LeaseStats;
  /** cpuUs is CPU time (user + system, µs) over the case's rounds: of the serving node's process, and of the other nodes'. */
  cpuUs: { serving: number; others: number };
  /** servingName is the node whose process serves the case (the bare handler's too). */
  servingName: string;
}

/** Measured is what the table prints of a case: its req/s, latency percentiles and non-2xx answers. */
interface Measured {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  /** requests answered in all. */
  requests: number;
}

/** quantile: linear interpolation between the closest ranks (the median at 0.5). */
function quantile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const at = (sorted.length - 1) * fraction;
  const below = Math.floor(at);
  return sorted[below]! + (sorted[Math.min(below + 1, sorted.length - 1)]! - sorted[below]!) * (at - below);
}

const median = (values: number[]): number => quantile(values, 0.5);

/** spread: `median% (IQR q1–q3%)` of ratios. */
function spread(ratios: number[]): string {
  const percent = (value: number): string => (value * 100).toFixed(0);
  return `${percent(median(ratios))}% (IQR ${percent(quantile(ratios, 0.25))}–${percent(quantile(ratios, 0.75))}%)`;
}

const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** profileTopCount functions are listed per case and process in the --cpu-prof summary. */
const profileTopCount = Number(process.env.BENCH_PROFILE_TOP ?? 12);

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * profileByCase: for each case, each node process's CPU time inside the case's measurement windows (idle left
 * out), per request served, by area and by function. Profiles and this process share the monotonic clock.
 */
function profileByCase(dir: string, cases: BenchCase[]): string {
  const lines: string[] = [];
  const profiles = readdirSync(dir)
    .filter((file) => file.endsWith('.cpuprofile'))
    .map((file) => ({
      pid: /^CPU\.\d+\.\d+\.(\d+)\./.exec(file)?.[1] ?? file,
      profile: JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile,
    }));
  for (const benchCase of cases) {
    const requests = benchCase.requestsTotal;
    lines.push(`\n${benchCase.name} (${benchCase.windowsUs.length} window(s), ~${requests} requests)`);
    for (const { pid, profile } of profiles) {
      const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
      const areas = new Map<string, number>();
      const functions = new Map<string, number>();
      let busyUs = 0;
      let at = profile.startTime;
      for (let index = 0; index < profile.samples.length; index++) {
        at += profile.timeDeltas[index] ?? 0;
        if (!benchCase.windowsUs.some(([from, to]) => at >= from && at < to)) continue;
        const frame = byId.get(profile.samples[index]!)!;
        if (frame.functionName === '(idle)') continue;
        const deltaUs = profile.timeDeltas[index + 1] ?? 0;
        busyUs += deltaUs;
        const area = areaOf(frame.url, frame.functionName);
        areas.set(area, (areas.get(area) ?? 0) + deltaUs);
        const name = functionName(frame);
        functions.set(name, (functions.get(name) ?? 0) + deltaUs);
      }
      if (busyUs === 0) continue;
      const perRequest = (us: number): string => (requests > 0 ? `${(us / requests).toFixed(1)} µs/req` : '');
      const top = (map: Map<string, number>): string =>
        [...map.entries()]
          .sort((a, b) => b[1] - a[1])
          .slice(0, profileTopCount)
          .map(([name, us]) => `    ${((us / busyUs) * 100).toFixed(1)}% ${perRequest(us)} ${name}`)
          .join('\n');
      lines.push(
        `  pid ${pid}: busy ${(busyUs / 1000).toFixed(0)} ms, ${perRequest(busyUs)}\n${top(areas)}\n  functions:\n${top(functions)}`,
      );
    }
  }
  return lines.join('\n');
}

/** functionName: a profile frame's function and place, as the --cpu-prof summary names it. */
function functionName(frame: CpuProfile['nodes'][number]['callFrame']): string {
  const place = frame.url.replace(/^.*\/(node_modules\/|work\/[^/]+\/)/, '');
  return `${frame.functionName || '(anonymous)'}${frame.url === '' ? '' : ` ${place}:${frame.lineNumber + 1}`}`;
}

/** selfTimesUs: each function's self time (µs, idle left out) in a profile inside the given windows. */
function selfTimesUs(profile: CpuProfile, windowsUs: Array<[number, number]>): Map<string, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const times = new Map<string, number>();
  let at = profile.startTime;
  for (let index = 0; index < profile.samples.length; index++) {
    at += profile.timeDeltas[index] ?? 0;
    if (!windowsUs.some(([from, to]) => at >= from && at < to)) continue;
    const frame = byId.get(profile.samples[index]!)!;
    if (frame.functionName === '(idle)') continue;
    const name = functionName(frame);
    times.set(name, (times.get(name) ?? 0) + (profile.timeDeltas[index + 1] ?? 0));
  }
  return times;
}

/**
 * profileDiff: for the leader's and the follower's pair of cases, the serving process's self time per request by
 * function in the API case minus the bare one (the functions that cost a keyed request most beyond bare Express).
 * The serving process is the one busiest in the bare case.
 */
function profileDiff(dir: string, cases: BenchCase[]): string {
  const profiles = readdirSync(dir)
    .filter((file) => file.endsWith('.cpuprofile'))
    .map((file) => JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile);
  const lines: string[] = [];
  for (const [bare, keyed] of [
    [cases[0]!, cases[1]!],
    [cases[2]!, cases[3]!],
  ] as const) {
    const perRequest = (times: Map<string, number>, requests: number): Map<string, number> =>
      new Map([...times].map(([name, us]) => [name, us / Math.max(1, requests)]));
    const serving = profiles
      .map((profile) => ({ profile, bareTimes: selfTimesUs(profile, bare.windowsUs) }))
      .sort((a, b) => sumOf(b.bareTimes) - sumOf(a.bareTimes))[0];
    if (!serving) continue;
    const barePerRequest = perRequest(serving.bareTimes, bare.requestsTotal);
    const keyedPerRequest = perRequest(selfTimesUs(serving.profile, keyed.windowsUs), keyed.requestsTotal);
    const names = new Set([...barePerRequest.keys(), ...keyedPerRequest.keys()]);
    const rows = [...names]
      .map((name) => ({ name, bare: barePerRequest.get(name) ?? 0, keyed: keyedPerRequest.get(name) ?? 0 }))
      .sort((a, b) => b.keyed - b.bare - (a.keyed - a.bare));
    lines.push(
      `\n${keyed.name} minus ${bare.name}: ${(sumOf(keyedPerRequest) - sumOf(barePerRequest)).toFixed(1)} µs/req of self time in all`,
    );
    for (const row of rows.slice(0, profileTopCount))
      lines.push(
        `  ${(row.keyed - row.bare).toFixed(2)} µs/req (${row.bare.toFixed(2)} → ${row.keyed.toFixed(2)}) ${row.name}`,
      );
  }
  return lines.join('\n');
}

const sumOf = (times: Map<string, number>): number => [...times.values()].reduce((sum, us) => sum + us, 0);

async function measure(url: string, headers: Record<string, string>): Promise<Measured> {
  const headerArgs = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}=${value}`]);
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [autocannonCli, '--json', '-c', String(connections), '-d', String(durationSeconds), ...headerArgs, url],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const result = JSON.parse(stdout) as autocannon.Result;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    requests: result.requests.total,
  };
}

async function api(base: string, key: string, method: string, urlPath: string, body?: unknown): Promise<unknown> {
  const response = await fetch(base + urlPath, {
    method,
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${urlPath} → ${response.status} ${text}`);
  return JSON.parse(text) as unknown;
}

function percentile(sorted: number[], fraction: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))]!;
}

const nowMs = (): number => performance.timeOrigin + performance.now();

/** OpenStream is one SSE response read by plain node:http: it records the latency of each output event. */
interface OpenStream {
  ended: Promise<void>;
  close(): void;
}

function openStream(
  baseUrl: string,
  streamUrl: string,
  key: string,
  latenciesMs: number[],
  received: { count: number },
): Promise<OpenStream> {
  const url = new URL(streamUrl, baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.get({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      headers: { 'x-api-key': key, accept: 'text/event-stream' },
    });
    request.once('error', reject);
    request.once('response', (response) => {
      if (response.statusCode !== 200) {
        reject(new Error(`${streamUrl} answered ${response.statusCode}`));
        response.resume();
        return;
      }
      let buffer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        const at = nowMs();
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!block.includes('event: output')) continue;
          const data = block.split('\n').find((line) => line.startsWith('data: '));
          if (!data) continue;
          const sentAt = Number((JSON.parse(data.slice(6)) as { text: string }).text);
          latenciesMs.push(at - sentAt);
          received.count++;
        }
      });
      const ended = new Promise<void>((done) => {
        response.once('end', done);
        response.once('close', done);
      });
      resolve({ ended, close: () => request.destroy() });
    });
  });
}

async function sseLevel(
  baseUrl: string,
  key: string,
  usedRuns: Array<{ runId: string; streamUrl: string }>,
  redis: Redis,
  streamCount: number,
): Promise<string> {
  const latenciesMs: number[] = [];
  const received = { count: 0 };
  const streams: OpenStream[] = [];
  const openStartedMs = performance.now();
  for (let next = 0; next < streamCount;) {
    const batch: Array<Promise<OpenStream>> = [];
    for (; next < streamCount && batch.length < sseOpenConcurrencyMax; next++) {
      batch.push(openStream(baseUrl, usedRuns[next % usedRuns.length]!.streamUrl, key, latenciesMs, received));
    }
    streams.push(...(await Promise.all(batch)));
  }
  const openMs = performance.now() - openStartedMs;
  const streamsPerRun = new Map<string, number>();
  for (let index = 0; index < streamCount; index++) {
    const runId = usedRuns[index % usedRuns.length]!.runId;
    streamsPerRun.set(runId, (streamsPerRun.get(runId) ?? 0) + 1);
  }
  let expected = 0;
  for (let round = 0; round < sseRoundCount; round++) {
    await Promise.all(
      usedRuns.map((run) =>
        appendRunEvent(redis, run.runId, { event: 'output', data: { stream: 'stdout', text: String(nowMs()) } }),
      ),
    );
    expected += streamCount;
    await new Promise((resolve) => setTimeout(resolve, sseRoundGapMs));
  }
  const deadline = Date.now() + sseWaitMsMax;
  while (received.count < expected && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  for (const stream of streams) stream.close();
  await Promise.race([
    Promise.all(streams.map((stream) => stream.ended)),
    new Promise((resolve) => setTimeout(resolve, sseWaitMsMax)),
  ]);
  latenciesMs.sort((a, b) => a - b);
  return (
    `| ${streamCount} | ${usedRuns.length} | ${Math.round(openMs)} | ${received.count}/${expected} | ` +
    `${percentile(latenciesMs, 0.5).toFixed(1)} | ${percentile(latenciesMs, 0.9).toFixed(1)} | ${percentile(latenciesMs, 0.99).toFixed(1)} | ` +
    `${latenciesMs.at(-1)?.toFixed(1) ?? '-'} |`
  );
}

/**
 * readIndexCostRows: the leader's CPU per read index asked from this process (as a follower asks), at a few
 * rates, over each transport: a message on the ReadIndexStream call, and a unary ReadIndex call.
 */
async function readIndexCostRows(cluster: ApiCluster, leader: string): Promise<string[]> {
  const rows: string[] = [];
  for (const overStream of [true, false]) rows.push(...(await readIndexCostRowsOver(cluster, leader, overStream)));
  return rows;
}

async function readIndexCostRowsOver(cluster: ApiCluster, leader: string, overStream: boolean): Promise<string[]> {
  const config = cluster.node(leader).config;
  if (config.tls.mode !== 'mtls') throw new Error('the bench cluster runs mTLS');
  const tls = config.tls;
  const transport = overStream ? 'ReadIndexStream message' : 'unary ReadIndex call';
  const cert = readFileSync(tls.certFile);
  const identity = pemIdentity(cert);
  if (typeof identity === 'string') throw new Error(`the bench node's certificate: ${identity}`);
  // The unary calls go on the lean HTTP/2 client, as a node's own pool sends them.
  const pool = new StoreClientPool({
    ...storeClientTransport(
      { mode: 'mtls', material: { ca: readFileSync(tls.caFile), cert, key: readFileSync(tls.keyFile) } },
      {
        clusterId: identity.clusterId,
        ...(tls.serverNameOverride ? { serverNameOverride: tls.serverNameOverride } : {}),
      },
    ),
    overStreams: overStream,
  });
  const address = config.grpcAdvertise ?? config.grpcListen;
  const call = (): Promise<unknown> => pool.readIndex(address, Date.now() + 5_000);
  const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  const leaderCpuUs = async (): Promise<number> => {
    const usage = await cluster.node(leader).cpuUsage();
    return usage.user + usage.system;
  };
  const rows: string[] = [];
  let idleUsPerMs = 0;
  const phase = async (name: string, run: (until: number) => Promise<number>): Promise<void> => {
    const before = await leaderCpuUs();
    const startedMs = Date.now();
    const calls = await run(startedMs + durationSeconds * 1000);
    const spentMs = Date.now() - startedMs;
    const spentUs = (await leaderCpuUs()) - before;
    if (calls === 0) idleUsPerMs = spentUs / spentMs;
    const perCall = calls === 0 ? '-' : ((spentUs - idleUsPerMs * spentMs) / calls).toFixed(0);
    rows.push(
      `| ${transport} | ${name} | ${Math.round((calls / spentMs) * 1000)} | ${(spentUs / spentMs).toFixed(0)} | ${perCall} |`,
    );
  };
  try {
    await call();
    await phase('idle', async (until) => {
      await pause(until - Date.now());
      return 0;
    });
    await phase(`one call, then ${readIndexGapMs} ms pause`, async (until) => {
      let calls = 0;
      for (; Date.now() < until; calls++) {
        await call();
        await pause(readIndexGapMs);
      }
      return calls;
    });
    await phase('back to back', async (until) => {
      let calls = 0;
      for (; Date.now() < until; calls++) await call();
      return calls;
    });
    await phase(`${readIndexConcurrency} callers`, async (until) => {
      let calls = 0;
      await Promise.all(
        Array.from({ length: readIndexConcurrency }, async () => {
          for (; Date.now() < until; calls++) await call();
        }),
      );
      return calls;
    });
  } finally {
    pool.close();
  }
  return rows;
}

/** benchCases are the four measured cases: bare Express and the API's GET /projects, on the leader and a follower. */
async function benchCases(cluster: ApiCluster, leader: string, follower: string): Promise<BenchCase[]> {
  const key = cluster.admin.key;
  const leaderUrl = cluster.node(leader).httpUrl;
  for (let index = 0; index < projectCount; index++) {
    await api(leaderUrl, key, 'POST', '/projects', {
      name: `p${index}`,
      workspace: cluster.workspace,
      command: ['./agent.sh'],
    });
  }
  const payload = await api(leaderUrl, key, 'GET', '/projects?limit=50');
  return [
    {
      name: `bare Express, in the leader's process`,
      url: `${await cluster.node(leader).bare(payload)}/projects`,
      headers: {} as Record<string, string>,
      servingName: leader,
    },
    {
      name: 'API GET /projects on the leader',
      url: `${leaderUrl}/projects`,
      headers: { 'x-api-key': key },
      bareOf: 'leader',
      servingName: leader,
      node: cluster.node(leader),
    },
    {
      name: `bare Express, in a follower's process`,
      url: `${await cluster.node(follower).bare(payload)}/projects`,
      headers: {},
      servingName: follower,
    },
    {
      name: 'API GET /projects on a follower',
      url: `${cluster.node(follower).httpUrl}/projects`,
      headers: { 'x-api-key': key },
      bareOf: 'follower',
      servingName: follower,
      node: cluster.node(follower),
    },
  ].map((benchCase): BenchCase => ({
    ...benchCase,
    roundRps: [],
    sliceCpuUs: [],
    windowsUs: [],
    requestsTotal: 0,
    cpuUs: { serving: 0, others: 0 },
  }));
}

/** cpuOfNodes: each node process's CPU so far (user + system, µs), in nodeNames' order. */
function cpuOfNodes(cluster: ApiCluster, nodeNames: string[]): Promise<number[]> {
  return Promise.all(
    nodeNames.map(async (name) => {
      const usage = await cluster.node(name).cpuUsage();
      return usage.user + usage.system;
    }),
  );
}

/** rateLeaseStats: the node's rate-limit lease counts, or undefined for a node without them (an older build). */
async function rateLeaseStats(node: ApiNodeProcess | undefined): Promise<LeaseStats | undefined> {
  try {
    return await node?.rateLeaseStats();
  } catch {
    return undefined;
  }
}

/**
 * observed runs one measurement of a case, adding the nodes' CPU and the serving node's read-index counts over it
 * to the case; it returns the serving process's CPU (µs) over it with the measurement's own result.
 */
async function observed<T>(
  cluster: ApiCluster,
  nodeNames: string[],
  benchCase: BenchCase,
  run: () => Promise<T>,
): Promise<{ result: T; servingCpuUs: number }> {
  const statsBefore = await benchCase.node?.readIndexStats();
  const leasesBefore = await rateLeaseStats(benchCase.node);
  const cpuBefore = await cpuOfNodes(cluster, nodeNames);
  const startedUs = monotonicUs();
  const result = await run();
  benchCase.windowsUs.push([startedUs, monotonicUs()]);
  const cpuAfter = await cpuOfNodes(cluster, nodeNames);
  let servingCpuUs = 0;
  nodeNames.forEach((name, index) => {
    const spentUs = cpuAfter[index]! - cpuBefore[index]!;
    if (name === benchCase.servingName) {
      benchCase.cpuUs.serving += spentUs;
      servingCpuUs = spentUs;
    } else benchCase.cpuUs.others += spentUs;
  });
  const statsAfter = await benchCase.node?.readIndexStats();
  const leasesAfter = await rateLeaseStats(benchCase.node);
  if (leasesBefore && leasesAfter) {
    const sum = (benchCase.rateLeases ??= { leases: 0, leasesAhead: 0, waits: 0 });
    sum.leases += leasesAfter.leases - leasesBefore.leases;
    sum.leasesAhead += leasesAfter.leasesAhead - leasesBefore.leasesAhead;
    sum.waits += leasesAfter.waits - leasesBefore.waits;
  }
  if (statsBefore && statsAfter) {
    const sum = (benchCase.readIndex ??= { calls: 0, readers: 0, gatherMs: 0, callMs: 0 });
    sum.calls += statsAfter.calls - statsBefore.calls;
    sum.readers += statsAfter.readers - statsBefore.readers;
    // A node older than these fields reports none: its waits show as 0.
    sum.gatherMs += (statsAfter.gatherMs ?? 0) - (statsBefore.gatherMs ?? 0);
    sum.callMs += (statsAfter.callMs ?? 0) - (statsBefore.callMs ?? 0);
  }
  return { result, servingCpuUs };
}

/** measureRounds (--autocannon) measures every case once per round, in order, with its CPU and read-index counts. */
async function measureRounds(cluster: ApiCluster, nodeNames: string[], cases: BenchCase[]): Promise<void> {
  for (let round = 0; round < rounds; round++) {
    for (const benchCase of cases) {
      const { result } = await observed(cluster, nodeNames, benchCase, () => measure(benchCase.url, benchCase.headers));
      benchCase.requestsTotal += result.requests;
      benchCase.roundRps.push(result.rps);
      if (!benchCase.best || result.rps > benchCase.best.rps) benchCase.best = result;
    }
  }
}

/**
 * measurePairs alternates short slices: for each of pairCount pairs, the leader's bare and API slices, then the
 * follower's, in ABBA order (bare first in even pairs, API first in odd ones) so that a drift within a pair falls on
 * both sides alike. One generator, the same connections per target throughout; a slice starts on an idle server
 * (the previous slice's answers drained). A first unmeasured pair warms every target (V8's compilations).
 */
async function measurePairs(cluster: ApiCluster, nodeNames: string[], cases: BenchCase[]): Promise<void> {
  const targets = await Promise.all(
    cases.map((benchCase) => HttpLoadTarget.open(benchCase.url, benchCase.headers, connections)),
  );
  const latenciesMs: number[][] = cases.map(() => []);
  const non2xx = cases.map(() => 0);
  try {
    for (const target of targets) await target.slice(sliceMs, sliceWarmMs, sliceDrainMsMax);
    for (let pair = 0; pair < pairCount; pair++) {
      // cases: [leader bare, leader API, follower bare, follower API]
      for (const [bare, keyed] of [
        [0, 1],
        [2, 3],
      ] as const) {
        for (const index of pair % 2 === 0 ? [bare, keyed] : [keyed, bare]) {
          const benchCase = cases[index]!;
          const { result, servingCpuUs } = await observed(cluster, nodeNames, benchCase, () =>
            targets[index]!.slice(sliceMs, sliceWarmMs, sliceDrainMsMax),
          );
          benchCase.requestsTotal += result.answered;
          benchCase.roundRps.push(result.rps);
          benchCase.sliceCpuUs.push(servingCpuUs / Math.max(1, result.answered));
          latenciesMs[index]!.push(...result.latenciesMs);
          non2xx[index]! += result.non2xx;
        }
      }
    }
  } finally {
    for (const target of targets) target.close();
  }
  cases.forEach((benchCase, index) => {
    const sorted = latenciesMs[index]!.sort((a, b) => a - b);
    benchCase.best = {
      rps: benchCase.roundRps.reduce((sum, rps) => sum + rps, 0) / benchCase.roundRps.length,
      p50: Number(percentile(sorted, 0.5).toFixed(1)),
      p99: Number(percentile(sorted, 0.99).toFixed(1)),
      non2xx: non2xx[index]!,
      requests: benchCase.requestsTotal,
    };
  });
}

/** pairedSummary: per node, the median and IQR of the per-pair ratios of req/s and of CPU per request. */
function pairedSummary(cases: BenchCase[]): string {
  const parts = (['leader', 'follower'] as const).map((node, at) => {
    const bare = cases[at * 2]!;
    const keyed = cases[at * 2 + 1]!;
    const rpsRatios = keyed.roundRps.map((rps, pair) => rps / bare.roundRps[pair]!);
    const cpuRatios = keyed.sliceCpuUs.map((cpu, pair) => bare.sliceCpuUs[pair]! / cpu);
    const leases = keyed.rateLeases;
    const leaseWaits = leases
      ? `, rate-limit lease waits per request ${(leases.waits / Math.max(1, keyed.requestsTotal)).toFixed(3)} ` +
        `(leases per request ${(leases.leases / Math.max(1, keyed.requestsTotal)).toFixed(3)}, ${leases.leasesAhead} ahead)`
      : '';
    return (
      `${node} API/bare req/s ${spread(rpsRatios)}, CPU per request bare/API ${spread(cpuRatios)} ` +
      `(${median(bare.sliceCpuUs).toFixed(0)} vs ${median(keyed.sliceCpuUs).toFixed(0)} µs)${leaseWaits}`
    );
  });
  return `paired slices (${pairCount} pairs of ${sliceMs} ms per node, median of per-pair ratios): ${parts.join('; ')}`;
}

/** measureSse: queued runs (no worker on any node) whose event streams this process appends to directly. */
async function measureSse(cluster: ApiCluster, leader: string, follower: string): Promise<string[]> {
  const key = cluster.admin.key;
  const leaderUrl = cluster.node(leader).httpUrl;
  const sseRows: string[] = [];
  const project = (await api(leaderUrl, key, 'POST', '/projects', {
    name: 'sse',
    workspace: cluster.workspace,
    command: ['./agent.sh'],
  })) as { id: string };
  const redis = new Redis(cluster.redis!.url);
  for (const streamCount of sseStreamCounts) {
    // Fresh runs per level, so that no stream replays an earlier level's events.
    const runs: Array<{ runId: string; streamUrl: string }> = [];
    for (let index = 0; index < Math.min(sseRunCount, streamCount); index++) {
      runs.push(
        (await api(leaderUrl, key, 'POST', `/projects/${project.id}/commands`, { prompt: `sse ${index}` })) as {
          runId: string;
          streamUrl: string;
        },
      );
    }
    sseRows.push(await sseLevel(cluster.node(follower).httpUrl, key, runs, redis, streamCount));
  }
  redis.disconnect();
  return sseRows;
}

/** printCases writes the cases' table. */
function printCases(cases: BenchCase[]): void {
  const how = autocannonRounds
    ? `${durationSeconds}s per measurement, best of ${rounds} rounds, autocannon`
    : `paired slices: ${pairCount} pairs of ${sliceMs} ms per node (first ${sliceWarmMs} ms of each left out of its ` +
      `rate), ABBA order, one closed-loop generator in the bench process`;
  process.stdout.write(
    `\n${connections} connections, ${how}, loopback, ` +
      `3 nodes (mTLS, fsync) + redis-server + load generator on ${os.cpus().length} cores; ` +
      `readIndexCallsInFlightMax ${readIndexCallsInFlightMax ?? 'default'}; node flags ` +
      `${nodeOptions.join(' ') || 'none'}; load average at end ` +
      `${os
        .loadavg()
        .map((load) => load.toFixed(1))
        .join(' ')}\n\n`,
  );
  if (!autocannonRounds) process.stdout.write(`${pairedSummary(cases)}\n\n`);
  // CPU per request: process.cpuUsage() of each node process (user + system) over all rounds of a case,
  // divided by its requests. Unlike req/s and profile busy time, it is not inflated by other processes
  // holding the cores, so its ratio (bare CPU / API CPU, same process) is what the throughput ratio would
  // be on a machine with a core to spare for each process.
  // With paired slices the same columns hold: req/s is the mean of the case's slices, "best rounds" the ratio of
  // those means, "median of rounds" the median of per-pair ratios with its IQR (not every slice's), p50 and p99
  // over every answer inside the slices' windows.
  process.stdout.write(
    (autocannonRounds
      ? '| case | req/s (mean, best round) | vs bare, same process (best rounds) | vs bare, median of rounds (each round) | '
      : '| case | req/s (mean of slices) | vs bare, same process (means) | vs bare, median of pairs (IQR) | ') +
      'p50 ms | p99 ms | non-2xx | CPU µs/req, serving process | ' +
      'CPU vs bare (bare / API) | CPU µs/req, other nodes | read-index calls per request (readers per call) | ' +
      'read-index ms per call: first reader → call start, start → answer |\n' +
      '|---|---|---|---|---|---|---|---|---|---|---|---|\n',
  );
  const bareByNode: Record<string, BenchCase> = { leader: cases[0]!, follower: cases[2]! };
  const cpuPerRequest = (benchCase: BenchCase, which: 'serving' | 'others'): number =>
    benchCase.cpuUs[which] / Math.max(1, benchCase.requestsTotal);
  for (const benchCase of cases) {
    const { name, best, bareOf, readIndex, requestsTotal } = benchCase;
    const bare = bareOf ? bareByNode[bareOf]! : benchCase;
    const ratio = `${((best!.rps / bare.best!.rps) * 100).toFixed(0)}%`;
    // Each round's API case ran right after its bare case: their ratio shares the machine's state of the moment.
    const roundRatios = benchCase.roundRps.map((rps, round) => rps / bare.roundRps[round]!);
    const roundRatio = autocannonRounds
      ? `${(median(roundRatios) * 100).toFixed(0)}% (${roundRatios.map((r) => (r * 100).toFixed(0)).join(', ')})`
      : spread(roundRatios);
    const cpuRatio = `${((cpuPerRequest(bare, 'serving') / cpuPerRequest(benchCase, 'serving')) * 100).toFixed(0)}%`;
    const sharing =
      readIndex && readIndex.calls > 0
        ? `${(readIndex.calls / requestsTotal).toFixed(3)} (${(readIndex.readers / readIndex.calls).toFixed(1)})`
        : '-';
    // Where a keyed request's barrier waits: for its call to start (a turn, or calls in flight before it), then
    // for the answer (on a follower, a round trip to the leader).
    const waits =
      readIndex && readIndex.calls > 0
        ? `${(readIndex.gatherMs / readIndex.calls).toFixed(2)}, ${(readIndex.callMs / readIndex.calls).toFixed(2)}`
        : '-';
    process.stdout.write(
      `| ${name} | ${Math.round(best!.rps)} | ${ratio} | ${roundRatio} | ${best!.p50} | ${best!.p99} | ${best!.non2xx} | ` +
        `${cpuPerRequest(benchCase, 'serving').toFixed(0)} | ${cpuRatio} | ${cpuPerRequest(benchCase, 'others').toFixed(0)} | ${sharing} | ${waits} |\n`,
    );
  }
}

/** printExtras writes the read-index cost and SSE tables, when measured. */
function printExtras(readIndexRows: string[], sseRows: string[]): void {
  if (readIndexCost) {
    process.stdout.write(
      `\nThe leader's CPU per read index (asked from this process over mTLS, ${durationSeconds} s per phase; per call = ` +
        '(CPU - idle CPU) / calls)\n\n| transport | phase | calls/s | leader CPU ms/s | leader CPU µs per call |\n|---|---|---|---|---|\n',
    );
    for (const row of readIndexRows) process.stdout.write(`${row}\n`);
  }
  if (sse) {
    process.stdout.write(
      `\nSSE delivery (streams on a follower, ${sseRoundCount} rounds of one event per run, ${sseRoundGapMs} ms apart; ` +
        'latency = receipt - append, ms)\n\n| open streams | runs | open all (ms) | delivered | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|---|---|\n',
    );
    for (const row of sseRows) process.stdout.write(`${row}\n`);
  }
}

/** peakResidentMb is a process's peak resident set (Linux /proc), '?' where it cannot be read. */
function peakResidentMb(pid: number): string {
  try {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? '?' : (Number(kb) / 1024).toFixed(0);
  } catch {
    return '?';
  }
}

async function main(): Promise<void> {
  const profileDir = cpuProfile ? mkdtempSync(path.join(os.tmpdir(), 'svc-api-cluster-prof-')) : '';
  const cluster = new ApiCluster();
  const casesForProfile: BenchCase[] = [];
  try {
    await cluster.start({
      // Plain HTTP keeps these figures comparable with earlier runs (autocannon has no CA option of ours).
      plaintextHttp: true,
      tickMs: 100,
      api: { rateLimitPerSecond: 1_000_000, runWorker: false, albumWorker: false },
      execArgv: [...(cpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...nodeOptions],
      ...(readIndexCallsInFlightMax === undefined
        ? {}
        : { nodeConfig: { storeLimits: { readIndexCallsInFlightMax } } }),
    });
    const leader = await cluster.leaderName();
    if (!leader) throw new Error('no leader');
    const nodeNames = ['a', 'b', 'c'];
    const follower = nodeNames.find((name) => name !== leader)!;
    const cases = await benchCases(cluster, leader, follower);
    casesForProfile.push(...cases);
    if (autocannonRounds) await measureRounds(cluster, nodeNames, cases);
    else await measurePairs(cluster, nodeNames, cases);
    const readIndexRows = readIndexCost ? await readIndexCostRows(cluster, leader) : [];
    const sseRows = sse ? await measureSse(cluster, leader, follower) : [];
    const peaks = nodeNames.map((name) => `${name} ${peakResidentMb(cluster.node(name).pid)}`);
    process.stdout.write(`nodes' peak resident memory (VmHWM, MB): ${peaks.join(', ')}\n`);
    printCases(cases);
    printExtras(readIndexRows, sseRows);
  } finally {
    await cluster.stop();
  }
  if (cpuProfile) {
    // The cases' windows beside the profiles, for a closer look at them afterwards (inclusive times, stacks).
    writeFileSync(
      path.join(profileDir, 'windows.json'),
      JSON.stringify(casesForProfile.map(({ name, windowsUs, requestsTotal }) => ({ name, windowsUs, requestsTotal }))),
    );
    process.stdout.write(`\nCPU profiles in ${profileDir}\n`);
    process.stdout.write(
      `\nNode processes' CPU inside each case's measurements (idle left out; per request = busy time / ` +
        `requests of all rounds):\n${profileByCase(profileDir, casesForProfile)}\n`,
    );
    process.stdout.write(
      `\nWhat a keyed request costs beyond bare Express, by function (the serving process):${profileDiff(profileDir, casesForProfile)}\n`,
    );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
