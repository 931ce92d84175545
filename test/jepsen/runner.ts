// The Jepsen-style run itself, as a process inside the hub namespace (launch.ts starts it there with
// `ip netns exec`): it starts the nodes in their namespaces, runs the register clients and the API-key
// workload, injects the nemesis rounds, stops everything, checks the history with the linearizability checker
// and sends its report to the parent over IPC. argv[2] is {options, topology} as JSON.
import { rm } from 'node:fs/promises';
import { Prng } from '../../sim/prng.js';
import { checkKvHistory, formatOperations, type KvOperation } from '../../sim/linearizability/index.js';
import { tempDir } from '../node/harness.js';
import { History, tallyHistory } from './history.js';
import { KvClient } from './kv-client.js';
import { KeyWorkload } from './key-client.js';
import { NEMESIS_KINDS, Nemesis, type TimelineEntry } from './nemesis.js';
import { NetnsCluster } from './netns-cluster.js';
import { replayRecordings, type RecordingsReport } from './recordings.js';
import type { Topology } from './netns.js';
import type { JepsenOptions, JepsenReport } from './options.js';

/** Client timings: short enough that a client notices a dead or cut-off node within a second. */
// A write attempt gives up on a silent node after attemptDeadlineMs and asks the next one (the same request id:
// no double apply), so clients find a new leader soon after an election, while a cut-off one still leads.
const KV_TIMING = {
  getDeadlineMs: 1_000,
  attemptDeadlineMs: 300,
  writeDeadlineMs: 5_000,
  thinkMsMax: 20,
  failurePauseMs: 50,
};
const KEY_TIMING = { requestTimeoutMs: 2_000, activeMs: 600, revokedMs: 900, useGapMsMax: 40, failurePauseMs: 100 };
/** START_RECOVER_TIMEOUT_MS bounds the first election after the nodes start. */
const START_RECOVER_TIMEOUT_MS = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function runJepsenInHub(
  options: JepsenOptions,
  topology: Topology,
  log: (line: string) => void,
): Promise<JepsenReport> {
  const prng = new Prng(`jepsen-${options.seed}`);
  const history = new History();
  const dir = await tempDir('jepsen');
  const runTag = `${options.seed}-${process.pid}`;
  log(
    `jepsen: seed ${options.seed}, ${topology.nodes.length} nodes (${topology.nodes.map((n) => `${n.name} ${n.address} in ${n.netns}`).join(', ')}), clients in ${topology.hubNetns} (${topology.hubAddress})`,
  );
  log(
    `jepsen: ${options.rounds} nemesis rounds, ${options.clients} register clients over ${options.keys} keys${options.apiKeys ? ', the API-key workload' : ''}`,
  );
  let cluster: NetnsCluster | null = null;
  let nemesis: Nemesis | null = null;
  let roundsRun = 0;
  const kvClients: KvClient[] = [];
  let keyWorkload: KeyWorkload | null = null;
  let recordings: RecordingsReport | null = null;
  try {
    cluster = await NetnsCluster.start({
      dir,
      hosts: topology.nodes,
      tickMs: options.tickMs,
      logLevel: (process.env.SVC_TEST_LOG_LEVEL ?? 'error') as 'error',
    });
    nemesis = new Nemesis(cluster, topology, history, prng.fork('nemesis'), log);
    nemesis.note('nodes started');
    await nemesis.waitRecovered(START_RECOVER_TIMEOUT_MS);
    const admin = await cluster.bootstrapAdmin();

    let stopping = false;
    const stopped = (): boolean => stopping;
    const members = cluster.nodes.map((n) => n.grpcAddr);
    const keys = Array.from({ length: options.keys }, (_, i) => `jepsen/k${i}`);
    for (let i = 0; i < options.clients; i++) {
      kvClients.push(
        new KvClient({
          index: i,
          home: members[i % members.length]!,
          members,
          keys,
          pool: cluster.store,
          history,
          prng: prng.fork(`client-${i}`),
          runTag,
          timing: KV_TIMING,
        }),
      );
    }
    const workloads: Promise<void>[] = kvClients.map((c) => c.run(stopped));
    if (options.apiKeys) {
      keyWorkload = new KeyWorkload({
        httpUrls: cluster.nodes.map((n) => n.httpUrl),
        adminKey: admin.key,
        history,
        prng: prng.fork('keys'),
        timing: KEY_TIMING,
      });
      workloads.push(keyWorkload.run(stopped));
    }
    // A workload that throws (a bug in the test, an answer that breaks the protocol) ends the run at once.
    let workloadFailure: unknown = null;
    const workloadsDone = Promise.all(
      workloads.map((w) =>
        w.catch((err: unknown) => {
          workloadFailure ??= err;
          stopping = true;
        }),
      ),
    );
    nemesis.note('workload started');
    const observing = nemesis.observe(stopped);

    await sleep(options.warmupMs);
    const drawKinds = prng.fork('kinds');
    const drawHolds = prng.fork('holds');
    for (let round = 0; round < options.rounds && workloadFailure === null; round++) {
      const kind = options.schedule[round] ?? NEMESIS_KINDS[drawKinds.int(NEMESIS_KINDS.length)]!;
      const holdMs =
        kind === 'partition-leader' || kind === 'pause-leader'
          ? options.holdMs
          : drawHolds.between(Math.floor(options.holdMs / 2), options.holdMs);
      await nemesis.round(kind, holdMs, options.recoverTimeoutMs);
      roundsRun++;
      await sleep(options.quietMs);
    }
    stopping = true;
    await Promise.all([workloadsDone, observing]);
    nemesis.note('workload stopped');
    if (workloadFailure !== null) throw workloadFailure;
  } finally {
    await nemesis?.healAll().catch(() => undefined);
    await cluster?.stop().catch((err: unknown) => log(`stopping the cluster: ${String(err)}`));
    try {
      recordings = replayRecordings(
        dir,
        topology.nodes.map((n) => n.name),
      );
    } catch (err) {
      log(`replaying the recordings: ${String(err)}`);
    }
    await rm(dir, { recursive: true, force: true });
  }

  const ops = history.ops;
  log(`jepsen: checking ${ops.length} operations`);
  const result = checkKvHistory(ops, { stepBudget: options.stepBudget });
  const lines: string[] = [];
  if (result.verdict === 'violation') {
    lines.push(`NOT LINEARIZABLE: key ${result.key}${result.minimal ? '' : ' (minimisation stopped at its budget)'}`);
    lines.push(
      'minimal failing operations (times in µs since the run began; the timeline below is in ms on the same clock):',
    );
    lines.push(indent(formatOperations(result.minimalOperations)));
    lines.push('checker says:');
    lines.push(indent(result.explanation));
    lines.push('nemesis timeline around them:');
    lines.push(indent(timelineAround(nemesis?.timeline ?? [], result.minimalOperations)));
  } else if (result.verdict === 'undecided') {
    lines.push(
      `UNDECIDED: key ${result.key} needs more than the step budget (${options.stepBudget}): ${result.explanation}`,
    );
  } else {
    lines.push(`linearizable: ${result.keysChecked} keys, ${result.steps} search steps`);
  }
  const tally = tallyHistory(ops);
  lines.push(
    `history: ${ops.length} operations: ${Object.entries(tally)
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  const kvStats = kvClients.reduce(
    (sum, c) => ({
      getsFailed: sum.getsFailed + c.stats.getsFailed,
      writesFailed: sum.writesFailed + c.stats.writesFailed,
      writesIndeterminate: sum.writesIndeterminate + c.stats.writesIndeterminate,
    }),
    { getsFailed: 0, writesFailed: 0, writesIndeterminate: 0 },
  );
  lines.push(
    `register clients: ${kvStats.getsFailed} gets failed (not in the history), ${kvStats.writesFailed} writes refused everywhere (dropped), ${kvStats.writesIndeterminate} writes indeterminate`,
  );
  if (keyWorkload) {
    const s = keyWorkload.stats;
    lines.push(
      `api keys: ${s.keysCreated} created, ${s.keysRevoked} revoked, ${s.adminCallsIndeterminate} admin calls indeterminate, ${s.usesUnanswered} uses unanswered` +
        `${s.adminCallsRefused.length > 0 ? `; refused admin calls: ${s.adminCallsRefused.join('; ')}` : ''}`,
    );
  }
  if (recordings) {
    lines.push(`flight recordings replayed: ${recordings.ok ? 'identical at every step' : 'DIVERGED'}`);
    lines.push(indent(recordings.lines.join('\n')));
    lines.push(
      `as a scenario on the lockstep world: ${recordings.scenarioError === '' ? 'pass' : recordings.scenarioError}`,
    );
    lines.push(indent(recordings.scenario.trim()));
  }
  lines.push(`nemesis: ${roundsRun} rounds, ${nemesis?.unrecovered ?? 0} without recovery in time; timeline (ms):`);
  lines.push(indent((nemesis?.timeline ?? []).map((e) => `${String(e.atMs).padStart(6)}  ${e.text}`).join('\n')));
  const completed = (kind: string): number =>
    ops.filter(
      (op) =>
        !op.input.key.startsWith('apikey/') &&
        op.output !== null &&
        (kind === 'get' ? op.input.kind === 'get' : op.input.kind !== 'get'),
    ).length;
  return {
    verdict: result.verdict,
    text: lines.join('\n'),
    operations: ops.length,
    completedGets: completed('get'),
    completedWrites: completed('write'),
    keysRevoked: keyWorkload?.stats.keysRevoked ?? 0,
    roundsRun,
    unrecoveredRounds: nemesis?.unrecovered ?? 0,
    replayOk: recordings?.ok ?? false,
    replaySteps: (recordings?.lines ?? []).filter((l) => l.startsWith('replay ')).join('; '),
    scenarioError: recordings ? recordings.scenarioError : 'not replayed',
    scenario: recordings?.scenario ?? '',
  };
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}

/** timelineAround lists the timeline entries from a little before the first operation to a little after the last. */
function timelineAround(timeline: readonly TimelineEntry[], ops: readonly KvOperation[]): string {
  const MARGIN_MS = 3_000;
  const fromMs = Math.min(...ops.map((op) => op.callTime)) / 1000 - MARGIN_MS;
  const toMs = Math.max(...ops.map((op) => op.returnTime ?? op.callTime)) / 1000 + MARGIN_MS;
  const near = timeline.filter((e) => e.atMs >= fromMs && e.atMs <= toMs);
  const opsSpan = `the operations span ${(fromMs + MARGIN_MS).toFixed(0)}..${(toMs - MARGIN_MS).toFixed(0)} ms`;
  return [opsSpan, ...(near.length > 0 ? near : timeline).map((e) => `${String(e.atMs).padStart(6)}  ${e.text}`)].join(
    '\n',
  );
}

// ---- the process entry (when launched by launch.ts) ----

if (process.send !== undefined && process.argv[2] !== undefined && process.env.SVC_JEPSEN_RUNNER === '1') {
  const { options, topology } = JSON.parse(process.argv[2]) as { options: JepsenOptions; topology: Topology };
  const log = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };
  runJepsenInHub(options, topology, log).then(
    (report) => process.send!({ type: 'report', report }, () => process.exit(0)),
    (err: unknown) =>
      process.send!({ type: 'error', error: err instanceof Error ? (err.stack ?? err.message) : String(err) }, () =>
        process.exit(1),
      ),
  );
}
