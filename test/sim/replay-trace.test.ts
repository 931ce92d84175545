// replayTrace (sim/replay/trace.ts) aligns members' replayed runs by what their messages carry. Steps carry
// the wall clock in whole milliseconds, so a call and its receipt often share one: the receipt must still
// be matched to its send, whichever member's steps of that millisecond come first in the merged order.
import assert from 'node:assert/strict';
import type { RpcRequest } from '../../engine/rpc.js';
import type { Input } from '../../engine/types.js';
import { replayedRun } from './replayed-runs.js';
import { replayTrace } from '../../sim/replay/trace.js';
import { buildViewModel } from '../../sim/view/model.js';

const report = (appliedSeqno: number): RpcRequest => ({
  method: 'ReportApplied',
  body: { reporterShard: 2, sourceShard: 1, appliedSeqno, reporterTerm: 2, capabilities: 0 },
});
const tick: Input = { type: 'tick' };

describe('sim/replay: the trace of several members', () => {
  it('matches a receipt recorded in the same millisecond as its send, even when it sorts first', () => {
    // r2 sends its reports in its third and fourth steps of millisecond 1005; r1 (lane 0) took them in
    // its first steps of that millisecond, so a plain time order puts each receipt before its send.
    const sender = replayedRun('r2', 2, 1_000, [
      [1_005, tick, []],
      [1_005, tick, []],
      [1_005, tick, [{ type: 'send', requestId: 7, to: 'r1', toId: 1, request: report(39) }]],
      [1_005, tick, [{ type: 'send', requestId: 8, to: 'r1', toId: 1, request: report(49) }]],
    ]);
    const receiver = replayedRun('r1', 1, 1_000, [
      [1_005, { type: 'request', callId: 3, request: report(39) }, []],
      [1_005, { type: 'request', callId: 4, request: report(49) }, []],
      [1_009, tick, []],
    ]);
    const trace = replayTrace([receiver, sender], 'same millisecond');
    assert.equal(trace.matched, 2, 'both reports matched to their sends');
    const model = buildViewModel(trace.lines.join('\n'));
    const calls = model.messages.filter((m) => !m.answer);
    assert.deepEqual(
      calls.map((m) => [m.text, m.fate]),
      [
        ['ReportApplied t2 from2 applied39', 'delivered'],
        ['ReportApplied t2 from2 applied49', 'delivered'],
      ],
    );
    for (const call of calls) assert.ok(call.atUs >= call.sentUs, `${call.text} is drawn received after it was sent`);
  });

  it('leaves a request that no send explains unmatched, and keeps each member its own order', () => {
    const stray = replayedRun('r1', 1, 1_000, [
      [1_000, { type: 'request', callId: 1, request: report(5) }, []],
      [1_000, tick, []],
    ]);
    const other = replayedRun('r2', 2, 1_000, [
      [1_000, tick, [{ type: 'send', requestId: 1, to: 'r1', toId: 1, request: report(6) }]],
    ]);
    const trace = replayTrace([stray, other], 'stray');
    assert.equal(trace.matched, 0);
    const steps = trace.lines.map((l) => JSON.parse(l) as { n?: number; in?: string }).filter((l) => l.in);
    assert.deepEqual(
      steps.filter((s) => s.n === 0).map((s) => s.in?.split(' ')[0]),
      ['req', 'tick'],
      "r1's steps stay in its own order",
    );
  });
});
