// EngineReads: the store's read indexes come from the engine's readIndex (engine/read-index.ts): one input
// per request, settled by its readIndexResult; the engine's refusals become the store's refusal kinds, so
// StoreRouter retries them at the leader the refusal names, or after a pause.
import assert from 'node:assert/strict';
import type { Effect, Input } from '../../engine/types.js';
import { EngineReads } from '../../store/engine-reads.js';
import { StoreRefusal, StoreUnavailableError } from '../../store/errors.js';
import type { StoreEngine } from '../../store/host.js';

type ReadResult = Extract<Effect, { type: 'readIndexResult' }>;

function fakeEngine(overloaded = false): { engine: StoreEngine; submitted: Input[] } {
  const submitted: Input[] = [];
  const engine = {
    status: () => ({ role: 'leader' as const, term: 4, leaderId: 1, roster: { membershipVersion: 1, nextMemberId: 2, members: [] }, commitSeq: 9, removed: false }),
    failure: null,
    overloaded: () => overloaded,
    submit: (input: Input) => { submitted.push(input); },
  } satisfies StoreEngine;
  return { engine, submitted };
}

const readIdOf = (input: Input | undefined): number => {
  assert.ok(input && input.type === 'readIndex');
  return input.readId;
};

describe('store: read indexes from the engine', () => {
  it('asks the engine once per request and answers with the index its readIndexResult confirms', async () => {
    const { engine, submitted } = fakeEngine();
    const outcomes: string[] = [];
    const reads = new EngineReads(engine, (o) => outcomes.push(o));
    const first = reads.take(Date.now() + 5_000);
    const second = reads.take(Date.now() + 5_000);
    assert.equal(submitted.length, 2);
    const [a, b] = submitted.map(readIdOf);
    assert.notEqual(a, b);
    assert.equal(reads.count, 2);
    reads.onResult({ type: 'readIndexResult', readId: b!, index: 12, refusal: null, leaderHint: '' });
    reads.onResult({ type: 'readIndexResult', readId: a!, index: 11, refusal: null, leaderHint: '' });
    reads.onResult({ type: 'readIndexResult', readId: 999, index: 1, refusal: null, leaderHint: '' }); // unknown: ignored
    assert.deepEqual(await Promise.all([first, second]), [{ commitSeq: 11, term: 4 }, { commitSeq: 12, term: 4 }]);
    assert.deepEqual(outcomes, ['answered', 'answered']);
    assert.equal(reads.count, 0);
  });

  it('turns the engine\'s refusals into retryable store refusals, the leader\'s address kept', async () => {
    const { engine, submitted } = fakeEngine();
    const reads = new EngineReads(engine);
    const asked = [reads.take(Date.now() + 5_000), reads.take(Date.now() + 5_000), reads.take(Date.now() + 5_000)];
    const results: ReadResult[] = [
      { type: 'readIndexResult', readId: readIdOf(submitted[0]), index: 0, refusal: 'not-leader', leaderHint: 'n2:7000' },
      { type: 'readIndexResult', readId: readIdOf(submitted[1]), index: 0, refusal: 'stepped-down', leaderHint: '' },
      { type: 'readIndexResult', readId: readIdOf(submitted[2]), index: 0, refusal: 'queue-full', leaderHint: '' },
    ];
    for (const r of results) reads.onResult(r);
    const refusals = (await Promise.allSettled(asked)).map((o) => (o.status === 'rejected' ? o.reason as StoreRefusal : null));
    assert.deepEqual(refusals.map((r) => [r?.kind, r?.leaderHint]), [['not-leader', 'n2:7000'], ['leadership-changed', ''], ['overloaded', '']]);
  });

  it('times out at the deadline (the leader never confirmed), refuses when the node is overloaded, and rejects all on failure', async () => {
    const { engine } = fakeEngine();
    const reads = new EngineReads(engine);
    await assert.rejects(reads.take(Date.now() + 20), (err: unknown) => err instanceof StoreRefusal && err.kind === 'timeout');
    assert.equal(reads.count, 0);
    await assert.rejects(new EngineReads(fakeEngine(true).engine).take(Date.now() + 5_000), (err: unknown) => err instanceof StoreRefusal && err.kind === 'unavailable');
    const waiting = reads.take(Date.now() + 5_000);
    reads.rejectAll(new StoreUnavailableError('node stopped'));
    await assert.rejects(waiting, StoreUnavailableError);
  });
});
