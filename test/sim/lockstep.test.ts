// The lockstep preset of the simulated world (sim/presets.ts): what scenarios and engine tests rely on.
import assert from 'node:assert/strict';
import type { Input } from '../../engine/types.js';
import type { Checker } from '../../sim/checkers/checker.js';
import { lockstepCluster } from '../../sim/presets.js';
import { Lockstep } from '../../sim/lockstep.js';

/** inputsSeen records every input each node's engine took, with the virtual time. */
function inputsSeen(): { checker: Checker; inputs: { node: string; atUs: number; input: Input }[] } {
  const inputs: { node: string; atUs: number; input: Input }[] = [];
  return {
    inputs,
    checker: {
      name: 'inputs',
      afterStep: (step) => inputs.push({ node: step.node.name, atUs: step.nowUs, input: step.input }),
    },
  };
}

describe('sim: the lockstep world', () => {
  it('a round is one tick of every node, in slot order, at one instant; what it causes is delivered at that instant', () => {
    const { checker, inputs } = inputsSeen();
    const cluster = lockstepCluster([{ name: 'a' }, { name: 'b' }, { name: 'c' }], { extraCheckers: [checker] });
    cluster.start();
    for (let round = 1; round <= 30; round++) {
      const from = inputs.length;
      cluster.tick(1);
      const now = cluster.nowUs;
      assert.equal(now, round * cluster.tickMs * 1000);
      const ticks = inputs.slice(from).filter((i) => i.input.type === 'tick');
      assert.deepEqual(
        ticks.map((t) => t.node),
        ['a', 'b', 'c'],
        `round ${round}: one tick each, in slot order`,
      );
      assert.ok(
        inputs.slice(from).every((i) => i.atUs === now),
        `round ${round}: everything at the round's instant`,
      );
    }
    assert.ok(cluster.leader(), 'a leader within 30 rounds');
  });

  it('a call on a cut link fails at once, as a refused connection, instead of at its deadline', () => {
    const { checker, inputs } = inputsSeen();
    const cluster = lockstepCluster([{ name: 'a' }, { name: 'b' }, { name: 'c' }], { extraCheckers: [checker] });
    cluster.start();
    assert.ok(cluster.runUntilTrue(() => cluster.leader() !== null, 10_000));
    const leader = cluster.leader()!;
    const cut = cluster.nodes.find((n) => n !== leader)!;
    cluster.isolate(cut.index);
    const from = inputs.length;
    cluster.tick(5);
    const failed = inputs.slice(from).filter((i) => i.node === leader.name && i.input.type === 'callFailed');
    assert.ok(failed.length > 0, 'the leader heard its calls to the cut node fail');
    for (const f of failed) {
      assert.equal(f.atUs % (cluster.tickMs * 1000), 0, 'in the instant of a round, not at a deadline');
      // Refused when sent on the cut link; a call already in flight when the cut came loses its answer instead.
      assert.ok(
        f.input.type === 'callFailed' && ['connection refused', 'deadline exceeded'].includes(f.input.status.details),
      );
    }
  });

  it('scripts by name: free-text writes are kept as values, joiners take the names they are given', () => {
    const c = new Lockstep();
    c.bootstrap(['s1', 's2', 's3']);
    assert.ok(c.elect('s2'));
    c.propose('hello');
    assert.ok(c.tickUntil(() => ['s1', 's2', 's3'].every((n) => c.node(n).holds('hello')), 5));
    c.join('newcomer', ['s1']);
    assert.equal(Lockstep.addr('newcomer'), c.node('newcomer').addr);
    assert.ok(c.tickUntil(() => c.node('newcomer').holds('hello'), 100));
    assert.ok(
      c
        .leader()!
        .status()
        .roster.members.some((m) => m.name === 'newcomer'),
    );
  });
});
