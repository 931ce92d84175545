// The read-quorum checker (sim/checkers/read-quorum.ts): a leader's read index is vouched for by a majority of its
// voters, a forwarded read's asker counting only as engine/read-index.ts's "The asker's ack" says. It stays quiet on
// the real engine and catches a leader that counts an asker of a higher term (countsAnyTermAsker).
import assert from 'node:assert/strict';
import type { ReadIndexAsker } from '../../engine/types.js';
import type { StepRecord } from '../../sim/checkers/checker.js';
import { ReadQuorumChecker } from '../../sim/checkers/read-quorum.js';
import type { EngineFactory } from '../../sim/node.js';
import type { WorkloadKnobs } from '../../sim/options.js';
import { calmCluster } from '../../sim/presets.js';
import { Prng } from '../../sim/prng.js';
import { RegisterClients } from '../../sim/register-clients.js';
import { realEngine } from '../../sim/run.js';
import { InvariantViolation } from '../../sim/violation.js';
import { readsFromBareCommit, reusesAskerAck } from './buggy-engines.js';
import { countsAnyTermAsker } from './buggy-engines-reads.js';
import { makeNode, roster, status } from './fixtures.js';

/**
 * KNOBS: many reads, most asked of any node, forwarded naming their asker; a node that knows no leader (a transfer's
 * target campaigning in its new term) asks a peer, which may be the leader of the term before.
 */
const KNOBS: WorkloadKnobs = {
  writeIntervalMsMean: 1_000,
  burstWriteCountMax: 1,
  registerClientCount: 8,
  registerThinkMsMean: 1,
  readFraction: 0.9,
  casFraction: 0.05,
  anyNodeFraction: 0.9,
  askerAck: true,
};

/** TRANSFER_COUNT: leadership transfers per run (each opens a window where the target is a term ahead of the leader). */
const TRANSFER_COUNT = 30;

/** ANY_TERM_SEED_COUNT_MAX: countsAnyTermAsker must be caught within this many runs. */
const ANY_TERM_SEED_COUNT_MAX = 10;

/**
 * transferRun: three voters; clients read through every node while the leader hands leadership to another voter
 * again and again. The target moves to the next term at once and, knowing no leader while it campaigns, forwards
 * its clients' reads to a peer — often the old leader, still leading the term before until the vote request reaches
 * it: an asker whose term is above the leader's.
 */
function transferRun(engineFactory: EngineFactory, seed: number): RegisterClients {
  const cluster = calmCluster(3, { engineFactory, seed });
  const clients = new RegisterClients(cluster, new Prng(`read-quorum-test:${seed}`), KNOBS);
  cluster.start();
  assert.ok(cluster.runUntilTrue(() => cluster.leader() !== null, 10_000));
  clients.start();
  cluster.runFor(500);
  for (let i = 0; i < TRANSFER_COUNT; i++) {
    cluster.runUntilTrue(() => cluster.leader() !== null, 10_000);
    const leader = cluster.leader()!;
    const others = cluster.nodes.filter((n) => n !== leader && n.isLive);
    const target = others[i % others.length]!;
    cluster.admin({ op: 'transfer', memberId: target.engine!.status().id }, leader.index);
    cluster.runFor(700);
  }
  clients.stop();
  cluster.runFor(2_000);
  return clients;
}

function readStep(asker: ReadIndexAsker | undefined, answered: boolean): StepRecord {
  const node = makeNode(0);
  const after = status({ id: 1, role: 'leader', term: 5, roster: roster([1, 2, 3]) });
  return {
    node,
    input: asker ? { type: 'readIndex', readId: 9, asker } : { type: 'readIndex', readId: 9 },
    effects: answered ? [{ type: 'readIndexResult', readId: 9, index: 3, refusal: null, leaderHint: '' }] : [],
    before: after,
    after,
    nowUs: 0,
  };
}

describe('sim: the read-quorum checker', function () {
  this.timeout(600_000);

  it("counts an asker only at the leader's term, as a voter other than the leader", () => {
    const violates = (asker: ReadIndexAsker | undefined) =>
      assert.throws(
        () => new ReadQuorumChecker().afterStep(readStep(asker, true)),
        (e: unknown) => e instanceof InvariantViolation && e.invariant === 'read-quorum',
      );
    new ReadQuorumChecker().afterStep(readStep({ id: 2, term: 5 }, true)); // the leader and its asker: 2 of 3
    violates({ id: 2, term: 6 }); // a higher term
    violates({ id: 2, term: 4 }); // a lower term
    violates({ id: 7, term: 5 }); // no voter
    violates({ id: 1, term: 5 }); // the leader itself
    violates(undefined); // no asker, no round
    new ReadQuorumChecker().afterStep(readStep({ id: 2, term: 6 }, false)); // waiting for its round: not judged
  });

  it('stays quiet on the real engine through leadership transfers, follower reads naming their asker', () => {
    for (const seed of [1, 2]) {
      const clients = transferRun(realEngine, seed);
      assert.ok(clients.counts.askerReadsServed > 0, `seed ${seed}: reads named their asker`);
    }
  });

  it(`catches a leader that counts an asker of a higher term within ${ANY_TERM_SEED_COUNT_MAX} runs`, () => {
    for (let seed = 1; seed <= ANY_TERM_SEED_COUNT_MAX; seed++) {
      try {
        transferRun(countsAnyTermAsker, seed);
      } catch (error) {
        if (!(error instanceof InvariantViolation)) throw error;
        assert.equal(error.invariant, 'read-quorum', error.message);
        assert.match(error.message, /another term/);
        console.log(`      countsAnyTermAsker: caught at seed ${seed}: ${error.message}`);
        return;
      }
    }
    assert.fail(`countsAnyTermAsker not caught in ${ANY_TERM_SEED_COUNT_MAX} runs`);
  });

  it('catches, at the answering step, the wrong engines test/sim/reads.test.ts shows as stale reads', () => {
    for (const [what, factory] of [
      ['readsFromBareCommit', readsFromBareCommit],
      ['reusesAskerAck', reusesAskerAck],
    ] as const) {
      assert.throws(
        () => transferRun(factory, 1),
        (e: unknown) => e instanceof InvariantViolation && e.invariant === 'read-quorum',
        what,
      );
    }
  });
});
