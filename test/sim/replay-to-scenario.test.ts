// --to-scenario on a hand-made replayed history (sim/replay/to-scenario.ts): a partition of the leader seen
// late (its calls time out after the others elected), its step-down while cut off, a kill -9 and a restart
// become a scenario in the incident's order; the scenario passes on the lockstep world and fails on an engine
// whose leader never steps down without a quorum (test/sim/buggy-engines-power.ts), the rule the incident
// exercised.
import assert from 'node:assert/strict';
import { StatusCode } from '../../engine/rpc.js';
import type { Effect, Input } from '../../engine/types.js';
import { replayedRun } from './replayed-runs.js';
import { toScenario } from '../../sim/replay/to-scenario.js';
import { runScenario } from '../../sim/scenario.js';
import { neverStepsDown } from './buggy-engines-power.js';

const tick: Input = { type: 'tick' };
const leads = (term: number, id: number): Effect => ({ type: 'roleChanged', role: 'leader', term, leaderId: id });
const committed = (proposalId: number): Effect => ({
  type: 'proposalResult',
  proposalId,
  ok: true,
  code: 'committed',
  seq: proposalId,
  reason: '',
  leaderHint: '',
});
const send = (requestId: number, toId: number): Effect => ({
  type: 'send',
  requestId,
  to: `p${toId}`,
  toId,
  request: { method: 'Heartbeat', body: {} as never },
});
const failed = (requestId: number): Input => ({
  type: 'callFailed',
  requestId,
  status: { code: StatusCode.DEADLINE_EXCEEDED, details: 'deadline', trailers: {} },
});
const answered = (requestId: number): Input => ({
  type: 'response',
  requestId,
  response: { method: 'Heartbeat', body: {} as never },
});

describe('sim/replay: a replayed incident as a scenario', () => {
  it('keeps the order of a late-seen partition, a kill and a restart, and passes on the lockstep world', () => {
    const runs = [
      replayedRun('a', 1, 0, [
        [1_000, tick, [leads(1, 1), committed(1), committed(2)]],
        [2_000, tick, [send(10, 2), send(11, 3)]],
        [2_100, answered(10), []],
        [2_100, answered(11), []],
        [5_000, tick, [send(12, 2), send(13, 3)]],
        // The partition began before 5 s; a's calls time out only after b was elected at 5.5 s.
        [6_000, failed(12), []],
        [6_000, failed(13), []],
        // Check quorum: no peer answered for an election timeout, so a stops leading while still cut off.
        [6_500, tick, [{ type: 'roleChanged', role: 'follower', term: 1, leaderId: 0 }]],
        [9_000, tick, [send(14, 2)]],
        [9_100, answered(14), []],
      ]),
      replayedRun('b', 2, 0, [
        [1_000, tick, []],
        [5_500, tick, [leads(2, 2), committed(3)]],
        [7_000, tick, [committed(4)]],
        [12_000, tick, []],
      ]),
      replayedRun('c', 3, 0, [
        [1_000, tick, []],
        [10_000, tick, []],
      ]),
      replayedRun('c', 3, 11_000, [
        [11_000, tick, []],
        [12_000, tick, []],
      ]),
    ];
    const script = toScenario(runs, 'test');
    const commands = script
      .split('\n')
      .map((l) => l.replace(/#.*$/, '').trim())
      .filter((l) => l !== '');
    assert.deepEqual(commands, [
      'cluster a b c',
      'elect a',
      'propose-many 2 w0-',
      'until converged within 500',
      'isolate a',
      'until not leader a within 500',
      'until leader within 500',
      'until not role a leader within 500',
      'propose-many 2 w1-',
      'heal',
      'crash c',
      'restart c',
      'until converged within 500',
      'expect safe',
    ]);
    runScenario(script, 'generated');
    // The relevant rule mutated: a leader cut off from its quorum keeps leading. The scenario catches it.
    assert.throws(
      () => runScenario(script, 'generated', { engine: neverStepsDown }),
      /`until not role a leader within 500`|leader-step-down/,
    );
  });

  it('checks a step-down only where the recording shows one while cut off', () => {
    const leaderThenHealed = [
      replayedRun('a', 1, 0, [
        [1_000, tick, [leads(1, 1)]],
        [5_000, tick, [send(12, 2), send(13, 3)]],
        [6_000, failed(12), []],
        [6_000, failed(13), []],
        [9_000, tick, [send(14, 2), send(15, 3)]],
        // a hears the higher term on the answer that reconnects it: that step-down is not the cut-off's.
        [9_100, answered(14), [{ type: 'roleChanged', role: 'follower', term: 2, leaderId: 2 }]],
      ]),
      replayedRun('b', 2, 0, [
        [1_000, tick, []],
        [5_500, tick, [leads(2, 2)]],
      ]),
      replayedRun('c', 3, 0, [[1_000, tick, []]]),
    ];
    const script = toScenario(leaderThenHealed, 'test');
    assert.match(script, /^isolate a/m);
    assert.doesNotMatch(script, /until not role a leader/);
  });

  it('does not read a stale failure to one peer and a fresh one to the other as a cut', () => {
    const staleThenFresh = [
      replayedRun('a', 1, 0, [
        [1_000, tick, [leads(1, 1)]],
        [2_000, tick, [send(12, 2), send(13, 3)]],
        [2_100, answered(12), []],
        // The call to c fails in an early partition, and a has no reason to call c again for a while.
        [3_000, failed(13), []],
        [9_000, tick, [send(14, 2)]],
        // Long after, one call to b fails: a's last calls to both peers failed, but not together.
        [10_000, failed(14), []],
        [11_000, tick, [send(15, 2)]],
        [11_100, answered(15), []],
      ]),
      replayedRun('b', 2, 0, [[1_000, tick, []]]),
      replayedRun('c', 3, 0, [[1_000, tick, []]]),
    ];
    assert.doesNotMatch(toScenario(staleThenFresh, 'test'), /^isolate a/m);
    // The same failures close together are a cut, healed by b's answer.
    const together = [
      replayedRun('a', 1, 0, [
        [1_000, tick, [leads(1, 1)]],
        [2_000, tick, [send(12, 2), send(13, 3)]],
        [2_100, answered(12), []],
        [9_000, tick, [send(14, 2), send(16, 3)]],
        [10_000, failed(14), []],
        [10_000, failed(16), []],
        [11_000, tick, [send(15, 2)]],
        [11_100, answered(15), []],
      ]),
      replayedRun('b', 2, 0, [[1_000, tick, []]]),
      replayedRun('c', 3, 0, [[1_000, tick, []]]),
    ];
    // A failure to one peer, then answers from the other, then that other killed: its calls fail too, but the
    // first failure is older than an answer, so a was never cut off from both (jepsen seed 1's paused n1, then
    // its killed leader n3, once read as n2 cut off).
    const answeredBetween = [
      replayedRun('a', 1, 0, [
        [1_000, tick, [leads(1, 1)]],
        [7_000, tick, [send(12, 3)]],
        [8_000, failed(12), []],
        [8_400, tick, [send(13, 2)]],
        [8_500, answered(13), []],
        [8_900, tick, [send(14, 2)]],
        [9_000, failed(14), []],
      ]),
      replayedRun('b', 2, 0, [[1_000, tick, []]]),
      replayedRun('c', 3, 0, [[1_000, tick, []]]),
    ];
    assert.doesNotMatch(toScenario(answeredBetween, 'test'), /^isolate a/m);
    const script = toScenario(together, 'test');
    assert.match(script, /^isolate a/m);
    assert.match(script, /^heal/m);
  });
});
