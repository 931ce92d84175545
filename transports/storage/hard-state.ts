// HardStateStore keeps the engine's HardState in `<data>/hard-state.json`, replaced atomically
// (temp file, fsync, rename, fsync the directory), so a crash leaves the old or the new state.
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { HardState, Roster } from '../../engine/types.js';
import { isNotFound, writeFileAtomic } from './durable-fs.js';
import { DEFAULT_STORAGE_LIMITS, type StorageLimits } from './limits.js';

export const HARD_STATE_FILE = 'hard-state.json';
const HARD_STATE_VERSION = 1;

export class HardStateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HardStateError';
  }
}

export class HardStateStore {
  /** Saves run one at a time, in call order, so the file always ends at the newest state. */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly dataDir: string,
    private readonly limits: StorageLimits = DEFAULT_STORAGE_LIMITS,
  ) {}

  /** load reads the saved state; null means none was ever saved (a fresh node). */
  async load(): Promise<HardState | null> {
    let bytes: Buffer;
    try {
      bytes = await readFile(join(this.dataDir, HARD_STATE_FILE));
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
    if (bytes.length > this.limits.hardStateBytesMax) {
      throw new HardStateError(
        `${HARD_STATE_FILE} is ${bytes.length} bytes, above hardStateBytesMax (${this.limits.hardStateBytesMax})`,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(bytes.toString('utf8'));
    } catch (err) {
      throw new HardStateError(`${HARD_STATE_FILE} is not JSON: ${(err as Error).message}`);
    }
    return parseHardStateFile(parsed);
  }

  /** save makes `hardState` durable; it resolves only once the rename is synced. */
  save(hardState: HardState): Promise<void> {
    const problem = hardStateProblem(hardState);
    if (problem !== null) return Promise.reject(new HardStateError(`refusing to save hard state: ${problem}`));
    const bytes = Buffer.from(`${JSON.stringify({ version: HARD_STATE_VERSION, hardState })}\n`);
    const run = this.chain.then(async () => {
      await mkdir(this.dataDir, { recursive: true });
      await writeFileAtomic(this.dataDir, HARD_STATE_FILE, bytes);
    });
    this.chain = run.catch(() => undefined);
    return run;
  }
}

function parseHardStateFile(parsed: unknown): HardState {
  if (!isRecord(parsed) || parsed.version !== HARD_STATE_VERSION || !isRecord(parsed.hardState)) {
    throw new HardStateError(`${HARD_STATE_FILE} is not a version ${HARD_STATE_VERSION} hard-state file`);
  }
  const hs = parsed.hardState;
  const problem = hardStateProblem(hs);
  if (problem !== null) throw new HardStateError(`${HARD_STATE_FILE}: ${problem}`);
  return hs as unknown as HardState;
}

/** hardStateProblem names the first field that does not fit HardState, null when all do. */
export function hardStateProblem(hs: unknown): string | null {
  if (!isRecord(hs)) return 'not an object';
  for (const field of ['term', 'votedFor', 'selfId', 'commitSeq'] as const) {
    if (!isCount(hs[field])) return `${field} must be a non-negative integer`;
  }
  if (typeof hs.halted !== 'string') return 'halted must be a string';
  for (const field of ['reseed', 'removed'] as const) {
    if (typeof hs[field] !== 'boolean') return `${field} must be a boolean`;
  }
  if (hs.filteredData !== undefined && !(hs.filteredData === -1 || isCount(hs.filteredData)))
    return 'filteredData must be -1, a non-negative integer or absent';
  if (hs.rosterBase !== null && rosterProblem(hs.rosterBase) !== null)
    return `rosterBase: ${rosterProblem(hs.rosterBase)}`;
  return null;
}

/** rosterProblem checks a Roster's shape (its meaning is the engine's). */
export function rosterProblem(roster: unknown): string | null {
  if (!isRecord(roster)) return 'not an object';
  if (!isCount(roster.membershipVersion) || !isCount(roster.nextMemberId))
    return 'membershipVersion and nextMemberId must be non-negative integers';
  if (!Array.isArray(roster.members)) return 'members must be an array';
  for (const m of roster.members as unknown[]) {
    if (
      !isRecord(m) ||
      !isCount(m.id) ||
      !isCount(m.role) ||
      typeof m.name !== 'string' ||
      typeof m.grpcAddr !== 'string' ||
      typeof m.httpAddr !== 'string'
    ) {
      return 'a member lacks id, name, grpcAddr, httpAddr or role';
    }
  }
  return null;
}

export function isRoster(value: unknown): value is Roster {
  return rosterProblem(value) === null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
