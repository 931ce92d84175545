// The events of an agent run's stream (GET /runs/{id}/events). The OpenAPI document describes the stream only
// as text/event-stream, so these payload types are written here, from its description and api/runs.
import { SvcStreamError } from './errors.js';
import type { EventDecoder } from './event-stream.js';
import type { SseEvent } from './sse-parser.js';

export type RunFinalStatus = 'succeeded' | 'failed' | 'cancelled' | 'timed_out';

export interface RunQueuedData {
  runId: string;
  projectId: string;
}
/** RunSandbox is what the worker states about the run's isolation: its uid, network and limits, and by what each holds. */
export interface RunSandbox {
  /** backend: `bubblewrap` on the worker's host, or `kubernetes`. */
  backend: string;
  uid: number | null;
  network: 'none' | 'egress-filtered';
  limits: {
    memoryBytes: number;
    processes: number;
    cpuCores: number | null;
    cpuSecondsPerProcess: number;
    tmpBytes: number;
    workspaceBytes: number;
    fileBytes: number;
    openFiles: number;
    wallMs: number;
  };
  enforcement: { memory: string; processes: string; cpu: string; workspace: string; user: string };
}
export interface RunStartedData {
  startedAt: string;
  sandbox?: RunSandbox;
}
/** RunCredentialsData names the credentials a run got (never their values). */
export interface RunCredentialsData {
  injected: Array<{ category: string; name: string; as: 'env' | 'file'; target: string }>;
}
export interface RunOutputData {
  stream: 'stdout' | 'stderr';
  text: string;
}
/** code, when present, says why the worker ended or refused the run (JOB_MISMATCH, CREDENTIAL_MISSING, ...). */
export interface RunNoticeData {
  message: string;
  code?: string;
}
export interface RunCompleteData {
  status: RunFinalStatus;
  exitCode: number | null;
  durationMs: number;
}

/** RunEvent is one event of a run's stream; `id` is what Last-Event-ID resumes after. */
export type RunEvent =
  | { id: string; event: 'queued'; data: RunQueuedData }
  | { id: string; event: 'started'; data: RunStartedData }
  | { id: string; event: 'credentials'; data: RunCredentialsData }
  | { id: string; event: 'output'; data: RunOutputData }
  | { id: string; event: 'notice'; data: RunNoticeData }
  | { id: string; event: 'complete'; data: RunCompleteData }
  /** unrecognized: an event this SDK version does not know (a newer server); `name` is its event type. */
  | { id: string; event: 'unrecognized'; name: string; data: unknown };

type Fields = Record<string, unknown>;
const isString = (value: unknown) => typeof value === 'string';
const isIntegerOrNull = (value: unknown) => value === null || Number.isInteger(value);

/** checks says, per known event, what its data must hold. */
const checks = new Map<string, (data: Fields) => boolean>([
  ['queued', (data) => isString(data.runId) && isString(data.projectId)],
  ['started', (data) => isString(data.startedAt)],
  ['output', (data) => (data.stream === 'stdout' || data.stream === 'stderr') && isString(data.text)],
  ['notice', (data) => isString(data.message) && (data.code === undefined || isString(data.code))],
  [
    'credentials',
    (data) =>
      Array.isArray(data.injected) &&
      data.injected.every(
        (item: unknown) =>
          typeof item === 'object' &&
          item !== null &&
          isString((item as Fields).name) &&
          isString((item as Fields).target),
      ),
  ],
  [
    'complete',
    (data) =>
      ['succeeded', 'failed', 'cancelled', 'timed_out'].includes(data.status as string) &&
      isIntegerOrNull(data.exitCode) &&
      Number.isInteger(data.durationMs),
  ],
]);

/** decodeRunEvent checks one SSE event of a run stream; a known event with the wrong data is an error. */
export function decodeRunEvent(event: SseEvent): RunEvent {
  let data: unknown;
  try {
    data = JSON.parse(event.data);
  } catch {
    if (!checks.has(event.event)) return { id: event.id, event: 'unrecognized', name: event.event, data: event.data };
    throw new SvcStreamError('MALFORMED_EVENT', `the ${event.event} event ${event.id} has data that is not JSON`);
  }
  const check = checks.get(event.event);
  if (!check) return { id: event.id, event: 'unrecognized', name: event.event, data };
  if (typeof data !== 'object' || data === null || Array.isArray(data) || !check(data as Fields)) {
    throw new SvcStreamError(
      'MALFORMED_EVENT',
      `the ${event.event} event ${event.id} does not have the expected data: ${event.data.slice(0, 200)}`,
    );
  }
  return { id: event.id, event: event.event, data } as RunEvent;
}

/** runEventDecoder decodes a run's stream, which ends with its `complete` event. */
export const runEventDecoder: EventDecoder<RunEvent> = {
  decode: decodeRunEvent,
  isFinal: (event) => event.event === 'complete',
};

/** ChannelEvent is an event of a stream this SDK does not type (the user channel, GET /events): `data` is the
 * parsed JSON, or the text when it is not JSON. */
export interface ChannelEvent {
  id: string;
  event: string;
  data: unknown;
}

/** channelEventDecoder decodes an open-ended stream: no event ends it, the caller does (break or signal). */
export const channelEventDecoder: EventDecoder<ChannelEvent> = {
  decode(event) {
    let data: unknown = event.data;
    try {
      data = JSON.parse(event.data);
    } catch {
      // Not JSON: handed over as text.
    }
    return { id: event.id, event: event.event, data };
  },
  isFinal: () => false,
};
