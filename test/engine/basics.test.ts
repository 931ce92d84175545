import assert from 'node:assert/strict';
import { ScriptedCluster } from '../../sim/scripted-cluster.js';

describe('engine basics (scripted cluster)', () => {
  it('elects one leader and commits a write on every node, which all turn ready', () => {
    const c = new ScriptedCluster();
    c.bootstrap(['a', 'b', 'c']);
    assert.ok(c.tickUntil(() => c.leader() !== undefined));
    c.propose('x=1');
    const has = (name: string) => c.node(name).applied.some((e) => new TextDecoder().decode(e.data) === 'x=1');
    assert.ok(c.tickUntil(() => ['a', 'b', 'c'].every(has)));
    assert.equal([...c.nodes.values()].filter((n) => n.engine.status().role === 'leader').length, 1);
    assert.ok(c.tickUntil(() => [...c.nodes.values()].every((n) => n.engine.status().ready)));
    assert.deepEqual(c.violations, []);
  });
});
