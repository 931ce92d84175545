// The node's flight recorder settings (NodeConfig.recording) and its start: on by default, into
// <data-dir>/recording/, values hashed with the key in <data-dir>/recording.key (docs/operations.md,
// "Flight recorder").
import { join } from 'node:path';
import type { Engine } from '../../engine/engine.js';
import type { RestoredState } from '../../engine/types.js';
import { PAYLOAD_MODES, type PayloadMode } from '../../recording/format.js';
import { FlightRecorder, recordingLimits, type RecordingLimits } from '../../transports/node/recorder.js';
import type { Logger } from '../../transports/node/logger.js';

export const RECORDING_DIR = 'recording';
export const RECORDING_KEY_FILE = 'recording.key';

export function recordingDir(dataDir: string): string {
  return join(dataDir, RECORDING_DIR);
}

export interface NodeRecordingConfig {
  /** enabled: record every engine step (default true; `svc node --no-recording` turns it off). */
  enabled?: boolean;
  /** payloads: `hashed` (default) records the store's values as keyed hashes; `full` records them whole. */
  payloads?: PayloadMode;
  /** effectTexts: write each step's effects as text beside its digest (default true). */
  effectTexts?: boolean;
  limits?: Partial<RecordingLimits>;
}

/** recordingConfigProblem names what is wrong with NodeConfig.recording, null when nothing is. */
export function recordingConfigProblem(recording: unknown): string | null {
  if (recording === undefined) return null;
  if (typeof recording !== 'object' || recording === null || Array.isArray(recording))
    return 'recording must be an object, e.g. {"enabled": false}';
  const r = recording as NodeRecordingConfig;
  if (r.enabled !== undefined && typeof r.enabled !== 'boolean') return 'recording.enabled must be true or false';
  if (r.effectTexts !== undefined && typeof r.effectTexts !== 'boolean')
    return 'recording.effectTexts must be true or false';
  if (r.payloads !== undefined && !PAYLOAD_MODES.includes(r.payloads))
    return `recording.payloads must be one of ${PAYLOAD_MODES.join(', ')}`;
  try {
    recordingLimits(r.limits);
  } catch (err) {
    return (err as Error).message;
  }
  return null;
}

export async function startRecording(
  config: { name: string; dataDir: string; recording?: NodeRecordingConfig; limits: { tickMs: number } },
  engine: Engine,
  restored: RestoredState,
  build: string,
  log: Logger,
): Promise<FlightRecorder | null> {
  const recording = config.recording ?? {};
  if (recording.enabled === false) return null;
  // The recording must never keep the node from running: a recorder that cannot start is logged and skipped.
  return FlightRecorder.open({
    dir: join(config.dataDir, RECORDING_DIR),
    keyFile: join(config.dataDir, RECORDING_KEY_FILE),
    node: config.name,
    build,
    tickMs: config.limits.tickMs,
    payloads: recording.payloads ?? 'hashed',
    effectTexts: recording.effectTexts ?? true,
    config: engine.config,
    restored,
    exportState: () => engine.exportState(),
    logEntryCount: () => engine.status().lastSeq - engine.logBase().seq,
    limits: recordingLimits(recording.limits),
    onError: (err) => log.warn({ err: err.message }, 'flight recording stopped: a write failed (the node runs on)'),
  }).catch((err: unknown) => {
    log.warn({ err: String(err) }, 'flight recording not started (the node runs without it)');
    return null;
  });
}
