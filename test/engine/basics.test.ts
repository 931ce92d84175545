import assert from 'node:assert/strict';
import { MiniCluster } from './mini-cluster.js';

describe('engine basics (MiniCluster)', () => {
  it('elects one leader and commits a write on every node', () => {
    const c = new MiniCluster(['a', 'b', 'c']);
    c.tickUntil(() => c.leader() !== undefined);
    const id = c.propose('x=1');
    c.tickUntil(() => c.committed(id));
    c.tickUntil(() => [...c.nodes.values()].every((n) => n.applied.some((e) => new TextDecoder().decode(e.data) === 'x=1')));
    const leaders = [...c.nodes.values()].filter((n) => n.engine.status().role === 'leader');
    assert.equal(leaders.length, 1);
    c.tickUntil(() => [...c.nodes.values()].every((n) => n.engine.status().ready));
  });
});
