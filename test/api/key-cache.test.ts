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
import type { ApiKeyRecord } from '../../api/records.js';
import { startTestApi, type TestApi } from './harness.js';

/** LaggingReplica: reads and watchers see writes made "on another node" only after a barrier. */
class LaggingReplica implements DocumentStore {
  readonly local = new MemoryDocumentStore();
  private readonly elsewhere: Array<() => Promise<unknown>> = [];
  barriers = 0;

  /** writeElsewhere is a write acknowledged on another node: this replica has not applied it yet. */
  writeElsewhere(key: string, value: JsonObject): void {
    this.elsewhere.push(() => this.local.put(key, value));
  }

  async barrier(): Promise<void> {
    this.barriers++;
    for (const apply of this.elsewhere.splice(0)) await apply();
  }

  readSession(): DocumentStore {
    return this;
  }

  async get<T extends JsonObject = JsonObject>(key: string): Promise<VersionedValue<T> | null> {
    await this.barrier();
    return this.local.get<T>(key);
  }

  async list<T extends JsonObject = JsonObject>(prefix: string, options?: ListOptions): Promise<ListResult<T>> {
    await this.barrier();
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
});
