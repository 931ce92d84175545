import assert from 'node:assert/strict';
import { MemoryDocumentStore } from '../../api/store/memory-store.js';
import { VersionConflictError } from '../../api/store/document-store.js';
import type { StoreChange } from '../../api/store/document-store.js';

describe('api/store: MemoryDocumentStore (test double)', () => {
  it('puts and gets copies with growing versions', async () => {
    const store = new MemoryDocumentStore();
    const first = await store.put('a/1', { n: 1 });
    const second = await store.put('a/1', { n: 2 });
    assert.ok(second.version > first.version && first.version > 0);
    const got = await store.get('a/1');
    assert.deepEqual(got, { value: { n: 2 }, version: second.version });
    got!.value.n = 99;
    assert.equal((await store.get('a/1'))!.value.n, 2, 'callers cannot mutate stored values');
    assert.equal(await store.get('a/2'), null);
  });

  it('compare-and-set: expectedVersion 0 means absent, mismatches throw a typed conflict and change nothing', async () => {
    const store = new MemoryDocumentStore();
    const { version } = await store.put('k', { v: 1 }, { expectedVersion: 0 });
    await assert.rejects(store.put('k', { v: 2 }, { expectedVersion: 0 }),
      (error: unknown) => error instanceof VersionConflictError && error.actualVersion === version);
    await assert.rejects(store.put('k', { v: 2 }, { expectedVersion: version + 100 }), VersionConflictError);
    await assert.rejects(store.delete('k', { expectedVersion: version + 1 }), VersionConflictError);
    assert.equal((await store.get('k'))!.value.v, 1);
    await store.put('k', { v: 3 }, { expectedVersion: version });
    assert.equal((await store.delete('k')).deleted, true);
    assert.equal((await store.delete('k')).deleted, false);
    await assert.rejects(store.delete('k', { expectedVersion: 5 }), VersionConflictError);
  });

  it('lists by prefix in key order, paging with an exclusive cursor', async () => {
    const store = new MemoryDocumentStore();
    for (const key of ['b/3', 'a/1', 'b/1', 'c/1', 'b/2', 'b/10']) await store.put(key, { key });
    const page1 = await store.list('b/', { limit: 2 });
    assert.deepEqual(page1.entries.map((entry) => entry.key), ['b/1', 'b/10']);
    assert.equal(page1.nextAfter, 'b/10');
    const page2 = await store.list('b/', { limit: 2, after: page1.nextAfter! });
    assert.deepEqual(page2.entries.map((entry) => entry.key), ['b/2', 'b/3']);
    assert.equal(page2.nextAfter, null);
    assert.deepEqual((await store.list('z/')).entries, []);
  });

  it('rejects values that are not JSON objects and keys that are empty', async () => {
    const store = new MemoryDocumentStore();
    await assert.rejects(store.put('k', [] as never), TypeError);
    await assert.rejects(store.put('', {}), RangeError);
  });

  it('notifies watchers of committed changes under their prefix until they unsubscribe', async () => {
    const store = new MemoryDocumentStore();
    const seen: StoreChange[] = [];
    const stop = store.watch('p/', (change) => seen.push(change));
    store.watch('p/', () => { throw new Error('a broken watcher'); });
    await store.put('p/1', { a: 1 });
    await store.put('q/1', { a: 1 });
    await store.delete('p/1');
    stop();
    await store.put('p/2', { a: 2 });
    assert.deepEqual(seen.map((change) => [change.kind, change.key]), [['put', 'p/1'], ['delete', 'p/1']]);
  });
});
