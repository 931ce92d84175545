// A node catching up refuses a read at once (store/errors.ts StoreCatchingUpError): the API answers it 503
// STORE_UNAVAILABLE with Retry-After, and the SDK sends the call again after that wait, a bounded number of
// times (retryAttemptsMax), every attempt within requestTimeoutMs. A real API server over the in-memory store,
// whose read barrier refuses as a catching-up node does while the test says so.
import assert from 'node:assert/strict';
import { startTestApi, type TestApi } from '../api/harness.js';
import { MemoryDocumentStore } from '../../store/memory-store.js';
import { StoreCatchingUpError } from '../../store/errors.js';
import type { DocumentStore } from '../../store/document-store.js';
import { SvcApiError, SvcClient, SvcConnectionError } from '../../sdk/src/index.js';

/** catchingUpStore: `inner` whose read barrier refuses the next `refusals.left` reads as a catching-up node does. */
function catchingUpStore(inner: MemoryDocumentStore): {
  store: DocumentStore;
  refusals: { left: number; made: number };
} {
  const refusals = { left: 0, made: 0 };
  const barrier = (): Promise<void> => {
    if (refusals.left <= 0) return Promise.resolve();
    refusals.left--;
    refusals.made++;
    return Promise.reject(new StoreCatchingUpError('this node is catching up (test)', 10, 20));
  };
  const store = new Proxy(inner, {
    get(target, property) {
      // No sessions and no separate barrier: every get and list asks the barrier above (a catching-up node
      // refuses its reads so), the key lookup's included.
      if (property === 'readSession' || property === 'barrier') return undefined;
      const value: unknown = Reflect.get(target, property, target);
      if (property === 'get' || property === 'list')
        return async (...args: unknown[]) => {
          await barrier();
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  }) as unknown as DocumentStore;
  return { store, refusals };
}

describe('sdk: a 503 with Retry-After from a node catching up', function () {
  this.timeout(60_000);
  let api: TestApi;
  let refusals: { left: number; made: number };
  before(async () => {
    const made = catchingUpStore(new MemoryDocumentStore());
    refusals = made.refusals;
    api = await startTestApi({ store: made.store });
  });
  after(async () => {
    await api?.close();
  });
  beforeEach(() => {
    refusals.left = 0;
    refusals.made = 0;
  });

  it('is answered 503 STORE_UNAVAILABLE with Retry-After at once, saying nothing was written', async () => {
    refusals.left = 1;
    const response = await fetch(`${api.baseUrl}/projects`, { headers: { 'x-api-key': api.adminKey } });
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '1');
    const body = (await response.json()) as { code: string; message: string };
    assert.equal(body.code, 'STORE_UNAVAILABLE');
    assert.match(body.message, /catching up/);
    assert.equal(refusals.made, 1);
  });

  it('is sent again by the SDK after Retry-After, and the retried call succeeds', async () => {
    const client = new SvcClient({ baseUrl: api.baseUrl, apiKey: api.adminKey, env: {} });
    refusals.left = 2;
    const page = await client.listProjects();
    assert.ok(Array.isArray(page.items));
    assert.equal(refusals.made, 2, 'two refusals, then the third attempt was answered');
  });

  it('sends a write again with its body intact, and it is written once', async () => {
    // A key this server has not cached yet: its lookup reads the store, and is refused once.
    const admin = new SvcClient({ baseUrl: api.baseUrl, apiKey: api.adminKey, env: {} });
    const { key } = await admin.createKey({ body: { name: 'writer', role: 'admin' } });
    const client = new SvcClient({ baseUrl: api.baseUrl, apiKey: key, env: {} });
    refusals.left = 1;
    const created = await client.createProject({
      body: { name: 'retried', workspace: '/tmp/retried', command: ['true'] },
    });
    assert.equal(created.name, 'retried');
    assert.equal(refusals.made, 1);
    const named = (await client.listProjects()).items.filter((project) => project.name === 'retried');
    assert.equal(named.length, 1, 'one project, not two');
  });

  it('gives up after retryAttemptsMax retries with the last 503, and retryAttemptsMax 0 retries nothing', async () => {
    const bounded = new SvcClient({ baseUrl: api.baseUrl, apiKey: api.adminKey, env: {}, retryAttemptsMax: 1 });
    refusals.left = 5;
    const error = await bounded.listProjects().then(
      () => assert.fail('a node that kept refusing was answered'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof SvcApiError, String(error));
    assert.equal(error.code, 'STORE_UNAVAILABLE');
    assert.equal(error.retryAfterSeconds, 1);
    assert.equal(refusals.made, 2, 'the first attempt and one retry');

    const none = new SvcClient({ baseUrl: api.baseUrl, apiKey: api.adminKey, env: {}, retryAttemptsMax: 0 });
    refusals.made = 0;
    await assert.rejects(none.listProjects(), SvcApiError);
    assert.equal(refusals.made, 1);
    assert.throws(
      () => new SvcClient({ baseUrl: api.baseUrl, env: {}, retryAttemptsMax: -1 }),
      /retryAttemptsMax must be a non-negative integer/,
    );
  });

  it('keeps every attempt within requestTimeoutMs: a wait for Retry-After past it ends the call as TIMEOUT', async () => {
    const short = new SvcClient({ baseUrl: api.baseUrl, apiKey: api.adminKey, env: {}, requestTimeoutMs: 300 });
    refusals.left = 5;
    const error = await short.listProjects().catch((caught: unknown) => caught);
    assert.ok(error instanceof SvcConnectionError, String(error));
    assert.equal(error.code, 'TIMEOUT');
    assert.equal(refusals.made, 1, 'no retry was sent after the deadline');
  });
});
