import assert from 'node:assert/strict';
import { Engine } from '../../engine/engine.js';
import { MemberRole, type Effect } from '../../engine/types.js';
import type { EngineFactory } from '../../sim/node.js';
import { calmCluster, CALM_NETWORK } from '../../sim/presets.js';
import { encodeCommand } from '../../sim/state-machine.js';
import { InvariantViolation } from '../../sim/violation.js';

const put = (key: string, value: string, writeId: number) => encodeCommand({ op: 'put', key, value, writeId });

/** ELECTION_WAIT_MS bounds how long a calm cluster may take to elect (a few election timeouts). */
const ELECTION_WAIT_MS = 10_000;

describe('sim/cluster (scripted, real engine)', () => {
  it('elects one leader and applies a write on every founder', () => {
    const cluster = calmCluster(3);
    cluster.start();
    assert.ok(
      cluster.runUntilTrue(() => cluster.leader() !== null, ELECTION_WAIT_MS),
      'a leader within the bound',
    );
    const leader = cluster.leader()!;
    cluster.propose(leader.index, put('a', '1', 1));
    const applied = () => cluster.nodes.slice(0, 3).every((n) => n.machine.get('a') === '1');
    assert.ok(cluster.runUntilTrue(applied, 5_000));
    assert.equal(cluster.checkers.durability.acked.size, 1);
  });

  it('a crashed follower restarts from its disk and catches up', () => {
    const cluster = calmCluster(3);
    cluster.start();
    cluster.runUntilTrue(() => cluster.leader() !== null, ELECTION_WAIT_MS);
    const leader = cluster.leader()!;
    const follower = cluster.nodes.find((n, i) => i < 3 && n !== leader)!;
    cluster.propose(leader.index, put('a', '1', 1));
    cluster.runFor(1_000);
    cluster.crash(follower.index);
    assert.equal(follower.state, 'down');
    cluster.propose(leader.index, put('b', '2', 2));
    cluster.runFor(1_000);
    cluster.restart(follower.index);
    assert.ok(
      cluster.runUntilTrue(() => follower.machine.get('b') === '2' && follower.machine.get('a') === '1', 10_000),
    );
  });

  it('replaces a partitioned leader, and the old one follows after healing', () => {
    const cluster = calmCluster(3, { seed: 4 });
    cluster.start();
    cluster.runUntilTrue(() => cluster.leader() !== null, ELECTION_WAIT_MS);
    const old = cluster.leader()!;
    const oldTerm = old.status!.term;
    cluster.isolate(old.index);
    assert.ok(
      cluster.runUntilTrue(
        () => cluster.nodes.some((n) => n !== old && n.status?.role === 'leader' && n.status.term > oldTerm),
        20_000,
      ),
    );
    cluster.heal();
    assert.ok(cluster.runUntilTrue(() => old.status!.role === 'follower' && old.status!.term > oldTerm, 20_000));
  });

  it('a joiner that dials a non-leader is admitted as a learner and becomes ready', () => {
    const cluster = calmCluster(3);
    cluster.start();
    cluster.runUntilTrue(() => cluster.leader() !== null, ELECTION_WAIT_MS);
    const leader = cluster.leader()!;
    cluster.propose(leader.index, put('a', '1', 1));
    cluster.runFor(500);
    const via = cluster.nodes.findIndex((n, i) => i < 3 && n !== leader);
    cluster.join(3, [via]);
    const joiner = cluster.node(3);
    assert.ok(
      cluster.runUntilTrue(() => joiner.status?.ready === true, 20_000),
      `joiner ready (role ${joiner.status?.role})`,
    );
    const member = leader.status!.roster.members.find((m) => m.name === joiner.name);
    assert.equal(member?.role, MemberRole.Learner);
    assert.equal(joiner.machine.get('a'), '1');
  });

  it('a paused node gets its queued messages when resumed, and no ticks meanwhile', () => {
    const cluster = calmCluster(3);
    cluster.start();
    cluster.runUntilTrue(() => cluster.leader() !== null, ELECTION_WAIT_MS);
    const leader = cluster.leader()!;
    const follower = cluster.nodes.find((n, i) => i < 3 && n !== leader)!;
    cluster.pause(follower.index);
    cluster.propose(leader.index, put('p', '1', 1));
    cluster.runFor(500);
    assert.equal(follower.machine.get('p'), undefined, 'a paused node applies nothing');
    assert.ok(follower.inbox.length > 0, 'messages wait in its inbox');
    cluster.resume(follower.index);
    assert.ok(cluster.runUntilTrue(() => follower.machine.get('p') === '1', 5_000));
  });

  it('stops at the first broken driver contract: an answer to a call that is not open', () => {
    const doubleReply: EngineFactory = (config, restored) => {
      const engine = new Engine(config, restored);
      return {
        step: (input) => {
          const effects = engine.step(input);
          return effects.flatMap((e): Effect[] => (e.type === 'reply' ? [e, e] : [e]));
        },
        status: () => engine.status(),
        entries: () => engine.entries(),
        snapshot: () => engine.snapshot(),
      };
    };
    const cluster = calmCluster(3, { engineFactory: doubleReply, network: CALM_NETWORK });
    cluster.start();
    assert.throws(
      () => cluster.runFor(10_000),
      (e: unknown) => e instanceof InvariantViolation && e.invariant === 'engine-contract',
    );
  });

  it('reports an engine exception as a failure with the node and input', () => {
    const throwing: EngineFactory = (config, restored) => {
      const engine = new Engine(config, restored);
      return {
        step: (input) => {
          if (input.type === 'start') return [];
          throw new Error('boom');
        },
        status: () => engine.status(),
        entries: () => [],
        snapshot: () => null,
      };
    };
    const cluster = calmCluster(1, { engineFactory: throwing });
    cluster.start();
    assert.throws(
      () => cluster.runFor(1_000),
      (e: unknown) => e instanceof InvariantViolation && e.invariant === 'engine-exception' && /boom/.test(e.message),
    );
  });
});
