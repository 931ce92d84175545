// Shared test helpers: real directories under os.tmpdir(), removed after each test.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Entry } from '../../../engine/types.js';

export async function makeTempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `svc-storage-${prefix}-`));
}

export async function removeTempDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** entry makes a deterministic entry whose data names its seq and term. */
export function entry(seq: number, term: number, dataBytes = 16): Entry {
  const data = new Uint8Array(dataBytes);
  for (let i = 0; i < dataBytes; i++) data[i] = (seq * 31 + term * 7 + i) & 0xff;
  return { seq, term, kind: 1, data };
}

export function entries(fromSeq: number, count: number, term: number, dataBytes = 16): Entry[] {
  return Array.from({ length: count }, (_, i) => entry(fromSeq + i, term, dataBytes));
}

/** summary reduces entries to comparable tuples (data compared as hex). */
export function summary(list: readonly Entry[]): Array<[number, number, number, string]> {
  return list.map((e) => [e.seq, e.term, e.kind, Buffer.from(e.data).toString('hex')]);
}

/** waitFor polls a condition with a bound instead of sleeping a fixed time. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
