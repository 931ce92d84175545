// The read index (engine/read-index.ts): when a leader may hand out a read index, and when not.
import assert from 'node:assert/strict';
import { DEFAULT_LIMITS, type Effect } from '../../engine/index.js';
import { readLeaseTicks } from '../../engine/read-index.js';
import { Lockstep } from '../../sim/lockstep.js';

type ReadResult = Extract<Effect, { type: 'readIndexResult' }>;

function settledCluster(names = ['a', 'b', 'c'], limits: Partial<typeof DEFAULT_LIMITS> = {}): Lockstep {
  const c = new Lockstep();
  c.limits = { ...c.limits, ...limits };
  c.bootstrap(names);
  assert.ok(c.elect(names[0]!));
  c.propose('x');
  assert.ok(
    c.tickUntil(() =>
      names.every((n) => c.node(n).engine.status().appliedSeq === c.node(names[0]!).engine.status().commitSeq),
    ),
  );
  return c;
}

let nextReadId = 1;

/** ask hands a readIndex to `name` without delivering anything; it returns the readId. */
function ask(c: Lockstep, name: string): number {
  const readId = nextReadId++;
  c.input(name, { type: 'readIndex', readId });
  return readId;
}

function resultOf(c: Lockstep, name: string, readId: number): ReadResult | undefined {
  return c.node(name).effects.find((e): e is ReadResult => e.type === 'readIndexResult' && e.readId === readId);
}

function heartbeatsFrom(c: Lockstep, name: string): number {
  return c.messages.filter((m) => m.kind === 'request' && m.from === name && m.method === 'Heartbeat').length;
}

describe('engine read index', () => {
  it("answers a leader's read only after a heartbeat round started after it is accepted by a majority", () => {
    const c = settledCluster();
    const commit = c.node('a').engine.status().commitSeq;
    const before = heartbeatsFrom(c, 'a');
    const readId = ask(c, 'a');
    assert.equal(resultOf(c, 'a', readId), undefined, 'no index before the round is confirmed');
    assert.equal(
      heartbeatsFrom(c, 'a') - before,
      1,
      'the read starts a round at once, to the one follower a majority needs',
    );
    c.deliver();
    const result = resultOf(c, 'a', readId);
    assert.deepEqual(result, { type: 'readIndexResult', readId, index: commit, refusal: null, leaderHint: '' });
  });

  it('shares one round among reads that arrive together; reads arriving during a round wait for the next', () => {
    const c = settledCluster();
    const before = heartbeatsFrom(c, 'a');
    const first = ask(c, 'a');
    const second = ask(c, 'a');
    assert.equal(heartbeatsFrom(c, 'a') - before, 1, 'one round for both');
    c.deliver();
    assert.ok(resultOf(c, 'a', first) && resultOf(c, 'a', second));
    const rounds = heartbeatsFrom(c, 'a');
    c.block('c', 'a');
    c.block('b', 'a');
    const third = ask(c, 'a'); // a round starts; its answers are lost
    const fourth = ask(c, 'a'); // arrives while that round is in flight: no extra round
    assert.equal(heartbeatsFrom(c, 'a') - rounds, 1);
    c.deliver();
    assert.equal(resultOf(c, 'a', third), undefined);
    c.heal();
    // The next periodic heartbeat is a new round, started after both reads: it confirms them.
    assert.ok(c.tickUntil(() => resultOf(c, 'a', fourth) !== undefined, 5));
    assert.equal(resultOf(c, 'a', third)?.refusal, null);
  });

  it('many reads arriving during a round share the next one: one round each, however many reads', () => {
    const c = settledCluster();
    const before = heartbeatsFrom(c, 'a');
    const first = Array.from({ length: 20 }, () => ask(c, 'a'));
    assert.equal(
      heartbeatsFrom(c, 'a') - before,
      1,
      'the first read starts a round; the other 19 arrive while it is in flight',
    );
    const second = Array.from({ length: 20 }, () => ask(c, 'a'));
    c.deliver();
    assert.ok([...first, ...second].every((id) => resultOf(c, 'a', id)?.refusal === null));
    assert.equal(
      heartbeatsFrom(c, 'a') - before,
      2,
      'forty reads, two rounds: the one in flight and the next, which all later reads shared',
    );
  });

  it('a read round asks only the followers a majority needs; one gone silent costs reads at most a periodic heartbeat', () => {
    const c = settledCluster();
    const targetsOf = (readId: number): string[] => {
      const from = c.messages.length;
      const asked = ask(c, 'a');
      assert.equal(asked, readId);
      return c.messages
        .slice(from)
        .filter((m) => m.kind === 'request' && m.method === 'Heartbeat')
        .map((m) => m.to);
    };
    const firstId = nextReadId;
    const [quickest, ...rest] = targetsOf(firstId);
    assert.ok(quickest !== undefined && rest.length === 0, 'one follower of two');
    c.deliver();
    assert.equal(resultOf(c, 'a', firstId)?.refusal, null);
    // The follower reads were asking goes silent: the next round, sent to it, is lost.
    c.block('a', quickest);
    c.block(quickest, 'a');
    const stuckId = nextReadId;
    assert.deepEqual(targetsOf(stuckId), [quickest]);
    c.deliver();
    assert.equal(resultOf(c, 'a', stuckId), undefined);
    // The periodic heartbeat goes to every member; the other follower's ack confirms the stuck read.
    assert.ok(c.tickUntil(() => resultOf(c, 'a', stuckId) !== undefined, DEFAULT_LIMITS.heartbeatIntervalTicks));
    assert.equal(resultOf(c, 'a', stuckId)?.refusal, null);
    // Reads now ask the follower that answers.
    const nextId = nextReadId;
    const [other] = targetsOf(nextId);
    assert.ok(other !== undefined && other !== quickest);
    c.deliver();
    assert.equal(resultOf(c, 'a', nextId)?.refusal, null);
  });

  it('in a five-member cluster a read round asks two followers', () => {
    const c = settledCluster(['a', 'b', 'c', 'd', 'e']);
    const before = heartbeatsFrom(c, 'a');
    const readId = ask(c, 'a');
    assert.equal(heartbeatsFrom(c, 'a') - before, 2);
    c.deliver();
    assert.equal(resultOf(c, 'a', readId)?.refusal, null);
  });

  it('a new leader holds reads until it has committed an entry of its own term', () => {
    const c = new Lockstep();
    c.bootstrap(['a', 'b', 'c']);
    c.drop('a', '*', 'ShipSegment', -1);
    c.drop('*', 'a', 'StreamSegments', -1);
    assert.ok(c.elect('a'));
    const readId = ask(c, 'a');
    c.tick(3);
    assert.equal(resultOf(c, 'a', readId), undefined, 'the barrier is not committed yet');
    assert.equal(c.node('a').engine.status().commitSeq, 0);
    c.undrop();
    assert.ok(c.tickUntil(() => resultOf(c, 'a', readId) !== undefined, 10));
    const result = resultOf(c, 'a', readId)!;
    assert.equal(result.refusal, null);
    assert.ok(result.index >= 1, 'the index covers the barrier');
  });

  it('a leader cut off from its quorum never confirms a read and fails it when it steps down', () => {
    const c = settledCluster();
    c.isolate('a');
    const readId = ask(c, 'a');
    c.tick(2);
    assert.equal(resultOf(c, 'a', readId), undefined);
    assert.ok(c.tickUntil(() => c.node('a').engine.status().role !== 'leader', 40));
    assert.equal(resultOf(c, 'a', readId)?.refusal, 'stepped-down');
    assert.equal(resultOf(c, 'a', readId)?.index, 0);
  });

  it("a follower refuses with the leader's address; a node knowing no leader gives no hint", () => {
    const c = settledCluster();
    const readId = ask(c, 'b');
    assert.deepEqual(resultOf(c, 'b', readId), {
      type: 'readIndexResult',
      readId,
      index: 0,
      refusal: 'not-leader',
      leaderHint: 'a:7000',
    });
    const lone = new Lockstep();
    lone.bootstrap(['a', 'b', 'c']);
    const early = ask(lone, 'b');
    assert.deepEqual(resultOf(lone, 'b', early), {
      type: 'readIndexResult',
      readId: early,
      index: 0,
      refusal: 'not-leader',
      leaderHint: '',
    });
  });

  it('a single voter answers at once, with no round', () => {
    const c = settledCluster(['a']);
    const readId = ask(c, 'a');
    assert.equal(resultOf(c, 'a', readId)?.index, c.node('a').engine.status().commitSeq);
  });

  it('refuses reads past readIndexPendingCountMax', () => {
    const c = settledCluster(['a', 'b', 'c'], { readIndexPendingCountMax: 2 });
    const ids = [ask(c, 'a'), ask(c, 'a'), ask(c, 'a')];
    assert.equal(resultOf(c, 'a', ids[2]!)?.refusal, 'queue-full');
    c.deliver();
    assert.equal(resultOf(c, 'a', ids[0]!)?.refusal, null);
    assert.equal(resultOf(c, 'a', ids[1]!)?.refusal, null);
  });

  it("counts only voters: a learner's acks confirm nothing", () => {
    const c = settledCluster();
    c.join('d', ['a']);
    assert.ok(
      c.tickUntil(
        () =>
          c
            .node('a')
            .engine.status()
            .roster.members.some((m) => m.name === 'd' && m.role === 1),
        100,
      ),
    );
    c.partition([
      ['a', 'd'],
      ['b', 'c'],
    ]);
    const before = c.messages.filter((m) => m.kind === 'response' && m.from === 'd' && m.method === 'Heartbeat').length;
    const readId = ask(c, 'a');
    c.deliver();
    c.tick(2);
    assert.ok(
      c.messages.filter((m) => m.kind === 'response' && m.from === 'd' && m.method === 'Heartbeat').length > before,
      'the learner answered',
    );
    assert.equal(resultOf(c, 'a', readId), undefined);
  });

  describe("a forwarding voter's request counts as its ack (the asker's ack)", () => {
    /** askFor hands `leader` a readIndex forwarded by `asker` holding `term` (the leader's, unless given). */
    function askFor(c: Lockstep, leader: string, asker: string, term?: number): number {
      const readId = nextReadId++;
      const id = c.node(asker).engine.status().id;
      c.input(leader, { type: 'readIndex', readId, asker: { id, term: term ?? c.node(leader).engine.status().term } });
      return readId;
    }

    it('three voters: the leader and the asker are a majority, so the read is answered at once, with no round', () => {
      const c = settledCluster();
      const commit = c.node('a').engine.status().commitSeq;
      const before = heartbeatsFrom(c, 'a');
      const readId = askFor(c, 'a', 'b');
      assert.deepEqual(resultOf(c, 'a', readId), {
        type: 'readIndexResult',
        readId,
        index: commit,
        refusal: null,
        leaderHint: '',
      });
      assert.equal(heartbeatsFrom(c, 'a'), before, 'no heartbeat round');
    });

    it('an asker of another term, the leader itself, or an id not in the roster does not count: the read takes the round', () => {
      const c = settledCluster();
      const term = c.node('a').engine.status().term;
      const cases: Array<[string, () => number]> = [
        ['a lower term', () => askFor(c, 'a', 'b', term - 1)],
        ['a higher term', () => askFor(c, 'a', 'b', term + 1)],
        ['the leader itself', () => askFor(c, 'a', 'a')],
        [
          'an id not in the roster',
          () => {
            const readId = nextReadId++;
            c.input('a', { type: 'readIndex', readId, asker: { id: 99, term } });
            return readId;
          },
        ],
      ];
      for (const [what, ask] of cases) {
        const before = heartbeatsFrom(c, 'a');
        const readId = ask();
        assert.equal(resultOf(c, 'a', readId), undefined, `${what}: no index before a round`);
        assert.equal(heartbeatsFrom(c, 'a') - before, 1, `${what}: a round starts`);
        c.deliver();
        assert.equal(resultOf(c, 'a', readId)?.refusal, null, `${what}: the round confirms it`);
      }
      assert.equal(c.node('a').engine.status().term, term, 'a higher asker term does not depose the leader');
    });

    it("a learner's request is no ack", () => {
      const c = settledCluster();
      c.join('d', ['a']);
      assert.ok(
        c.tickUntil(
          () =>
            c
              .node('a')
              .engine.status()
              .roster.members.some((m) => m.name === 'd' && m.role === 1),
          100,
        ),
      );
      c.partition([
        ['a', 'd'],
        ['b', 'c'],
      ]);
      const readId = askFor(c, 'a', 'd');
      c.deliver();
      c.tick(2);
      assert.equal(resultOf(c, 'a', readId), undefined, 'the leader and a learner are no majority of three voters');
    });

    it("the ack confirms only the asker's reads, not reads waiting at the leader for the same round", () => {
      const c = settledCluster();
      c.block('a', 'b');
      c.block('a', 'c');
      const own = ask(c, 'a'); // its round is lost
      const forwarded = askFor(c, 'a', 'b');
      const later = ask(c, 'a'); // arrives after the forwarded read: waits for the next round
      assert.equal(resultOf(c, 'a', forwarded)?.refusal, null, "the asker's own read is confirmed");
      c.deliver();
      assert.equal(resultOf(c, 'a', own), undefined, "the leader's own read still needs its round");
      assert.equal(resultOf(c, 'a', later), undefined, 'and so does a read that came after');
      c.heal();
      assert.ok(c.tickUntil(() => resultOf(c, 'a', later) !== undefined, DEFAULT_LIMITS.heartbeatIntervalTicks));
      assert.equal(resultOf(c, 'a', own)?.refusal, null);
    });

    it("five voters: the asker's read needs one ack fewer, and its round skips the asker", () => {
      const c = settledCluster(['a', 'b', 'c', 'd', 'e']);
      const from = c.messages.length;
      const readId = askFor(c, 'a', 'b');
      const asked = c.messages
        .slice(from)
        .filter((m) => m.kind === 'request' && m.method === 'Heartbeat')
        .map((m) => m.to);
      assert.equal(asked.length, 1, 'one follower besides the asker');
      assert.ok(!asked.includes('b'));
      assert.equal(resultOf(c, 'a', readId), undefined);
      c.deliver();
      assert.equal(resultOf(c, 'a', readId)?.refusal, null);
    });

    it("five voters: reads arriving during an asker's round get the next round once it served its reads", () => {
      const c = settledCluster(['a', 'b', 'c', 'd', 'e']);
      const forwarded = askFor(c, 'a', 'b'); // its round asks one voter: with a and b that is a majority for it only
      const own = ask(c, 'a'); // arrives during that round: waits for the next
      c.deliver();
      assert.equal(resultOf(c, 'a', forwarded)?.refusal, null);
      assert.equal(resultOf(c, 'a', own)?.refusal, null, 'the next round started at once, not at the next heartbeat');
    });

    it('five voters: with the asker cut off, the round still needs two other voters', () => {
      const c = settledCluster(['a', 'b', 'c', 'd', 'e']);
      c.partition([
        ['a', 'b', 'c'],
        ['d', 'e'],
      ]);
      const readId = askFor(c, 'a', 'b');
      c.deliver();
      // a + b + c are a majority of five: the read is confirmed once c acks a round started after it.
      assert.ok(c.tickUntil(() => resultOf(c, 'a', readId) !== undefined, DEFAULT_LIMITS.heartbeatIntervalTicks));
      assert.equal(resultOf(c, 'a', readId)?.refusal, null);
      c.partition([
        ['a', 'b'],
        ['c', 'd', 'e'],
      ]);
      const cut = askFor(c, 'a', 'b');
      c.deliver();
      c.tick(2);
      assert.equal(resultOf(c, 'a', cut), undefined, 'a + b are no majority of five');
    });

    it("a read the leader postponed for its barrier keeps its asker's ack", () => {
      const c = new Lockstep();
      c.bootstrap(['a', 'b', 'c']);
      c.drop('a', '*', 'ShipSegment', -1);
      c.drop('*', 'a', 'StreamSegments', -1);
      assert.ok(c.elect('a'));
      const readId = askFor(c, 'a', 'b');
      c.tick(3);
      assert.equal(resultOf(c, 'a', readId), undefined, 'the barrier is not committed yet');
      c.undrop();
      assert.ok(c.tickUntil(() => resultOf(c, 'a', readId) !== undefined, 10));
      assert.equal(resultOf(c, 'a', readId)?.refusal, null);
    });
  });

  describe('lease (readLeaseEnabled = 1)', () => {
    it('is shorter than the election timeout by the drift bound, and off by default', () => {
      assert.equal(DEFAULT_LIMITS.readLeaseEnabled, 0);
      assert.equal(readLeaseTicks(DEFAULT_LIMITS), 0);
      assert.equal(readLeaseTicks({ ...DEFAULT_LIMITS, readLeaseEnabled: 1 }), 8); // (10 - 1) x 0.95 / 1.05
      assert.equal(readLeaseTicks({ ...DEFAULT_LIMITS, readLeaseEnabled: 1, clockDriftPercentMax: 0 }), 9);
    });

    it("answers without a round while a confirmed round's lease holds, and waits once it lapses", () => {
      const c = settledCluster(['a', 'b', 'c'], { readLeaseEnabled: 1 });
      ask(c, 'a');
      c.deliver(); // a round confirmed just now
      const before = heartbeatsFrom(c, 'a');
      const fast = ask(c, 'a');
      assert.equal(resultOf(c, 'a', fast)?.refusal, null);
      assert.equal(heartbeatsFrom(c, 'a'), before, 'no round');
      // With every heartbeat lost no round confirms; after the lease a read waits again.
      c.drop('a', '*', 'Heartbeat', -1);
      c.tick(readLeaseTicks(c.limits) + 1);
      const slow = ask(c, 'a');
      assert.equal(resultOf(c, 'a', slow), undefined);
    });

    it('ends for the term once a TimeoutNow has gone out', () => {
      const c = settledCluster(['a', 'b', 'c'], { readLeaseEnabled: 1 });
      ask(c, 'a');
      c.deliver();
      c.drop('a', 'b', 'TimeoutNow', -1);
      c.admin('transfer', 'b');
      assert.ok(c.messages.some((m) => m.kind === 'request' && m.method === 'TimeoutNow'));
      assert.equal(c.node('a').engine.status().role, 'leader');
      const readId = ask(c, 'a');
      assert.equal(resultOf(c, 'a', readId), undefined, "a transfer skips the voters' lease: a round is needed");
      c.deliver();
      assert.equal(resultOf(c, 'a', readId)?.refusal, null);
    });
  });
});
