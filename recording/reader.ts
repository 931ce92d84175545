// readRecording: a recording directory (or one segment file) as the runs it holds, in order; a segment of
// JSON lines (formats 1 to 4) or of records (format 5, recording/step-record.ts). A file is input: a line
// or record that does not decode is refused with its file and number, except the last of a segment, which
// a node killed mid-write may have left torn (it is dropped).
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { decodeLine } from './codec.js';
import { readStepRecord, RECORD_HEADER_BYTES, RECORD_JSON, RECORD_STEP } from './step-record.js';
import {
  READABLE_FORMAT_VERSIONS,
  SEGMENT_FILE,
  type CheckpointLine,
  type GapLine,
  type RecordingLine,
  type RunLine,
  type SegmentLine,
  type StepLine,
} from './format.js';

/** RECORDING_READ_BYTES_MAX bounds what one read takes in (a recording's default ring is far smaller). */
export const RECORDING_READ_BYTES_MAX = 2 * 1024 * 1024 * 1024;

export interface RecordedRun {
  run: string;
  node: string;
  /** version is the run's format version (its segment lines'): replay computes that version's digest. */
  version: number;
  /** head is the run's start state; null when its first segment was rotated out of the ring. */
  head: RunLine | null;
  /** checkpoint is the earliest checkpoint line left (format 3): where a run without its head replays from. */
  checkpoint: CheckpointLine | null;
  steps: StepLine[];
  /** gap: steps from gap.n on were not recorded; replay stops there. */
  gap: GapLine | null;
  /** torn counts lines dropped at a segment's end (a crash mid-write). */
  torn: number;
  files: string[];
}

export function recordingFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .filter((name) => SEGMENT_FILE.test(name))
    .sort()
    .map((name) => join(path, name));
}

export function readRecording(path: string): RecordedRun[] {
  const runs: RecordedRun[] = [];
  let total = 0;
  for (const file of recordingFiles(path)) {
    total += statSync(file).size;
    if (total > RECORDING_READ_BYTES_MAX) throw new Error(`${path} holds more than ${RECORDING_READ_BYTES_MAX} bytes`);
    readSegment(file, runs);
  }
  return runs;
}

/**
 * SegmentItem: one line of a segment (formats 1 to 4) or one record (format 5), decoded, or why not. `json`:
 * it was JSON (a line, or a record of kind RECORD_JSON), so it may hold keys no build of ours writes.
 */
type SegmentItem = { line: { t?: unknown }; error: null; json: boolean } | { line: null; error: Error };

/**
 * LINE_KEYS: every key a line of each type has held in any format (1 to 6; none was ever renamed or
 * dropped, `tickMs` came after the first build, `fx` became optional in format 4). A JSON line is
 * input from another process, maybe another build: a key beyond these is refused, naming the file, the line
 * and the key, rather than dropped, since a replay that ignored it could replay something other than what
 * the node recorded (a newer format adds keys with a new version number, which is refused first). Inputs
 * (`in`) are not checked here: a wire body may hold a key the engine's types do not declare, and the
 * recorder keeps it on purpose (recording/step-record.ts).
 */
const LINE_KEYS: Readonly<Record<string, ReadonlySet<string>>> = {
  seg: new Set(['t', 'v', 'run', 'node', 'index', 'firstStep']),
  run: new Set(['t', 'v', 'run', 'node', 'build', 'startedAtMs', 'tickMs', 'payloads', 'config', 'restored']),
  ckpt: new Set([
    't',
    'v',
    'run',
    'node',
    'build',
    'startedAtMs',
    'tickMs',
    'payloads',
    'after',
    'at',
    'config',
    'state',
  ]),
  step: new Set(['t', 'n', 'tick', 'at', 'in', 'd', 'fx']),
  gap: new Set(['t', 'n', 'at', 'reason']),
};

/** refuseUnknownKeys throws when a JSON line of a known type holds a key LINE_KEYS does not list for it. */
function refuseUnknownKeys(line: { t?: unknown }, file: string, what: string, number: number): void {
  const keys = typeof line.t === 'string' ? LINE_KEYS[line.t] : undefined;
  if (keys === undefined) return; // an unknown type is refused by the caller, naming it
  for (const key of Object.keys(line)) {
    if (!keys.has(key))
      throw new Error(
        `${file} ${what} ${number}: unknown key ${JSON.stringify(key)} in a ${String(line.t)} line (this build reads ${[...keys].join(', ')}; a newer build's recording?)`,
      );
  }
}

/** jsonLines: a segment of JSON lines (formats 1 to 4). */
function* jsonLines(bytes: Buffer): Generator<SegmentItem, void, undefined> {
  const lines = bytes.toString('utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const text of lines) yield decodeItem(() => decodeLine(text), true);
}

/**
 * records: a segment of format 5's records (recording/step-record.ts). A record whose header or body runs
 * past the file's end is a torn last record; so is a zero byte where a record starts (a crash can leave a
 * file's end as zeros).
 */
function* records(bytes: Buffer): Generator<SegmentItem, void, undefined> {
  let at = 0;
  while (at < bytes.length) {
    const kind = bytes[at]!;
    if (at + RECORD_HEADER_BYTES > bytes.length || kind === 0) {
      yield { line: null, error: new Error('the file ends inside a record header') };
      return;
    }
    const length = bytes.readUInt32LE(at + 1);
    const from = at + RECORD_HEADER_BYTES;
    const end = from + length;
    if (end > bytes.length) {
      yield { line: null, error: new Error('the file ends inside a record') };
      return;
    }
    if (kind === RECORD_JSON) yield decodeItem(() => decodeLine(bytes.toString('utf8', from, end)), true);
    else if (kind === RECORD_STEP) yield decodeItem(() => readStepRecord(bytes, from, end), false);
    else yield { line: null, error: new Error(`unknown record kind ${kind}`) };
    at = end;
  }
}

function decodeItem(decode: () => unknown, json: boolean): SegmentItem {
  try {
    const line = decode();
    if (typeof line !== 'object' || line === null) throw new Error('not an object');
    return { line: line as { t?: unknown }, error: null, json };
  } catch (error) {
    return { line: null, error: error as Error };
  }
}

/** readSegmentLines: every line (format 5: record) of one segment file, decoded; one that does not decode throws. */
export function readSegmentLines(file: string): RecordingLine[] {
  const bytes = readFileSync(file);
  return [...(bytes[0] === 0x7b ? jsonLines(bytes) : records(bytes))].map((item, i) => {
    if (item.line === null) throw new Error(`${basename(file)} item ${i + 1}: ${item.error.message}`);
    if (item.json) refuseUnknownKeys(item.line, file, 'item', i + 1);
    return item.line as RecordingLine;
  });
}

function readSegment(file: string, runs: RecordedRun[]): void {
  const bytes = readFileSync(file);
  // Formats 1 to 4 are JSON lines (the first byte is `{`); format 5 starts with a record's kind.
  const binary = bytes.length > 0 && bytes[0] !== 0x7b;
  const what = binary ? 'record' : 'line';
  const items = [...(binary ? records(bytes) : jsonLines(bytes))];
  let run: RecordedRun | null = null;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const line = item.line;
    if (line === null) {
      if (i === items.length - 1 && run) {
        run.torn++;
        break;
      }
      throw new Error(`${basename(file)} ${what} ${i + 1} is not a recording ${what}: ${item.error.message}`, {
        cause: item.error,
      });
    }
    if (i === 0) {
      const seg = line as SegmentLine;
      if (seg.t !== 'seg') throw new Error(`${basename(file)} does not start with a segment line`);
      if (typeof seg.v !== 'number' || !READABLE_FORMAT_VERSIONS.includes(seg.v))
        throw new Error(
          `${basename(file)} is format ${String(seg.v)}; this build reads formats ${READABLE_FORMAT_VERSIONS.slice(0, -1).join(', ')} and ${READABLE_FORMAT_VERSIONS.at(-1)!} (replay it with the build that recorded it)`,
        );
      run = runs.find((r) => r.run === seg.run) ?? null;
      if (!run) {
        run = {
          run: seg.run,
          node: seg.node,
          version: seg.v,
          head: null,
          checkpoint: null,
          steps: [],
          gap: null,
          torn: 0,
          files: [],
        };
        runs.push(run);
      }
      refuseUnknownKeys(line, file, what, i + 1);
      run.files.push(file);
      continue;
    }
    if (!run) break;
    if (item.json) refuseUnknownKeys(line, file, what, i + 1);
    if (line.t === 'run') run.head = line as RunLine;
    else if (line.t === 'ckpt') {
      // Only the earliest is kept (a checkpoint holds a whole engine state): replay starts there.
      if (run.head === null && run.checkpoint === null && run.gap === null) run.checkpoint = line as CheckpointLine;
    } else if (line.t === 'step') {
      if (run.gap === null) run.steps.push(line as StepLine);
    } else if (line.t === 'gap') run.gap ??= line as GapLine;
    else throw new Error(`${basename(file)} ${what} ${i + 1} has unknown type ${JSON.stringify(line.t)}`);
  }
}
