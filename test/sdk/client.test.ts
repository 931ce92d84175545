import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { startTestApi, waitFor } from '../api/harness.js';
import type { TestApi } from '../api/harness.js';
import {
  SvcApiError,
  SvcClient,
  SvcConnectionError,
  SvcError,
  authErrorCodes,
  isAuthError,
} from '../../sdk/src/index.js';

/** rejectsWith awaits a call that must fail with a typed SvcApiError of this code and status. */
async function rejectsWith(call: Promise<unknown>, code: string, status: number): Promise<SvcApiError> {
  const error = await call.then(
    () => assert.fail(`expected ${code}, the call succeeded`),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof SvcApiError, `expected an SvcApiError, got ${String(error)}`);
  assert.equal(error.code, code, error.message);
  assert.equal(error.status, status);
  assert.match(error.requestId ?? '', /.+/, 'the request id comes along for support');
  return error;
}

/** freePort finds a loopback port with nothing listening on it. */
async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('sdk: client against a real API server', function () {
  this.timeout(30_000);
  let api: TestApi;
  let admin: SvcClient;
  before(async () => {
    api = await startTestApi();
    admin = new SvcClient({ baseUrl: api.baseUrl, apiKey: api.adminKey });
  });
  after(async () => {
    await api?.close();
  });

  it('takes the key and URL from SVC_API_KEY and SVC_URL, and options win over them', async () => {
    const fromEnv = new SvcClient({ env: { SVC_API_KEY: api.adminKey, SVC_URL: `${api.baseUrl}/` } });
    assert.equal(fromEnv.baseUrl, api.baseUrl, 'a trailing slash is dropped');
    assert.ok(fromEnv.hasApiKey);
    assert.deepEqual(
      (await fromEnv.listUsers()).items.map((user) => user.id),
      [api.adminUserId],
    );
    const overridden = new SvcClient({
      apiKey: 'svc_' + 'A'.repeat(43),
      env: { SVC_API_KEY: api.adminKey, SVC_URL: api.baseUrl },
    });
    await rejectsWith(overridden.listUsers(), 'UNAUTHORIZED', 401);
    const keyless = new SvcClient({ env: { SVC_URL: api.baseUrl } });
    assert.equal(keyless.hasApiKey, false);
    assert.deepEqual(await keyless.getHealth(), { status: 'ok' }, 'public operations need no key');
    assert.ok(
      !JSON.stringify(fromEnv).includes(api.adminKey) && !String(Object.values(fromEnv)).includes(api.adminKey),
      'the key is not a visible property of the client',
    );
  });

  it('refuses bad options with a clear error instead of failing later', () => {
    const invalid = (options: ConstructorParameters<typeof SvcClient>[0], pattern: RegExp) =>
      assert.throws(
        () => new SvcClient(options),
        (error: unknown) =>
          error instanceof SvcError && error.code === 'INVALID_OPTIONS' && pattern.test(error.message),
      );
    invalid({ env: {} }, /SVC_URL/);
    invalid({ baseUrl: 'localhost:8080', env: {} }, /http or https|not a URL/);
    invalid({ baseUrl: 'ftp://example.com', env: {} }, /http or https/);
    invalid({ baseUrl: 'http://example.com/?x=1', env: {} }, /query/);
    invalid({ baseUrl: api.baseUrl, apiKey: 'svc_abc\r\nx-evil: 1', env: {} }, /header/);
    invalid({ baseUrl: api.baseUrl, requestTimeoutMs: 0, env: {} }, /requestTimeoutMs/);
    assert.throws(
      () => new SvcClient({ baseUrl: api.baseUrl, apiKey: 'svc_secret value', env: {} }),
      (error: unknown) => error instanceof Error && !error.message.includes('secret value'),
      'the key is not echoed',
    );
  });

  it('creates a key, and the new key works in its own client', async () => {
    const user = await admin.createUser({ body: { name: 'dev' } });
    const issued = await admin.createKey({ body: { name: 'sdk-developer', role: 'developer', user_id: user.id } });
    assert.match(issued.key, /^svc_[A-Za-z0-9_-]{43}$/);
    assert.equal(issued.record.role, 'developer');
    assert.equal(issued.record.user_id, user.id);
    assert.equal(issued.record.key_prefix, issued.key.slice(0, 12));
    const developer = new SvcClient({ baseUrl: api.baseUrl, apiKey: issued.key, env: {} });
    assert.deepEqual(
      (await developer.listKeys()).items.map((key) => key.id),
      [issued.record.id],
      "a developer sees only its user's keys",
    );
    await rejectsWith(
      developer.createProject({ body: { name: 'p', workspace: '/tmp', command: ['true'] } }),
      'FORBIDDEN',
      403,
    );
  });

  it('lists projects, page by page with the cursor', async () => {
    const names = ['alpha', 'beta', 'gamma'];
    for (const name of names) {
      const project = await admin.createProject({
        body: { name, workspace: `/tmp/${name}`, command: ['./agent', '--x'] },
      });
      assert.equal(project.network, false, 'network defaults to off');
    }
    const listed = await admin.listProjects();
    assert.deepEqual(
      listed.items.map((project) => project.name),
      names,
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < names.length + 1; page += 1) {
      const result = await admin.listProjects({ query: { limit: 1, ...(cursor ? { cursor } : {}) } });
      seen.push(...result.items.map((project) => project.name));
      if (result.next_cursor === null) break;
      cursor = result.next_cursor;
    }
    assert.deepEqual(seen, names);
    const one = await admin.getProject({ path: { id: listed.items[1]!.id } });
    assert.deepEqual(one, listed.items[1]);
    await rejectsWith(admin.getProject({ path: { id: 'prj_000000000aaaaaaaaaaaaaaaa' } }), 'NOT_FOUND', 404);
    const invalid = await rejectsWith(admin.listProjects({ query: { limit: 0 } }), 'VALIDATION_FAILED', 400);
    assert.ok(Array.isArray(invalid.details), 'validation details come through');
  });

  it('lists credentials masked, filters by category, and reports a bad category as INVALID_CATEGORY', async () => {
    const secrets: Record<string, string> = {
      gitea: 'gitea-token-0123456789',
      cloudflare: 'cf-api-token-abcdefghij',
      woodpecker: 'short',
    };
    for (const [category, value] of Object.entries(secrets)) {
      const created = await admin.createCredential({ body: { category, name: `${category}-main`, value } });
      assert.ok(!created.masked_value.includes(value));
    }
    const all = await admin.listCredentials();
    assert.deepEqual(all.items.map((item) => item.category).sort(), ['cloudflare', 'gitea', 'woodpecker']);
    for (const item of all.items) {
      const secret = secrets[item.category]!;
      assert.ok(!JSON.stringify(item).includes(secret), `${item.category} is never shown in full`);
      assert.match(item.masked_value, secret.length >= 12 ? /^..••••••..$/ : /^••••$/);
    }
    assert.equal(all.items.find((item) => item.category === 'gitea')!.masked_value, 'gi••••••89');
    const gitea = await admin.listCredentials({ query: { category: 'gitea' } });
    assert.deepEqual(
      gitea.items.map((item) => item.name),
      ['gitea-main'],
    );
    await rejectsWith(admin.listCredentials({ query: { category: 'aws' } }), 'INVALID_CATEGORY', 422);
    await rejectsWith(
      admin.createCredential({ body: { category: 'gitea', name: 'gitea-main', value: 'again-and-again' } }),
      'CONFLICT',
      409,
    );
  });

  it('surfaces the four authentication failures as SvcApiError with their code', async () => {
    const client = (apiKey?: string) => new SvcClient({ baseUrl: api.baseUrl, apiKey, env: {} });
    const seen = new Set<string>();
    const expectAuth = async (call: Promise<unknown>, code: string, status: number) => {
      const error = await rejectsWith(call, code, status);
      assert.ok(isAuthError(error));
      seen.add(error.code);
    };

    await expectAuth(client().listProjects(), 'UNAUTHORIZED', 401);
    await expectAuth(client('svc_' + 'B'.repeat(43)).listProjects(), 'UNAUTHORIZED', 401);

    const revoked = await admin.createKey({ body: { name: 'to-revoke' } });
    assert.equal((await client(revoked.key).listProjects()).items.length >= 0, true, 'works before revocation');
    const record = await admin.revokeKey({ path: { id: revoked.record.id } });
    assert.ok(record.revoked_at !== null);
    await expectAuth(client(revoked.key).listProjects(), 'KEY_REVOKED', 401);

    const expiresInMs = 1500;
    const expiring = await admin.createKey({
      body: { name: 'expiring', expires_at: new Date(Date.now() + expiresInMs).toISOString() },
    });
    const expiringClient = client(expiring.key);
    await expiringClient.listProjects();
    const codeOf = (call: Promise<unknown>) =>
      call.then(
        () => 'ok',
        (error: unknown) => (error as SvcApiError).code,
      );
    await waitFor(
      () => codeOf(expiringClient.listProjects()),
      (code) => code === 'KEY_EXPIRED',
      expiresInMs + 5_000,
      100,
    );
    await expectAuth(expiringClient.listProjects(), 'KEY_EXPIRED', 401);

    const fenced = await admin.createKey({ body: { name: 'fenced', allowed_ips: ['10.0.0.0/8'] } });
    await expectAuth(client(fenced.key).listProjects(), 'IP_NOT_ALLOWED', 403);

    assert.deepEqual([...seen].sort(), [...authErrorCodes].sort());
    assert.equal(
      isAuthError(new SvcApiError({ status: 403, code: 'FORBIDDEN', message: 'no', requestId: null })),
      false,
    );
  });

  it('throws SvcConnectionError when nothing answers, a call outlives its timeout, or its signal fires', async () => {
    const port = await freePort();
    const nobody = new SvcClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: api.adminKey, env: {} });
    await assert.rejects(
      nobody.listProjects(),
      (error: unknown) => error instanceof SvcConnectionError && error.code === 'CONNECTION_FAILED',
    );

    const silent = net.createServer(() => undefined).listen(0, '127.0.0.1');
    await new Promise((resolve) => silent.once('listening', resolve));
    try {
      const address = silent.address() as AddressInfo;
      const slow = new SvcClient({ baseUrl: `http://127.0.0.1:${address.port}`, requestTimeoutMs: 200, env: {} });
      const started = Date.now();
      await assert.rejects(
        slow.getHealth(),
        (error: unknown) => error instanceof SvcConnectionError && error.code === 'TIMEOUT',
      );
      assert.ok(Date.now() - started < 5_000);
      const patient = new SvcClient({ baseUrl: `http://127.0.0.1:${address.port}`, env: {} });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      await assert.rejects(
        patient.getHealth({ signal: controller.signal }),
        (error: unknown) => error instanceof SvcConnectionError && error.code === 'ABORTED',
        'a per-call signal is kept',
      );
    } finally {
      silent.close();
    }
  });
});
