// The node's in-memory ring of recent log lines (transports/node/log-ring.ts), read by the Admin Logs call:
// every line still reaches the node's destination, the ring never holds more than its bound, a read selects
// by the lines' own times and keeps the newest within the answer's bound, and it counts what it let go.
import assert from 'node:assert/strict';
import { LogRing } from '../../transports/node/log-ring.js';

const line = (atMs: number, msg: string): string =>
  `${JSON.stringify({ level: 30, time: new Date(atMs).toISOString(), node: 'n1', msg })}\n`;

describe('node: the log ring', function () {
  it('tees every line, stays within its bound, and reads a time window newest-first within a byte bound', function () {
    const passed: string[] = [];
    const ring = new LogRing(2_000, { write: (l) => passed.push(l) });
    const t0 = Date.parse('2026-11-27T10:00:00Z');
    for (let i = 0; i < 100; i++) ring.write(line(t0 + i * 1_000, `event ${i}`));
    assert.equal(passed.length, 100, 'every line reached the destination');
    assert.ok(ring.bytesHeld <= 2_000, `the ring holds ${ring.bytesHeld} bytes`);
    const all = ring.read({ sinceMs: 0, untilMs: 0, bytesMax: 1_000_000 });
    assert.ok(all.lines.length > 5 && all.lines.length < 100);
    assert.equal(all.dropped, 100 - all.lines.length, 'what the ring let go is counted');
    assert.match(all.lines.at(-1)!, /event 99/);
    assert.equal(all.oldestMs, t0 + all.dropped * 1_000);
    const window = ring.read({ sinceMs: t0 + 95_000, untilMs: t0 + 97_000, bytesMax: 1_000_000 });
    assert.deepEqual(
      window.lines.map((l) => (JSON.parse(l) as { msg: string }).msg),
      ['event 95', 'event 96', 'event 97'],
    );
    const small = ring.read({ sinceMs: 0, untilMs: 0, bytesMax: 250 });
    assert.ok(small.lines.length >= 1 && small.lines.join('').length <= 250);
    assert.match(small.lines.at(-1)!, /event 99/, 'past the answer bound the newest lines are kept');
  });

  it('cuts a line longer than the ring, and times a line without a time by its arrival', function () {
    const ring = new LogRing(100, null, () => 42);
    ring.write(`${'x'.repeat(500)}\n`);
    assert.ok(ring.bytesHeld <= 100);
    const read = ring.read({ sinceMs: 0, untilMs: 0, bytesMax: 1_000 });
    assert.equal(read.lines.length, 1);
    assert.match(read.lines[0]!, /…\(cut\)$/);
    assert.equal(read.oldestMs, 42);
    assert.throws(() => new LogRing(0, null), RangeError);
  });
});
