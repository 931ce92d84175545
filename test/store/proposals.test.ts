// Proposals and the write path without a cluster: a fake engine takes the proposals, a real StoreStateMachine
// applies them. A command goes to the engine as the very bytes the store encoded (once, in ReplicatedStore),
// and each proposal's outcome is read back by its request id when its proposalResult arrives (recall), even
// when the result comes steps after the apply; refusals keep the engine's meaning as plain kinds.
import assert from 'node:assert/strict';
import { EntryKind, type Effect, type Proposal } from '../../engine/types.js';
import { decodeCommand, encodeCommand, type StoreCommand } from '../../store/command.js';
import { StoreRefusal } from '../../store/errors.js';
import type { ProposalInput, StoreEngine, StoreHost } from '../../store/host.js';
import { Proposals } from '../../store/proposals.js';
import { ReplicatedStore } from '../../store/replicated-store.js';
import { StoreStateMachine } from '../../store/state-machine.js';

type ProposalResult = Extract<Effect, { type: 'proposalResult' }>;

function fakeEngine(): { engine: StoreEngine; submitted: ProposalInput[] } {
  const submitted: ProposalInput[] = [];
  const engine = {
    status: () => {
      throw new Error('not used');
    },
    failure: null,
    overloaded: () => false,
    submit: (input: ProposalInput) => {
      submitted.push(input);
    },
  } satisfies StoreEngine;
  return { engine, submitted };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const put = (key: string, requestId: string): StoreCommand => ({ op: 'put', key, value: { key }, requestId });
const ok = (proposalId: number, seq: number): ProposalResult => ({
  type: 'proposalResult',
  proposalId,
  ok: true,
  code: 'committed',
  seq,
  reason: '',
  leaderHint: '',
});
const proposalsOf = (input: ProposalInput): Proposal[] => (input.type === 'propose' ? [input] : input.proposals);

describe('store: proposals', () => {
  it('hands the engine the bytes it was given, and resolves each result by its request id', async () => {
    const { engine, submitted } = fakeEngine();
    const stateMachine = new StoreStateMachine();
    const proposals = new Proposals(engine, stateMachine, () => undefined, 16);
    const commands = [put('a', 'r-a'), put('b', 'r-b')];
    const bytes = commands.map(encodeCommand);
    const answers = commands.map((command, i) => proposals.propose(bytes[i]!, command.requestId, Date.now() + 5_000));
    await nextTurn();
    assert.equal(submitted.length, 1, 'one engine input for the loop turn');
    const sent = proposalsOf(submitted[0]!);
    assert.deepEqual(
      sent.map((p) => p.data),
      bytes,
    );
    assert.ok(
      sent.every((p, i) => p.data === bytes[i]),
      'the same bytes, not a re-encoding',
    );
    // Both applied in one step, their results reported in two later steps: nothing is cached per step.
    sent.forEach((p, i) => stateMachine.apply({ seq: i + 1, term: 1, kind: EntryKind.EventBatch, data: p.data }));
    proposals.onResult(ok(sent[1]!.proposalId, 2));
    stateMachine.apply({ seq: 3, term: 1, kind: EntryKind.TermBarrier, data: new Uint8Array() });
    proposals.onResult(ok(sent[0]!.proposalId, 1));
    assert.deepEqual(await Promise.all(answers), [
      { seq: 1, result: { outcome: 'applied', version: 1, existed: false } },
      { seq: 2, result: { outcome: 'applied', version: 2, existed: false } },
    ]);
  });

  it('answers a retried command that applied twice with the first outcome', async () => {
    const { engine, submitted } = fakeEngine();
    const stateMachine = new StoreStateMachine();
    const proposals = new Proposals(engine, stateMachine, () => undefined, 16);
    const bytes = encodeCommand(put('a', 'r-1'));
    const first = proposals.propose(bytes, 'r-1', Date.now() + 5_000);
    const retry = proposals.propose(bytes, 'r-1', Date.now() + 5_000);
    await nextTurn();
    const sent = proposalsOf(submitted[0]!);
    sent.forEach((p, i) => stateMachine.apply({ seq: i + 1, term: 1, kind: EntryKind.EventBatch, data: p.data }));
    sent.forEach((p, i) => proposals.onResult(ok(p.proposalId, i + 1)));
    const answers = await Promise.all([first, retry]);
    assert.deepEqual(
      answers.map((a) => a.result),
      [
        { outcome: 'applied', version: 1, existed: false },
        { outcome: 'applied', version: 1, existed: false },
      ],
    );
  });

  it('refuses each proposal at its own deadline, the earliest first, and never one answered in time', async () => {
    const { engine, submitted } = fakeEngine();
    const stateMachine = new StoreStateMachine();
    const outcomes: string[] = [];
    const proposals = new Proposals(engine, stateMachine, (outcome) => outcomes.push(outcome), 16);
    const ended: string[] = [];
    const track = (id: string, answer: Promise<unknown>): Promise<void> =>
      answer.then(
        () => void ended.push(`${id} answered`),
        (err: unknown) => {
          assert.ok(err instanceof StoreRefusal && err.kind === 'timeout', `${id}: ${String(err)}`);
          ended.push(`${id} timed out`);
        },
      );
    const start = Date.now();
    const late = track('late', proposals.propose(encodeCommand(put('l', 'r-l')), 'r-l', start + 400));
    const answered = track('in-time', proposals.propose(encodeCommand(put('a', 'r-a')), 'r-a', start + 60));
    // A later proposal with an earlier deadline than every other: the one deadline timer must move up for it.
    const early = track('early', proposals.propose(encodeCommand(put('e', 'r-e')), 'r-e', start + 30));
    await nextTurn();
    const sent = proposalsOf(submitted[0]!);
    stateMachine.apply({ seq: 1, term: 1, kind: EntryKind.EventBatch, data: sent[1]!.data });
    proposals.onResult(ok(sent[1]!.proposalId, 1));
    await Promise.all([late, answered, early]);
    assert.deepEqual(ended, ['in-time answered', 'early timed out', 'late timed out']);
    assert.ok(Date.now() - start >= 400, 'the late one waited for its deadline');
    assert.equal(proposals.count, 0);
    assert.deepEqual(outcomes, ['applied', 'timeout', 'timeout']);
    // A result for a proposal that timed out is ignored.
    proposals.onResult(ok(sent[2]!.proposalId, 2));
    assert.deepEqual(outcomes, ['applied', 'timeout', 'timeout']);
  });

  it('turns refusals into plain kinds, and a result with no outcome at apply into an internal refusal', async () => {
    const { engine, submitted } = fakeEngine();
    const stateMachine = new StoreStateMachine();
    const proposals = new Proposals(engine, stateMachine, () => undefined, 16);
    const pending = ['r-1', 'r-2', 'r-3', 'r-4'].map((id) =>
      proposals.propose(encodeCommand(put(id, id)), id, Date.now() + 5_000),
    );
    await nextTurn();
    const [a, b, c, d] = proposalsOf(submitted[0]!);
    proposals.onResult({
      type: 'proposalResult',
      proposalId: a!.proposalId,
      ok: false,
      code: 'not-leader',
      seq: 0,
      reason: 'not the leader',
      leaderHint: 'n2:7000',
    });
    proposals.onResult({
      type: 'proposalResult',
      proposalId: b!.proposalId,
      ok: false,
      code: 'leadership-lost',
      seq: 0,
      reason: 'leadership lost at term 3',
      leaderHint: '',
    });
    proposals.onResult({
      type: 'proposalResult',
      proposalId: c!.proposalId,
      ok: false,
      code: 'queue-full',
      seq: 0,
      reason: 'proposal queue full',
      leaderHint: '',
    });
    proposals.onResult(ok(d!.proposalId, 9));
    const outcomes = await Promise.allSettled(pending);
    const refusals = outcomes.map((o) => (o.status === 'rejected' ? (o.reason as StoreRefusal) : null));
    assert.ok(refusals.every((r) => r instanceof StoreRefusal));
    assert.deepEqual(
      refusals.map((r) => [r!.kind, r!.leaderHint]),
      [
        ['not-leader', 'n2:7000'],
        ['leadership-changed', ''],
        ['unavailable', ''],
        ['internal', ''],
      ],
    );
  });
});

describe('store: ReplicatedStore writes', () => {
  it('encode a write once and commit it as those bytes, with its request id beside them', async () => {
    const committed: Array<{ requestId: string; bytes: Uint8Array }> = [];
    const host: StoreHost = {
      stateMachine: new StoreStateMachine(),
      commit: (command) => {
        committed.push(command);
        return Promise.resolve({ seq: 4, result: { outcome: 'applied', version: 4, existed: false } });
      },
      readIndex: () => Promise.reject(new Error('no reads here')),
      waitApplied: () => Promise.resolve(),
    };
    const store = new ReplicatedStore(host);
    const value = { name: 'Ada', nested: { n: 1 } };
    assert.deepEqual(await store.put('users/u1', value), { version: 4 });
    value.nested.n = 2;
    assert.equal(committed.length, 1);
    const decoded = decodeCommand(committed[0]!.bytes);
    assert.ok(decoded.ok);
    assert.equal(decoded.command.requestId, committed[0]!.requestId);
    assert.deepEqual(decoded.command, {
      op: 'put',
      key: 'users/u1',
      value: { name: 'Ada', nested: { n: 1 } },
      requestId: committed[0]!.requestId,
    });
    await assert.rejects(
      store.put('users/u2', { n: 1n } as never),
      TypeError,
      'what JSON cannot hold is refused before the log',
    );
    assert.equal(committed.length, 1);
  });
});
