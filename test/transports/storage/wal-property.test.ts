// Property: whatever appends, truncations, restarts, compactions and crashes happen, reopening the
// WAL gives back exactly the log the durable appends describe, plus at most a prefix of the records
// that were still in flight when the crash cut the last segment.
import assert from 'node:assert/strict';
import { appendFile, readdir, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Entry } from '../../../engine/types.js';
import { storageLimits } from '../../../transports/storage/limits.js';
import { Wal } from '../../../transports/storage/wal.js';
import { makeTempDir, removeTempDir } from './helpers.js';

interface ModelLog {
  entries: Entry[];
  lastSeq: number;
}

type AppendOp = { op: 'append'; back: number; count: number; termBump: boolean; dataBytes: number };
type Op =
  | AppendOp
  | { op: 'jump'; gap: number; count: number }
  | { op: 'compact'; fraction: number }
  | { op: 'crash'; inflight: AppendOp[]; cutFraction: number; garbage: Uint8Array }
  | { op: 'reopen' };

const appendOp = fc.record({
  op: fc.constant('append' as const),
  back: fc.nat({ max: 6 }),
  count: fc.nat({ max: 4 }),
  termBump: fc.boolean(),
  dataBytes: fc.nat({ max: 60 }),
});

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: appendOp },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('jump' as const),
      gap: fc.integer({ min: 1, max: 20 }),
      count: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant('compact' as const), fraction: fc.double({ min: 0, max: 1, noNaN: true }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('crash' as const),
      inflight: fc.array(appendOp, { minLength: 1, maxLength: 4 }),
      cutFraction: fc.double({ min: 0, max: 1, noNaN: true }),
      garbage: fc.uint8Array({ maxLength: 40 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ op: 'reopen' as const }) },
);

const limits = storageLimits({ walSegmentBytesMax: 300, walRecordBytesMax: 120 });

/** applyRecordwise applies one append to the model, recording the state after each record it writes. */
function applyRecordwise(log: ModelLog, fromSeq: number, entries: Entry[], states: ModelLog[]): ModelLog {
  let current = log;
  if (fromSeq !== current.lastSeq + 1) {
    const kept = fromSeq > current.lastSeq + 1 ? [] : current.entries.filter((e) => e.seq < fromSeq);
    current = { entries: kept, lastSeq: fromSeq - 1 };
    states.push(current);
  }
  for (const e of entries) {
    current = { entries: [...current.entries, e], lastSeq: e.seq };
    states.push(current);
  }
  return current;
}

function makeEntries(fromSeq: number, count: number, term: number, dataBytes: number, salt: number): Entry[] {
  return Array.from({ length: count }, (_, i) => ({
    seq: fromSeq + i,
    term,
    kind: 1 + ((fromSeq + i) % 3),
    data: Uint8Array.from({ length: dataBytes }, (_, b) => (salt * 13 + (fromSeq + i) * 7 + b) & 0xff),
  }));
}

const key = (list: readonly Entry[]): string =>
  JSON.stringify(list.map((e) => [e.seq, e.term, e.kind, Buffer.from(e.data).toString('hex')]));

/** matches: the recovered entries are a suffix of the model's that keeps everything above the compaction floor. */
function matches(recovered: Entry[], model: ModelLog, floor: number): boolean {
  const live = model.entries.filter((e) => e.seq > floor).length;
  if (recovered.length < live || recovered.length > model.entries.length) return false;
  return key(recovered) === key(model.entries.slice(model.entries.length - recovered.length));
}

describe('storage/wal property: recovery gives back the durable prefix', () => {
  it('holds for random appends, truncations, restarts, compactions and crashes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 14 }), async (ops) => {
        const dir = await makeTempDir('walprop');
        let wal = (await Wal.open(dir, limits)).wal;
        let model: ModelLog = { entries: [], lastSeq: 0 };
        let floor = 0;
        let term = 1;
        let salt = 0;

        const planAppend = (op: AppendOp, log: ModelLog): { fromSeq: number; entries: Entry[] } => {
          if (op.termBump) term++;
          const fromSeq = Math.max(floor + 1, log.lastSeq + 1 - op.back);
          return { fromSeq, entries: makeEntries(fromSeq, op.count, term, op.dataBytes, ++salt) };
        };
        const lastSegment = async (): Promise<{ name: string; size: number }> => {
          const name = (await readdir(dir))
            .filter((n) => n.endsWith('.wal'))
            .sort()
            .at(-1)!;
          return { name, size: (await stat(join(dir, name))).size };
        };

        try {
          for (const op of ops) {
            if (op.op === 'append') {
              const { fromSeq, entries } = planAppend(op, model);
              await wal.append(fromSeq, entries);
              model = applyRecordwise(model, fromSeq, entries, []);
            } else if (op.op === 'jump') {
              const fromSeq = model.lastSeq + 1 + op.gap;
              const entries = makeEntries(fromSeq, op.count, ++term, 8, ++salt);
              await wal.append(fromSeq, entries);
              model = applyRecordwise(model, fromSeq, entries, []);
            } else if (op.op === 'compact') {
              const throughSeq = floor + Math.floor((model.lastSeq - floor) * op.fraction);
              floor = Math.max(floor, throughSeq);
              await wal.compact(throughSeq);
            } else if (op.op === 'reopen') {
              await wal.close();
              const opened = await Wal.open(dir, limits);
              wal = opened.wal;
              assert.equal(opened.corruption, null);
              assert.equal(opened.tornTail, null);
              assert.ok(
                matches(opened.entries, model, floor),
                `clean reopen: got ${key(opened.entries)}, model ${key(model.entries)} floor ${floor}`,
              );
            } else {
              const before = await lastSegment();
              const states: ModelLog[] = [model];
              let inflightModel = model;
              for (const inflight of op.inflight) {
                const { fromSeq, entries } = planAppend(inflight, inflightModel);
                void wal.append(fromSeq, entries);
                inflightModel = applyRecordwise(inflightModel, fromSeq, entries, states);
              }
              await wal.close();
              // The crash: the in-flight bytes of the last segment are cut anywhere and may end in garbage.
              const after = await lastSegment();
              const durableBytes = after.name === before.name ? before.size : 0;
              const cut = durableBytes + Math.floor((after.size - durableBytes) * op.cutFraction);
              await truncate(join(dir, after.name), cut);
              if (op.garbage.length > 0) await appendFile(join(dir, after.name), op.garbage);

              const opened = await Wal.open(dir, limits);
              wal = opened.wal;
              assert.equal(
                opened.corruption,
                null,
                `a torn tail is not corruption: ${JSON.stringify(opened.corruption)}`,
              );
              const walLastSeq = wal.durablePoint().lastSeq;
              const candidates = states.filter(
                (s) =>
                  matches(opened.entries, s, floor) &&
                  (s.lastSeq === walLastSeq ||
                    (opened.entries.length === 0 && walLastSeq === 0 && s.entries.every((e) => e.seq <= floor))),
              );
              assert.ok(
                candidates.length > 0,
                `recovered ${key(opened.entries)} (lastSeq ${walLastSeq}) is no durable-prefix state of ${states.length}`,
              );
              if (op.cutFraction === 1 && op.garbage.length === 0)
                assert.equal(candidates.at(-1), states.at(-1), 'an uncut crash loses nothing');
              model = candidates.at(-1)!;
            }
          }
          await wal.close();
          const final = await Wal.open(dir, limits);
          assert.equal(final.corruption, null);
          assert.ok(matches(final.entries, model, floor), 'final reopen matches the model');
          await final.wal.close();
        } finally {
          await wal.close().catch(() => undefined);
          await removeTempDir(dir);
        }
      }),
      { numRuns: 60 },
    );
  });
});
