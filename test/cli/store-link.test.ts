// cli/node/store-link.ts, where the store's plain refusals meet svc.store.v1's status codes: a refusal the
// leader's store makes reaches the follower's store as the same kind with the same leader hint, whatever the
// kind, and only the kinds the store retries map to codes the store retries.
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import { RETRYABLE_REFUSALS, StoreRefusal, StoreUnavailableError, type RefusalKind } from '../../store/errors.js';
import type { StoreRouter } from '../../store/store-router.js';
import { MemoryDocumentStore } from '../../store/memory-store.js';
import type { DocumentStore } from '../../store/document-store.js';
import { kindOfCode, leaderLink, storeServiceHandler } from '../../cli/node/store-link.js';
import { StoreCallError, type StoreClientPool } from '../../transports/store-rpc/store-service.js';

/** noStore stands for the node's store where a test only calls the router's half. */
const noStore = (): DocumentStore => {
  throw new Error('no store in this test');
};

const KINDS: RefusalKind[] = [
  'not-leader',
  'leadership-changed',
  'unavailable',
  'timeout',
  'overloaded',
  'invalid',
  'internal',
];

describe('cli/node store link', () => {
  it('carries every refusal kind and its leader hint from the leader store to the follower store', async () => {
    for (const kind of KINDS) {
      const router = {
        serveProposal: () => Promise.reject(new StoreRefusal(kind, `refused: ${kind}`, 'n1:7000')),
      } as unknown as StoreRouter;
      const handler = storeServiceHandler(() => router, noStore);
      const onWire = await handler.propose(new Uint8Array([1]), Date.now() + 1_000, '').then(
        () => null,
        (err: unknown) => err,
      );
      assert.ok(onWire instanceof StoreCallError, kind);
      // The client pool would reject with what the service answered: the same code, details and hint.
      const pool = {
        propose: () => Promise.reject(new StoreCallError(onWire.code, onWire.details, onWire.leaderHint)),
      } as unknown as StoreClientPool;
      const back = await leaderLink(pool)
        .propose('n1:7000', { requestId: 'r1', bytes: new Uint8Array([1]) }, Date.now() + 1_000)
        .then(
          () => null,
          (err: unknown) => err,
        );
      assert.ok(back instanceof StoreRefusal, kind);
      assert.equal(back.kind, kind);
      assert.equal(back.leaderHint, 'n1:7000');
      assert.match(back.message, new RegExp(`refused: ${kind}`));
    }
  });

  it('retries what the store retries: the codes of retryable kinds, and CANCELLED', () => {
    const retried = new Set([
      status.FAILED_PRECONDITION,
      status.ABORTED,
      status.UNAVAILABLE,
      status.DEADLINE_EXCEEDED,
      status.CANCELLED,
      status.RESOURCE_EXHAUSTED,
    ]);
    for (let code = 0; code <= 16; code++) {
      if (code === status.OK) continue;
      assert.equal(RETRYABLE_REFUSALS.has(kindOfCode(code)), retried.has(code), `code ${status[code]}`);
    }
  });

  it('answers a wait the leader gave up on as UNAVAILABLE, and other failures pass to the service as they are', async () => {
    const failing = (err: Error) =>
      storeServiceHandler(() => ({ serveReadIndex: () => Promise.reject(err) }) as unknown as StoreRouter, noStore);
    const unavailable = await failing(new StoreUnavailableError('timed out waiting'))
      .readIndex(Date.now())
      .catch((err: unknown) => err);
    assert.ok(unavailable instanceof StoreCallError);
    assert.equal(unavailable.code, status.UNAVAILABLE);
    const bug = new Error('a bug');
    assert.equal(
      await failing(bug)
        .readIndex(Date.now())
        .catch((err: unknown) => err),
      bug,
    );
    const notRunning = storeServiceHandler(() => {
      throw new StoreUnavailableError('node is not running');
    }, noStore);
    const refused = await notRunning.readIndex(Date.now()).catch((err: unknown) => err);
    assert.ok(
      refused instanceof StoreCallError && refused.code === status.UNAVAILABLE,
      'a throw before the call is an answer too',
    );
  });

  it("answers a client's Get from the node's store: the value as JSON with its version, a missing key as not found, a bad key as INVALID_ARGUMENT", async () => {
    const store = new MemoryDocumentStore();
    const { version } = await store.put('k', { v: 'x' });
    const handler = storeServiceHandler(
      () => {
        throw new Error('Get needs no router');
      },
      () => store,
    );
    assert.deepEqual(await handler.get('k', Date.now() + 1_000), { found: true, valueJson: '{"v":"x"}', version });
    assert.deepEqual(await handler.get('missing', Date.now() + 1_000), { found: false, valueJson: '', version: 0 });
    const bad = await handler.get('', Date.now() + 1_000).catch((err: unknown) => err);
    assert.ok(bad instanceof StoreCallError && bad.code === status.INVALID_ARGUMENT, String(bad));
    const cutOff = storeServiceHandler(
      () => {
        throw new Error('Get needs no router');
      },
      () =>
        ({ get: () => Promise.reject(new StoreUnavailableError('read index timed out')) }) as unknown as DocumentStore,
    );
    const unavailable = await cutOff.get('k', Date.now() + 1_000).catch((err: unknown) => err);
    assert.ok(unavailable instanceof StoreCallError && unavailable.code === status.UNAVAILABLE, String(unavailable));
  });
});
