import assert from 'node:assert/strict';
import { MemoryDocumentStore } from '../../store/memory-store.js';
import { describeDocumentStoreContract } from './document-store-contract.js';

describeDocumentStoreContract('MemoryDocumentStore (test double)', async () => ({ store: new MemoryDocumentStore() }));

describe('store: MemoryDocumentStore specifics', () => {
  it('rejects values that are not JSON objects and keys that are empty', async () => {
    const store = new MemoryDocumentStore();
    await assert.rejects(store.put('k', [] as never), TypeError);
    await assert.rejects(store.put('', {}), RangeError);
  });

  it('keeps notifying the other watchers when one throws', async () => {
    const store = new MemoryDocumentStore();
    let calls = 0;
    store.watch('p/', () => {
      throw new Error('a broken watcher');
    });
    store.watch('p/', () => {
      calls++;
    });
    await store.put('p/1', { a: 1 });
    assert.equal(calls, 1);
  });
});
