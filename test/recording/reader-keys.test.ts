// A recording is input from another process (maybe another build): a JSON line (seg, run, ckpt, gap, and
// formats 1 to 4's step lines) holding a key no format ever wrote is refused, naming the file, the line and
// the key, never silently dropped (recording/reader.ts LINE_KEYS). An input's wire body keeps an undeclared
// key on purpose (recording/step-record.ts): that is not refused.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeLine } from '../../recording/codec.js';
import { segmentFileName } from '../../recording/format.js';
import { readRecording, readSegmentLines } from '../../recording/reader.js';
import { RecordingLines } from '../../transports/node/recording-lines.js';
import { soloConfig, soloHeadLines } from './solo-config.js';

const config = soloConfig();

type Line = Record<string, unknown>;

function lines(version: number): Line[] {
  return [
    ...soloHeadLines(version, config),
    { t: 'step', n: 1, tick: 0, at: 1_000, in: { type: 'start' }, d: '0000000000000000', fx: [] },
    { t: 'gap', n: 2, at: 1_001, reason: 'test' },
  ];
}

/** write puts `all` in segment 1 as format 4's JSON lines, or (version 6) as records, steps as JSON records too. */
async function write(dir: string, all: Line[], version: number): Promise<string> {
  const file = join(dir, segmentFileName(1));
  if (version < 5) {
    await writeFile(file, all.map((l) => `${encodeLine(l, 'hashed', null)}\n`).join(''));
    return file;
  }
  const records = new RecordingLines();
  for (const line of all.filter((l) => l.t !== 'step')) {
    records.stage(encodeLine(line, 'hashed', null));
    records.commit();
  }
  await writeFile(file, records.take()!);
  return file;
}

describe('recording reader: unknown keys in JSON lines', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-recording-keys-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the lines every format writes (no key refused)', async () => {
    await write(dir, lines(4), 4);
    const [run] = readRecording(dir);
    assert.equal(run!.steps.length, 1);
    assert.equal(run!.gap?.n, 2);
  });

  for (const [index, type] of ['seg', 'run', 'step', 'gap'].entries()) {
    it(`refuses a ${type} line (format 4's JSON lines) with an unknown key, naming the file, the line and the key`, async () => {
      const all = lines(4);
      all[index] = { ...all[index]!, future: 1 };
      const file = await write(dir, all, 4);
      const expected = new RegExp(
        `${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} line ${index + 1}: unknown key "future" in a ${type} line`,
      );
      assert.throws(() => readRecording(dir), expected);
      assert.throws(() => readSegmentLines(file), /unknown key "future"/);
    });
  }

  it("refuses a run record (format 6's records) with an unknown key, naming the record", async () => {
    const all = lines(6);
    all[1] = { ...all[1]!, extra: 'x' };
    const file = await write(dir, all, 6);
    assert.throws(
      () => readRecording(dir),
      new RegExp(`seg-000000000001\\.rec record 2: unknown key "extra" in a run line`),
    );
    assert.throws(() => readSegmentLines(file), /item 2: unknown key "extra"/);
  });

  it('refuses an unknown key in the last line too (it decodes: it is not a torn line to drop)', async () => {
    const all = lines(4);
    all[3] = { ...all[3]!, extra: true };
    await write(dir, all, 4);
    assert.throws(() => readRecording(dir), /line 4: unknown key "extra" in a gap line/);
  });

  it("keeps an undeclared key inside a step's input (a wire body from a newer proto), as the recorder meant", async () => {
    const all = lines(4);
    all[2] = {
      ...all[2]!,
      in: {
        type: 'response',
        requestId: 3,
        response: { method: 'ReportApplied', body: { acknowledged: true, later: 9 } },
      },
    };
    await write(dir, all, 4);
    const [run] = readRecording(dir);
    assert.deepEqual(run!.steps[0]!.in, all[2]!.in);
  });
});
