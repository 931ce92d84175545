// EngineReads: the store's read indexes come from the engine's readIndex (engine/read-index.ts): one input
// per loop turn's requests, settled by its readIndexResult; the engine's refusals become the store's refusal
// kinds, so StoreRouter retries them at the leader the refusal names, or after a pause.
import assert from 'node:assert/strict';
import type { Effect, Input } from '../../engine/types.js';
import { EngineReads } from '../../store/engine-reads.js';
import { StoreRefusal, StoreUnavailableError } from '../../store/errors.js';
import type { StoreEngine } from '../../store/host.js';

type ReadResult = Extract<Effect, { type: 'readIndexResult' }>;

function fakeEngine(overloaded = false): { engine: StoreEngine; submitted: Input[] } {
  const submitted: Input[] = [];
  const engine = {
    status: () => ({
      id: 1,
      role: 'leader' as const,
      term: 4,
      leaderId: 1,
      roster: { membershipVersion: 1, nextMemberId: 2, members: [] },
      commitSeq: 9,
      removed: false,
    }),
    failure: null,
    overloaded: () => overloaded,
    submit: (input: Input) => {
      submitted.push(input);
    },
  } satisfies StoreEngine;
  return { engine, submitted };
}

const readIdOf = (input: Input | undefined): number => {
  assert.ok(input && input.type === 'readIndex');
  return input.readId;
};

describe('store: read indexes from the engine', () => {
  const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

  it('asks the engine once per loop turn, whatever the number of requests, and answers each with the index confirmed', async () => {
    const { engine, submitted } = fakeEngine();
    const outcomes: string[] = [];
    const reads = new EngineReads(engine, (o) => outcomes.push(o));
    const first = reads.take(Date.now() + 5_000);
    const second = reads.take(Date.now() + 5_000);
    assert.equal(submitted.length, 0, 'gathered until the turn ends');
    assert.equal(reads.count, 2);
    await turn();
    assert.equal(submitted.length, 1, 'one readIndex input for both');
    const third = reads.take(Date.now() + 5_000); // a later turn: its own input (it began after the first was sent)
    await turn();
    assert.equal(submitted.length, 2);
    const [a, b] = submitted.map(readIdOf);
    assert.notEqual(a, b);
    reads.onResult({ type: 'readIndexResult', readId: b!, index: 12, refusal: null, leaderHint: '' });
    reads.onResult({ type: 'readIndexResult', readId: a!, index: 11, refusal: null, leaderHint: '' });
    reads.onResult({ type: 'readIndexResult', readId: 999, index: 1, refusal: null, leaderHint: '' }); // unknown: ignored
    assert.deepEqual(await Promise.all([first, second, third]), [
      { commitSeq: 11, term: 4 },
      { commitSeq: 11, term: 4 },
      { commitSeq: 12, term: 4 },
    ]);
    assert.deepEqual(outcomes, ['answered', 'answered']);
    assert.equal(reads.count, 0);
  });

  it("turns the engine's refusals into retryable store refusals for every request of the input, the leader's address kept", async () => {
    const { engine, submitted } = fakeEngine();
    const reads = new EngineReads(engine);
    const asked: Array<Promise<unknown>> = [];
    for (let i = 0; i < 3; i++) {
      asked.push(reads.take(Date.now() + 5_000), reads.take(Date.now() + 5_000));
      await turn();
    }
    assert.equal(submitted.length, 3);
    const results: ReadResult[] = [
      {
        type: 'readIndexResult',
        readId: readIdOf(submitted[0]),
        index: 0,
        refusal: 'not-leader',
        leaderHint: 'n2:7000',
      },
      { type: 'readIndexResult', readId: readIdOf(submitted[1]), index: 0, refusal: 'stepped-down', leaderHint: '' },
      { type: 'readIndexResult', readId: readIdOf(submitted[2]), index: 0, refusal: 'queue-full', leaderHint: '' },
    ];
    for (const r of results) reads.onResult(r);
    const refusals = (await Promise.allSettled(asked)).map((o) =>
      o.status === 'rejected' ? (o.reason as StoreRefusal) : null,
    );
    assert.deepEqual(
      refusals.map((r) => [r?.kind, r?.leaderHint]),
      [
        ['not-leader', 'n2:7000'],
        ['not-leader', 'n2:7000'],
        ['leadership-changed', ''],
        ['leadership-changed', ''],
        ['overloaded', ''],
        ['overloaded', ''],
      ],
    );
  });

  it('times each request out at its own deadline (the leader never confirmed), the others of its input still waiting', async () => {
    const { engine, submitted } = fakeEngine();
    const outcomes: string[] = [];
    const reads = new EngineReads(engine, (o) => outcomes.push(o));
    const soon = reads.take(Date.now() + 20);
    const later = reads.take(Date.now() + 5_000);
    await assert.rejects(soon, (err: unknown) => err instanceof StoreRefusal && err.kind === 'timeout');
    assert.deepEqual(outcomes, ['timeout']);
    assert.equal(reads.count, 1);
    reads.onResult({
      type: 'readIndexResult',
      readId: readIdOf(submitted[0]),
      index: 7,
      refusal: null,
      leaderHint: '',
    });
    assert.deepEqual(await later, { commitSeq: 7, term: 4 });
    assert.equal(reads.count, 0);
  });

  it('refuses when the node is overloaded, and rejects all, gathered or sent, on failure', async () => {
    await assert.rejects(
      new EngineReads(fakeEngine(true).engine).take(Date.now() + 5_000),
      (err: unknown) => err instanceof StoreRefusal && err.kind === 'unavailable',
    );
    const { engine, submitted } = fakeEngine();
    const reads = new EngineReads(engine);
    const sent = reads.take(Date.now() + 5_000);
    await turn();
    const gathered = reads.take(Date.now() + 5_000);
    reads.rejectAll(new StoreUnavailableError('node stopped'));
    await assert.rejects(sent, StoreUnavailableError);
    await assert.rejects(gathered, StoreUnavailableError);
    assert.equal(reads.count, 0);
    await turn();
    assert.equal(submitted.length, 1, 'nothing is sent for requests already rejected');
  });
  it("gathers a forwarding member's requests apart: one input per asker and term, none shared with other reads", async () => {
    const { engine, submitted } = fakeEngine();
    const reads = new EngineReads(engine);
    const own = reads.take(Date.now() + 5_000);
    const fromB = [
      reads.take(Date.now() + 5_000, { id: 2, term: 4 }),
      reads.take(Date.now() + 5_000, { id: 2, term: 4 }),
    ];
    const fromC = reads.take(Date.now() + 5_000, { id: 3, term: 4 });
    const fromBOlder = reads.take(Date.now() + 5_000, { id: 2, term: 3 });
    await turn();
    const inputs = submitted.map((i) => (i.type === 'readIndex' ? { asker: i.asker } : { asker: undefined }));
    assert.deepEqual(inputs, [
      { asker: undefined },
      { asker: { id: 2, term: 4 } },
      { asker: { id: 3, term: 4 } },
      { asker: { id: 2, term: 3 } },
    ]);
    for (const [i, input] of submitted.entries())
      reads.onResult({
        type: 'readIndexResult',
        readId: readIdOf(input),
        index: 20 + i,
        refusal: null,
        leaderHint: '',
      });
    assert.deepEqual(
      (await Promise.all([own, ...fromB, fromC, fromBOlder])).map((a) => a.commitSeq),
      [20, 21, 21, 22, 23],
    );
  });
  it("sends a request its caller gathered already (the leader's own ReadIndexBatch) at once, as its own input", async () => {
    const { engine, submitted } = fakeEngine();
    const reads = new EngineReads(engine);
    const other = reads.take(Date.now() + 5_000);
    const gathered = reads.take(Date.now() + 5_000, undefined, true);
    assert.equal(submitted.length, 1, 'no second turn of gathering: the engine is asked in the same turn');
    assert.equal(reads.count, 2);
    // An asker's requests still share one input per turn, whatever the flag says.
    const fromB = reads.take(Date.now() + 5_000, { id: 2, term: 4 }, true);
    assert.equal(submitted.length, 1);
    await turn();
    assert.equal(submitted.length, 3, "the turn's other requests go as before, apart from the gathered one");
    for (const [i, input] of submitted.entries())
      reads.onResult({
        type: 'readIndexResult',
        readId: readIdOf(input),
        index: 30 + i,
        refusal: null,
        leaderHint: '',
      });
    assert.deepEqual(
      (await Promise.all([gathered, other, fromB])).map((a) => a.commitSeq),
      [30, 31, 32],
    );
    assert.equal(reads.count, 0);
  });

  it('times a gathered request out at its deadline and rejects it on failure like any other', async () => {
    const { engine } = fakeEngine();
    const outcomes: string[] = [];
    const reads = new EngineReads(engine, (o) => outcomes.push(o));
    await assert.rejects(
      reads.take(Date.now() + 20, undefined, true),
      (err: unknown) => err instanceof StoreRefusal && err.kind === 'timeout',
    );
    assert.deepEqual(outcomes, ['timeout']);
    const sent = reads.take(Date.now() + 5_000, undefined, true);
    reads.rejectAll(new StoreUnavailableError('node stopped'));
    await assert.rejects(sent, StoreUnavailableError);
    assert.equal(reads.count, 0);
  });
});
