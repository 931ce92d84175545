// The per-process key cache (api/auth/key-cache.ts) against a lagging replica: a DocumentStore double whose
// local state (and so its watch) holds writes acknowledged elsewhere only once a read barrier catches it up,
// as a follower of the replicated store does. A cached key revoked elsewhere must be refused on the next
// request (the barrier catches up, the watch empties the cache), never served from the stale cache.
import assert from 'node:assert/strict';
import type {
  DocumentStore,
  JsonObject,
  ListOptions,
  ListResult,
  StoreWatcher,
  VersionedValue,
  WriteOptions,
} from '../../store/document-store.js';
import { MemoryDocumentStore } from '../../store/memory-store.js';
import { StoreCatchingUpError, StoreUnavailableError } from '../../store/errors.js';
import type { ApiKeyRecord } from '../../api/records.js';
import { startTestApi, type TestApi } from './harness.js';

/** LaggingReplica: reads and watchers see writes made "on another node" only after a barrier. */
class LaggingReplica implements DocumentStore {
  readonly local = new MemoryDocumentStore();
  private readonly elsewhere: Array<() => Promise<unknown>> = [];
  barriers = 0;
  /** gets counts the reads of single keys (a key looked up in the store rather than the cache). */
  gets = 0;
  /**
   * barrierRefusal, when set, is what a request's barrier throws: a catching-up node's refusal, whose reads then
   * go to the leader (modelled here as reads that catch up first), or any other failure.
   */
  barrierRefusal: Error | null = null;

  /** writeElsewhere is a write acknowledged on another node: this replica has not applied it yet. */
  writeElsewhere(key: string, value: JsonObject): void {
    this.elsewhere.push(() => this.local.put(key, value));
  }

  async barrier(): Promise<void> {
    this.barriers++;
    if (this.barrierRefusal) throw this.barrierRefusal;
    await this.catchUp();
  }

  private async catchUp(): Promise<void> {
    for (const apply of this.elsewhere.splice(0)) await apply();
  }

  readSession(): DocumentStore {
    return this;
  }

  async get<T extends JsonObject = JsonObject>(key: string): Promise<VersionedValue<T> | null> {
    this.gets++;
    await this.catchUp();
    return this.local.get<T>(key);
  }

  async list<T extends JsonObject = JsonObject>(prefix: string, options?: ListOptions): Promise<ListResult<T>> {
    await this.catchUp();
    return this.local.list<T>(prefix, options);
  }

  put(key: string, value: JsonObject, options?: WriteOptions): Promise<{ version: number }> {
    return this.local.put(key, value, options);
  }

  delete(key: string, options?: WriteOptions): Promise<{ deleted: boolean }> {
    return this.local.delete(key, options);
  }

  watch(prefix: string, watcher: StoreWatcher): () => void {
    return this.local.watch(prefix, watcher);
  }
}

describe('api: key cache on a lagging replica', () => {
  let replica: LaggingReplica;
  let api: TestApi;
  before(async () => {
    replica = new LaggingReplica();
    api = await startTestApi({ store: replica });
  });
  after(async () => {
    await api?.close();
  });

  it('refuses a cached key revoked elsewhere on the next request, and serves it from the cache until then', async () => {
    const created = await api.call('POST', '/keys', { body: { name: 'cached' } });
    const { key, record } = created.json as { key: string; record: { id: string } };
    assert.equal((await api.call('GET', '/projects', { key })).status, 200);
    const barriersBefore = replica.barriers;
    assert.equal((await api.call('GET', '/projects', { key })).status, 200);
    assert.ok(replica.barriers > barriersBefore, 'a cached key still takes the read barrier');
    const stored = (await replica.local.get<ApiKeyRecord>(`keys/${record.id}`))!.value;
    replica.writeElsewhere(`keys/${record.id}`, {
      ...stored,
      revoked_at: new Date().toISOString(),
      revoked_by: 'elsewhere',
    });
    const refused = await api.call('GET', '/projects', { key });
    assert.equal(refused.status, 401, `a key revoked elsewhere answered ${refused.status}`);
    assert.equal((refused.json as { code: string }).code, 'KEY_REVOKED');
  });

  it('forgets a key whose hash index was removed elsewhere', async () => {
    const created = await api.call('POST', '/keys', { body: { name: 'unindexed' } });
    const { key } = created.json as { key: string };
    assert.equal((await api.call('GET', '/projects', { key })).status, 200);
    const index = (await replica.local.list('keys-by-hash/')).entries;
    const own = index.find((entry) => entry.value.key_id === (created.json as { record: { id: string } }).record.id)!;
    replica.writeElsewhere(own.key, { key_id: 'key_gone' });
    assert.equal((await api.call('GET', '/projects', { key })).status, 401);
  });

  it('on a node catching up, looks the key up in the store (at the leader), not in its cache; any other barrier failure is a 503', async () => {
    const created = await api.call('POST', '/keys', { body: { name: 'catching-up' } });
    const { key, record } = created.json as { key: string; record: { id: string } };
    assert.equal((await api.call('GET', '/projects', { key })).status, 200);
    const getsCached = replica.gets;
    assert.equal((await api.call('GET', '/projects', { key })).status, 200);
    assert.equal(replica.gets, getsCached, 'a cached key behind a barrier that held reads no key record');
    try {
      replica.barrierRefusal = new StoreCatchingUpError('catching up', 1, 2);
      const getsBefore = replica.gets;
      assert.equal((await api.call('GET', '/projects', { key })).status, 200);
      assert.ok(replica.gets > getsBefore, 'the key was read from the store, the cache not trusted');
      const stored = (await replica.local.get<ApiKeyRecord>(`keys/${record.id}`))!.value;
      replica.writeElsewhere(`keys/${record.id}`, { ...stored, revoked_at: new Date().toISOString() });
      const revoked = await api.call('GET', '/projects', { key });
      assert.equal((revoked.json as { code: string }).code, 'KEY_REVOKED');
      replica.barrierRefusal = new StoreUnavailableError('no leader');
      const getsBeforeUnavailable = replica.gets;
      const unavailable = await api.call('GET', '/projects', { key });
      assert.equal(unavailable.status, 503);
      assert.equal((unavailable.json as { code: string }).code, 'STORE_UNAVAILABLE');
      assert.equal(replica.gets, getsBeforeUnavailable, 'no key read without a barrier or a catching-up refusal');
    } finally {
      replica.barrierRefusal = null;
    }
  });
});
