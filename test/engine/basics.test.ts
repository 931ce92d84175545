import assert from 'node:assert/strict';
import { Lockstep } from '../../sim/lockstep.js';

describe('engine basics (lockstep world)', () => {
  it('elects one leader and commits a write on every node, which all turn ready', () => {
    const c = new Lockstep();
    c.bootstrap(['a', 'b', 'c']);
    assert.ok(c.tickUntil(() => c.leader() !== undefined));
    c.propose('x=1');
    const has = (name: string) => c.node(name).holds('x=1');
    assert.ok(c.tickUntil(() => ['a', 'b', 'c'].every(has)));
    assert.equal([...c.nodes.values()].filter((n) => n.engine.status().role === 'leader').length, 1);
    assert.ok(c.tickUntil(() => [...c.nodes.values()].every((n) => n.engine.status().ready)));
    // Safety: the world's checkers (sim/checkers/) throw the moment an invariant breaks.
  });
});
