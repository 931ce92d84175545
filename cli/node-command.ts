// `svc node`: one node in the foreground. It stops cleanly on SIGINT or SIGTERM (a leader first hands leadership to
// its most caught-up voter, within handoffTimeoutMs: cli/node/handoff.ts), during its start too (a second signal
// exits at once), when the parent that started it over IPC goes away (`svc cluster`), and exits 1
// when the node fails (fail-stop: a WAL or hard-state write failed).
// --help and --print-config answer from the schema alone: the node (gRPC, the store) loads only to run.
import type { Node } from './node/node.js';
import { ConfigError } from './node/config.js';
import { SETTINGS_BY_KEY } from './node/config-schema.js';
import { nodeUsage } from './node/config-help.js';
import { parseFlags } from './flags.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, NODE_STOP_TIMEOUT_MS } from './limits.js';
import { NODE_FLAGS, printConfigText, resolveCliConfig } from './node-config.js';
import type { Io } from './io.js';
import { join } from 'node:path';
import { UsageError } from './usage.js';

/** WRITE_TRACE_DIR_ENV names the variable of writeTraceDir (bench/write-timeline.ts sets it for its nodes). */
export const WRITE_TRACE_DIR_ENV = SETTINGS_BY_KEY.get('writeTraceDir')!.env!;

/** SIGNAL_EXIT_CODE is the exit code after a second signal cut the clean stop short. */
const SIGNAL_EXIT_CODE = 130;

export async function runNodeCommand(args: string[], io: Io): Promise<number> {
  const { values } = parseFlags(args, NODE_FLAGS);
  if (values.help === true) {
    io.out.write(`${nodeUsage()}\n`);
    return EXIT_OK;
  }
  const resolved = await resolveCliConfig(values, io.env ?? process.env);
  const config = resolved.config;
  if (values['print-config'] === true) {
    io.out.write(printConfigText(resolved));
    return EXIT_OK;
  }
  const [{ Node }, { recordWriteTrace }] = await Promise.all([
    import('./node/node.js'),
    import('../transports/node/write-trace.js'),
  ]);
  let node: Node;
  try {
    node = new Node(config);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }

  // The write timeline (bench/write-timeline.ts): every stamp of this node into <dir>/<name>.jsonl.
  const traceDir = config.writeTraceDir;
  const stopTrace =
    traceDir !== undefined
      ? recordWriteTrace(join(traceDir, `${config.name}.jsonl`), {
          name: config.name,
          grpcAddr: () => node.grpcAddress,
        })
      : () => undefined;

  let stopRequested: (why: string) => void = () => undefined;
  const stopAsked = new Promise<string>((resolve) => {
    stopRequested = resolve;
  });
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) {
      io.err.write(`svc node ${config.name}: ${signal} again, exiting without a clean stop\n`);
      process.exit(SIGNAL_EXIT_CODE);
    }
    stopRequested(signal);
  };
  const onDisconnect = (): void => stopRequested('parent process went away');
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  if (process.connected) process.once('disconnect', onDisconnect);
  try {
    // A stop asked for while the node starts ends the start: a start can wait without bound (the developer API
    // waits for its Redis), and a pod gets one SIGTERM, then SIGKILL after its grace.
    const started = node.start().then(
      () => ({ failed: null }),
      (err: unknown) => ({ failed: err instanceof Error ? err : new Error(String(err)) }),
    );
    const first = await Promise.race([started, stopAsked.then((why) => ({ stopAsked: why }))]);
    if ('stopAsked' in first) {
      io.err.write(`svc node ${config.name}: stopping before it finished starting (${first.stopAsked})\n`);
      const stopped = await withTimeout(node.stop(), NODE_STOP_TIMEOUT_MS);
      io.err.write(`svc node ${config.name}: ${stopped ? 'stopped' : 'did not stop in time; exiting anyway'}\n`);
      reportStillActive(io, config.name);
      return stopped ? EXIT_OK : EXIT_FAILED;
    }
    if (first.failed) {
      io.err.write(`svc node ${config.name}: start failed: ${first.failed.message}\n`);
      return first.failed instanceof ConfigError ? EXIT_USAGE : EXIT_FAILED;
    }
    io.err.write(
      `svc node ${config.name}: running (gRPC ${node.grpcAddress}, HTTP ${node.httpAddress}, metrics ${node.metricsAddress}, ${config.tls.mode === 'mtls' ? 'mutual TLS' : 'PLAINTEXT'})\n`,
    );
    process.send?.({
      type: 'started',
      name: config.name,
      grpcAddr: node.grpcAddress,
      httpAddr: node.httpAddress,
      metricsAddr: node.metricsAddress,
    });

    const outcome = await Promise.race([
      stopAsked.then((why) => ({ failed: null, why })),
      node.failed.then((err) => ({ failed: err, why: `node failed: ${err.message}` })),
    ]);
    io.err.write(`svc node ${config.name}: stopping (${outcome.why})\n`);
    if (outcome.failed === null) {
      // A leader stopped by a signal (every rolling restart, every eviction) hands over first: one term change, no election timeout.
      const handoff = await node.handOffLeadership();
      if (handoff.outcome === 'handed')
        io.err.write(`svc node ${config.name}: handed leadership to ${handoff.to} (attempts ${handoff.attempts})\n`);
      else if (handoff.outcome === 'gave-up')
        io.err.write(`svc node ${config.name}: leadership not handed over (${handoff.lastError}); stopping anyway\n`);
    }
    const stopped = await withTimeout(node.stop(), NODE_STOP_TIMEOUT_MS);
    if (!stopped) {
      io.err.write(`svc node ${config.name}: did not stop within ${NODE_STOP_TIMEOUT_MS} ms; exiting anyway\n`);
      return EXIT_FAILED;
    }
    io.err.write(`svc node ${config.name}: stopped\n`);
    reportStillActive(io, config.name);
    return outcome.failed ? EXIT_FAILED : EXIT_OK;
  } finally {
    stopTrace();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('disconnect', onDisconnect);
  }
}

/**
 * SETTLING_RESOURCES are what a finished stop may still have in flight for an instant (closes, file operations)
 * and the process's own stdio (pipes or a terminal): none of them is the node's.
 */
const SETTLING_RESOURCES = new Set([
  'CloseReq',
  'FSReqCallback',
  'FSReqPromise',
  'FileHandleCloseReq',
  'PipeWrap',
  'TTYWrap',
]);

/**
 * reportStillActive names, by type and count, what still keeps the event loop alive once the stop has finished
 * (process.getActiveResourcesInfo: types only, never addresses or contents). runMain exits at once after it, but
 * process.exit waits for work running in libuv's threadpool: a GetAddrInfoReqWrap here (a host-name lookup the
 * DNS does not answer) delays the exit until it ends, which is how a stopped pod got SIGKILLed after its grace.
 */
function reportStillActive(io: Io, name: string): void {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo())
    if (!SETTLING_RESOURCES.has(type)) counts.set(type, (counts.get(type) ?? 0) + 1);
  if (counts.size === 0) return;
  const listed = [...counts].map(([type, count]) => `${type} ${count}`).join(', ');
  const lookups = counts.has('GetAddrInfoReqWrap')
    ? " (a host-name lookup in libuv's threadpool: the exit waits for it to end)"
    : '';
  io.err.write(`svc node ${name}: exiting with still active: ${listed}${lookups}\n`);
}

async function withTimeout(work: Promise<void>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([work.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
