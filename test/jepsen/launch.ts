// Runs one Jepsen-style run from the host's namespace: removes what crashed earlier runs left, builds the
// network (netns.ts), starts the runner inside the hub namespace, and in every case (a failure, a timeout)
// kills what still runs in the run's namespaces and deletes them. Used by the CI test (jepsen.test.ts) and by
// `make jepsen` (main.ts).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTopology, netnsExec, netnsUnavailable, removeLeftovers, removeTopology } from './netns.js';
import type { JepsenOptions, JepsenReport } from './options.js';

const runnerEntry = fileURLToPath(new URL('./runner.ts', import.meta.url));
/** NODE_NAMES are the cluster's members. */
export const NODE_NAMES = ['n1', 'n2', 'n3'];

export type LaunchOutcome = { skipped: string } | { report: JepsenReport };

/** launchJepsen runs one run; `log` receives the runner's output line by line (its own and the nodes' stderr). */
export async function launchJepsen(options: JepsenOptions, log: (line: string) => void): Promise<LaunchOutcome> {
  const unavailable = await netnsUnavailable();
  if (unavailable !== null) return { skipped: unavailable };
  const leftovers = await removeLeftovers();
  if (leftovers.length > 0) log(`jepsen: removed leftovers of earlier runs: ${leftovers.join(', ')}`);
  const topology = await createTopology(NODE_NAMES);
  try {
    return { report: await runInHub(options, topology, log) };
  } finally {
    await removeTopology(topology);
  }
}

function runInHub(
  options: JepsenOptions,
  topology: Awaited<ReturnType<typeof createTopology>>,
  log: (line: string) => void,
): Promise<JepsenReport> {
  const [wrapper, ...wrapperArgs] = netnsExec(topology.hubNetns);
  // The nodes must not find a Redis or an API secret in the environment: the run's configuration is all theirs.
  const env: NodeJS.ProcessEnv = { ...process.env, SVC_JEPSEN_RUNNER: '1' };
  for (const name of ['REDIS_URL', 'SVC_SECRET_KEY', 'SVC_SECRET_KEY_FILE', 'SVC_RATE_LIMIT_RPS']) delete env[name];
  const child = fork(runnerEntry, [JSON.stringify({ options, topology })], {
    execPath: wrapper!,
    execArgv: [...wrapperArgs, process.execPath, '--import', 'tsx'],
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  const lines = (stream: NodeJS.ReadableStream | null): void => {
    let rest = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      for (const line of parts) log(line);
    });
    stream?.on('end', () => {
      if (rest !== '') log(rest);
    });
  };
  lines(child.stdout);
  lines(child.stderr);
  return new Promise<JepsenReport>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settle(() => reject(new Error(`the run did not finish within ${options.timeoutMs} ms`)));
      child.kill('SIGKILL');
    }, options.timeoutMs);
    const settle = (how: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      how();
    };
    child.on('message', (message: { type: string; report?: JepsenReport; error?: string }) => {
      if (message.type === 'report' && message.report) settle(() => resolve(message.report!));
      else if (message.type === 'error') settle(() => reject(new Error(`the run failed: ${message.error}`)));
    });
    child.once('exit', (code, signal) =>
      settle(() => reject(new Error(`the runner exited (${signal ?? `code ${code}`}) without a report`))),
    );
  });
}
