// The behaviour every DocumentStore must have for the API's routes to be correct. The in-memory double runs
// it in store.test.ts; the replicated store can run the same suite by calling describeDocumentStoreContract
// with a factory of its own.
import assert from 'node:assert/strict';
import type { DocumentStore, StoreChange } from '../../store/document-store.js';
import { isVersionConflict } from '../../store/document-store.js';

export interface StoreUnderTest {
  store: DocumentStore;
  close?: () => Promise<void>;
}

/** watchDeliveryTimeoutMs bounds how long a committed change may take to reach a watcher. */
const watchDeliveryTimeoutMs = 5000;

async function waitForLength<T>(items: T[], length: number): Promise<void> {
  const deadline = Date.now() + watchDeliveryTimeoutMs;
  while (items.length < length) {
    if (Date.now() > deadline) throw new Error(`expected ${length} notifications, got ${items.length}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function describeDocumentStoreContract(name: string, open: () => Promise<StoreUnderTest>): void {
  describe(`DocumentStore contract: ${name}`, () => {
    let subject: StoreUnderTest;
    let store: DocumentStore;
    beforeEach(async () => {
      subject = await open();
      store = subject.store;
    });
    afterEach(async () => {
      await subject.close?.();
    });

    it('puts and gets with growing versions, and hands out copies', async () => {
      const first = await store.put('a/1', { n: 1 });
      const second = await store.put('a/1', { n: 2 });
      assert.ok(second.version > first.version && first.version > 0);
      const got = await store.get('a/1');
      assert.deepEqual(got, { value: { n: 2 }, version: second.version });
      got!.value.n = 99;
      assert.equal((await store.get('a/1'))!.value.n, 2, 'callers cannot mutate stored values');
      assert.equal(await store.get('a/2'), null);
    });

    it('compare-and-set: expectedVersion 0 means absent; a mismatch is a typed conflict and changes nothing', async () => {
      const { version } = await store.put('k', { v: 1 }, { expectedVersion: 0 });
      await assert.rejects(
        store.put('k', { v: 2 }, { expectedVersion: 0 }),
        (error: unknown) => isVersionConflict(error) && error.actualVersion === version,
      );
      await assert.rejects(store.put('k', { v: 2 }, { expectedVersion: version + 100 }), isVersionConflict);
      await assert.rejects(store.delete('k', { expectedVersion: version + 1 }), isVersionConflict);
      assert.equal((await store.get('k'))!.value.v, 1);
      await store.put('k', { v: 3 }, { expectedVersion: version });
      assert.equal((await store.delete('k')).deleted, true);
      assert.equal((await store.delete('k')).deleted, false);
      await assert.rejects(store.delete('k', { expectedVersion: 5 }), isVersionConflict);
    });

    it('lets exactly one of many concurrent creates of one key win', async () => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, (_unused, index) => store.put('unique', { writer: index }, { expectedVersion: 0 })),
      );
      assert.equal(outcomes.filter((outcome) => outcome.status === 'fulfilled').length, 1);
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') assert.ok(isVersionConflict(outcome.reason));
      }
    });

    it('lists by prefix in key order, paging with an exclusive cursor', async () => {
      for (const key of ['b/3', 'a/1', 'b/1', 'c/1', 'b/2', 'b/10']) await store.put(key, { key });
      const page1 = await store.list('b/', { limit: 2 });
      assert.deepEqual(
        page1.entries.map((entry) => entry.key),
        ['b/1', 'b/10'],
      );
      assert.equal(page1.nextAfter, 'b/10');
      const page2 = await store.list('b/', { limit: 2, after: page1.nextAfter! });
      assert.deepEqual(
        page2.entries.map((entry) => entry.key),
        ['b/2', 'b/3'],
      );
      assert.equal(page2.nextAfter, null);
      assert.deepEqual((await store.list('z/')).entries, []);
      assert.deepEqual(
        (await store.list('b/3')).entries.map((entry) => entry.key),
        ['b/3'],
      );
    });

    it('lists copies by default; a shared listing reads the same values, and later writes leave what it read alone', async () => {
      await store.put('s/1', { n: 1, tags: ['a'] });
      await store.put('s/2', { n: 2, tags: ['b'] });
      const copies = await store.list('s/');
      copies.entries[0]!.value.n = 99;
      const shared = await store.list('s/', { shared: true });
      assert.deepEqual(
        shared.entries.map((e) => e.value),
        [
          { n: 1, tags: ['a'] },
          { n: 2, tags: ['b'] },
        ],
        'a copy changed nothing stored',
      );
      assert.deepEqual(
        shared.entries.map((e) => e.version),
        copies.entries.map((e) => e.version),
      );
      await store.put('s/1', { n: 10, tags: ['c'] });
      await store.delete('s/2');
      assert.deepEqual(
        shared.entries.map((e) => e.value),
        [
          { n: 1, tags: ['a'] },
          { n: 2, tags: ['b'] },
        ],
        'values read before the writes',
      );
      assert.deepEqual(
        (await store.list('s/', { shared: true })).entries.map((e) => e.value),
        [{ n: 10, tags: ['c'] }],
      );
    });

    it('notifies watchers of committed changes under their prefix until they unsubscribe', async () => {
      const seen: StoreChange[] = [];
      const stop = store.watch('p/', (change) => seen.push(change));
      await store.put('p/1', { a: 1 });
      await store.put('q/1', { a: 1 });
      await store.delete('p/1');
      await waitForLength(seen, 2);
      stop();
      await store.put('p/2', { a: 2 });
      await store.put('p/3', { a: 3 });
      assert.deepEqual(
        seen.map((change) => [change.kind, change.key]),
        [
          ['put', 'p/1'],
          ['delete', 'p/1'],
        ],
      );
    });
  });
}
