// Paths inside a snapshot artifact come from the state machine when staging and from a peer when
// installing, so they are checked the same strict way: relative, '/'-separated, no '.', '..' or
// empty segments, no backslash or NUL, bounded length, and no file that is also a directory.
export const META_FILE = 'meta.json';
export const MANIFEST_FILE = 'manifest.json';

/** SnapshotError is a refused stage or install, or an artifact that does not read back whole. */
export class SnapshotError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotError';
  }
}

/** pathProblem says why `path` may not name a file in an artifact, null when it may. */
export function pathProblem(path: unknown, pathBytesMax: number): string | null {
  if (typeof path !== 'string' || path.length === 0) return 'path must be a non-empty string';
  if (Buffer.byteLength(path, 'utf8') > pathBytesMax)
    return `path is longer than snapshotPathBytesMax (${pathBytesMax} bytes)`;
  if (path.includes('\0')) return 'path contains NUL';
  if (path.includes('\\')) return 'path contains a backslash';
  if (path.startsWith('/')) return 'path is absolute';
  for (const segment of path.split('/')) {
    if (segment === '') return 'path has an empty segment';
    if (segment === '.' || segment === '..') return `path has a '${segment}' segment`;
  }
  if (path === MANIFEST_FILE) return `${MANIFEST_FILE} is reserved for the artifact's manifest`;
  return null;
}

/** pathListProblem checks a whole list: every path valid, none repeated, none inside another. */
export function pathListProblem(paths: readonly string[], pathBytesMax: number): string | null {
  const seen = new Set<string>();
  for (const path of paths) {
    const problem = pathProblem(path, pathBytesMax);
    if (problem !== null) return `${JSON.stringify(String(path).slice(0, 200))}: ${problem}`;
    if (seen.has(path)) return `${JSON.stringify(path)} is listed twice`;
    seen.add(path);
  }
  for (const path of paths) {
    for (let cut = path.indexOf('/'); cut !== -1; cut = path.indexOf('/', cut + 1)) {
      if (seen.has(path.slice(0, cut))) return `${JSON.stringify(path.slice(0, cut))} is both a file and a directory`;
    }
  }
  return null;
}
