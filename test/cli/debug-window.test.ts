// The time window of `svc debug bundle` (cli/debug-window.ts): --since/--until/--window parse as documented,
// and the segments taken are those written during the window plus the earlier segments of their runs, so
// every run in a bundle replays from its start, and nothing of a run wholly outside the window.
import assert from 'node:assert/strict';
import { bundleWindow, parseDuration, segmentsForWindow, type ListedSegment } from '../../cli/debug-window.js';
import { UsageError } from '../../cli/usage.js';

const seg = (index: number, run: string, modifiedUnixMs: number): ListedSegment => ({
  name: `seg-${String(index).padStart(12, '0')}.rec`,
  run,
  modifiedUnixMs,
});

describe('svc debug bundle: the window', function () {
  it('reads durations and times, and refuses what it cannot', function () {
    assert.equal(parseDuration('10m'), 600_000);
    assert.equal(parseDuration('90s'), 90_000);
    assert.equal(parseDuration('2h'), 7_200_000);
    assert.equal(parseDuration('500ms'), 500);
    for (const bad of ['10', 'm', '-1m', '0s', '10 minutes']) assert.throws(() => parseDuration(bad), UsageError, bad);
    const now = Date.parse('2026-11-27T12:00:00Z');
    assert.deepEqual(bundleWindow({ window: '10m' }, now), { sinceMs: now - 600_000, untilMs: Infinity });
    assert.deepEqual(bundleWindow({ until: '2026-11-27T11:00:00Z', window: '1h' }, now), {
      sinceMs: Date.parse('2026-11-27T10:00:00Z'),
      untilMs: Date.parse('2026-11-27T11:00:00Z'),
    });
    assert.deepEqual(bundleWindow({}, now), { sinceMs: 0, untilMs: Infinity });
    assert.throws(() => bundleWindow({ since: 'yesterday' }, now), UsageError);
    assert.throws(() => bundleWindow({ since: '2026-11-27T10:00:00Z', window: '1m' }, now), UsageError);
    assert.throws(
      () => bundleWindow({ since: '2026-11-27T11:00:00Z', until: '2026-11-27T10:00:00Z' }, now),
      UsageError,
    );
  });

  it('takes the segments written during the window and the earlier segments of their runs, and no others', function () {
    // Run A wrote segments 1-3 (until t=300), the node restarted: run B wrote 4-6 (until t=900).
    const listed = [
      seg(1, 'A', 100),
      seg(2, 'A', 200),
      seg(3, 'A', 300),
      seg(4, 'B', 500),
      seg(5, 'B', 700),
      seg(6, 'B', 900),
    ];
    const names = (w: { sinceMs: number; untilMs: number }): number[] =>
      segmentsForWindow(listed, w).map((s) => Number(s.name.slice(4, 16)));
    // Inside run B's fifth segment only: run B from its start, none of run A.
    assert.deepEqual(names({ sinceMs: 600, untilMs: 650 }), [4, 5]);
    // Across the restart: both runs, B only up to the window's end.
    assert.deepEqual(names({ sinceMs: 250, untilMs: 450 }), [1, 2, 3, 4]);
    // From t=800 on: run B whole.
    assert.deepEqual(names({ sinceMs: 800, untilMs: Infinity }), [4, 5, 6]);
    // Everything, and nothing.
    assert.deepEqual(names({ sinceMs: 0, untilMs: Infinity }), [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(names({ sinceMs: 1_000, untilMs: Infinity }), []);
    // A segment whose run could not be read stands alone: it does not pull in another's segments.
    assert.deepEqual(
      segmentsForWindow([seg(1, '', 100), seg(2, '', 200)], { sinceMs: 150, untilMs: Infinity }).map((s) => s.name),
      ['seg-000000000002.rec'],
    );
  });
});
