// The layout of a `svc debug bundle` file (cli/debug-command.ts writes it; `npm run sim -- --replay FILE`
// reads it): one gzipped tar holding bundle.json (what was gathered, the window) and, per member,
// <member>/status.json, <member>/metrics.txt, <member>/logs.jsonl and <member>/recording/seg-*.rec.
// The tar format is the `tar` package's (node-tar), not ours. A bundle is input: extraction takes only
// regular files and folders of this layout, within a byte bound, and never a path outside its folder.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as tar from 'tar';
import { RECORDING_READ_BYTES_MAX } from './reader.js';

/** BUNDLE_FILE matches the name of a bundle file (the other form of --out is a folder). */
export const BUNDLE_FILE = /\.(tar\.gz|tgz)$/;
export const BUNDLE_MANIFEST = 'bundle.json';
export const BUNDLE_FORMAT_VERSION = 1;

/** BUNDLE_EXTRACT_BYTES_MAX bounds what one bundle may unpack to (a member's recording is read within RECORDING_READ_BYTES_MAX). */
export const BUNDLE_EXTRACT_BYTES_MAX = 4 * RECORDING_READ_BYTES_MAX;

/** memberFiles: where each member's parts sit in a bundle, relative to its root. */
export function memberFiles(member: string): { recording: string; status: string; metrics: string; logs: string } {
  return {
    recording: `${member}/recording`,
    status: `${member}/status.json`,
    metrics: `${member}/metrics.txt`,
    logs: `${member}/logs.jsonl`,
  };
}

/** BundleManifest is bundle.json. */
export interface BundleManifest {
  v: number;
  createdAt: string;
  /** window: ISO times; '' = unbounded on that side. */
  window: { since: string; until: string };
  members: Array<{
    name: string;
    segments: number;
    recordingBytes: number;
    logLines: number;
    /** logsNote says what of the logs is not there (lines the node's ring let go), '' when nothing. */
    logsNote: string;
    /** metrics: where /metrics was scraped, or why it was not. */
    metrics: string;
    /** error: why this member's parts are missing, '' when gathered. */
    error: string;
  }>;
}

/** ENTRY_PATH: the paths a bundle may hold (a folder ends with /). */
const ENTRY_PATH =
  /^(?:\.\/)?(?:bundle\.json|[A-Za-z0-9][A-Za-z0-9._-]{0,127}\/(?:|status\.json|metrics\.txt|logs\.jsonl|recording\/|recording\/seg-\d{12}\.rec))$/;

export function isBundleFile(path: string): boolean {
  return BUNDLE_FILE.test(path) && existsSync(path) && statSync(path).isFile();
}

/**
 * extractBundle unpacks a bundle into `into` (an empty folder) and answers its members' recording
 * folders, in member order. It throws, naming the entry, on a link, a device, a path outside the
 * layout, or more than BUNDLE_EXTRACT_BYTES_MAX bytes, before anything is written.
 */
export function extractBundle(file: string, into: string): string[] {
  let bytes = 0;
  const problems: string[] = [];
  tar.t({
    file,
    sync: true,
    strict: true,
    onReadEntry: (entry) => {
      const path = entry.path;
      if (entry.type !== 'File' && entry.type !== 'Directory') problems.push(`${path} is a ${entry.type}`);
      else if (!ENTRY_PATH.test(entry.type === 'Directory' && !path.endsWith('/') ? `${path}/` : path))
        problems.push(`${path} is not a bundle's file`);
      bytes += entry.size ?? 0;
      entry.resume();
    },
  });
  if (problems.length > 0) throw new Error(`${file} is not a debug bundle: ${problems.slice(0, 3).join('; ')}`);
  if (bytes > BUNDLE_EXTRACT_BYTES_MAX)
    throw new Error(`${file} unpacks to ${bytes} bytes, over BUNDLE_EXTRACT_BYTES_MAX ${BUNDLE_EXTRACT_BYTES_MAX}`);
  tar.x({ file, cwd: into, sync: true, strict: true, preservePaths: false });
  return readdirSync(into)
    .filter((name) => existsSync(join(into, name, 'recording')))
    .sort()
    .map((name) => join(into, name, 'recording'));
}
