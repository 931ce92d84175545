import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadCredentials, parseSecretsFile } from '../../api/credentials-loader.js';
import { maskSecret } from '../../api/credentials/mask.js';
import { openSecret, sealSecret } from '../../api/credentials/secret-box.js';
import { parseSecretKey } from '../../api/config.js';
import { startTestApi, testSecretKey } from './harness.js';
import type { TestApi } from './harness.js';

describe('api: credentials', () => {
  let api: TestApi;
  beforeEach(async () => {
    api = await startTestApi();
  });
  afterEach(async () => {
    await api.close();
  });

  const create = (category: string, name: string, value: string) =>
    api.call('POST', '/credentials', { body: { category, name, value } });

  it('creates, lists masked, filters by category, updates and deletes', async () => {
    const gitea = await create('gitea', 'admin-token', 'ghp_abcdefghijklmnopqrstuvwxyz');
    assert.equal(gitea.status, 201, gitea.text);
    assert.equal(gitea.json.masked_value, 'gh••••••yz');
    assert.equal((await create('cloudflare', 'api-token', 'short')).json.masked_value, '••••');
    assert.equal((await create('woodpecker', 'agent-secret', 'wp-0123456789-secret')).status, 201);

    const all = await api.call('GET', '/credentials');
    assert.equal(all.json.items.length, 3);
    for (const secret of ['ghp_abcdefghijklmnopqrstuvwxyz', 'short', 'wp-0123456789-secret']) {
      assert.ok(!all.text.includes(secret), 'no value leaves the API unmasked');
    }
    const onlyGitea = await api.call('GET', '/credentials?category=gitea');
    assert.deepEqual(
      onlyGitea.json.items.map((item: { name: string }) => item.name),
      ['admin-token'],
    );
    assert.deepEqual(
      (await api.call('GET', '/credentials?category=cloudflare')).json.items.map(
        (item: { category: string }) => item.category,
      ),
      ['cloudflare'],
    );

    const updated = await api.call('PATCH', `/credentials/${gitea.json.id}`, {
      body: { value: 'new-value-0123456789' },
    });
    assert.equal(updated.status, 200);
    assert.equal(updated.json.masked_value, 'ne••••••89');
    assert.equal((await api.call('DELETE', `/credentials/${gitea.json.id}`)).status, 204);
    assert.equal((await api.call('DELETE', `/credentials/${gitea.json.id}`)).json.code, 'NOT_FOUND');
    assert.equal((await api.call('GET', '/credentials?category=gitea')).json.items.length, 0);
    assert.equal((await create('gitea', 'admin-token', 'recreated-after-delete')).status, 201);
  });

  it('answers 422 INVALID_CATEGORY for categories other than gitea, cloudflare, woodpecker', async () => {
    for (const category of ['aws', 'GITEA', 'gitea ', 'x']) {
      const result = await create(category, 'n', 'v');
      assert.equal(result.status, 422, category);
      assert.equal(result.json.code, 'INVALID_CATEGORY');
    }
    const filtered = await api.call('GET', '/credentials?category=aws');
    assert.equal(filtered.status, 422);
    assert.equal(filtered.json.code, 'INVALID_CATEGORY');
  });

  it('refuses a second credential with the same category and name (409 CONFLICT)', async () => {
    assert.equal((await create('gitea', 'dup', 'value-one')).status, 201);
    const again = await create('gitea', 'dup', 'value-two');
    assert.equal(again.status, 409);
    assert.equal(again.json.code, 'CONFLICT');
    assert.equal(
      (await create('cloudflare', 'dup', 'value-two')).status,
      201,
      'the same name in another category is fine',
    );
  });

  it('stores AES-256-GCM ciphertext that does not contain the plaintext', async () => {
    const plaintext = 'plain-secret-value-which-must-not-be-stored';
    const created = await create('gitea', 'sealed', plaintext);
    const everything = JSON.stringify((await api.store.list('')).entries);
    assert.ok(!everything.includes(plaintext));
    assert.ok(!everything.includes(Buffer.from(plaintext).toString('base64')));
    const record = (await api.store.get<{ ciphertext: string; category: string }>(`credentials/${created.json.id}`))!
      .value;
    assert.equal(openSecret(testSecretKey, record.ciphertext, `credential:${created.json.id}:gitea`), plaintext);
    assert.throws(
      () => openSecret(Buffer.alloc(32, 1), record.ciphertext, `credential:${created.json.id}:gitea`),
      'another key cannot open it',
    );
    assert.throws(
      () => openSecret(testSecretKey, record.ciphertext, 'credential:other:gitea'),
      'a ciphertext moved to another record does not open',
    );
    assert.notEqual(sealSecret(testSecretKey, 'x', 'a'), sealSecret(testSecretKey, 'x', 'a'), 'a fresh IV each time');
  });

  it('answers 503 CREDENTIALS_UNAVAILABLE when the server has no secret key', async () => {
    const keyless = await startTestApi({ config: { secretKey: undefined } });
    try {
      const result = await keyless.call('GET', '/credentials');
      assert.equal(result.status, 503);
      assert.equal(result.json.code, 'CREDENTIALS_UNAVAILABLE');
    } finally {
      await keyless.close();
    }
  });

  it('pages through many credentials with a cursor', async () => {
    for (let index = 0; index < 7; index++) await create('woodpecker', `n${index}`, `value-${index}`);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const result: { json: { items: Array<{ name: string }>; next_cursor: string | null } } = await api.call(
        'GET',
        `/credentials?category=woodpecker&limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      seen.push(...result.json.items.map((item) => item.name));
      cursor = result.json.next_cursor;
      if (cursor === null) break;
    }
    assert.deepEqual(seen, ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6']);
    assert.equal((await api.call('GET', '/credentials?cursor=bm9wZQ')).json.code, 'VALIDATION_FAILED');
  });

  it('loads an operator secrets file idempotently: a re-run updates and never duplicates', async () => {
    const yamlText = 'gitea:\n  admin-token: "token-aaaaaaaaaaaa"\ncloudflare:\n  dns: "cf-bbbbbbbbbbbbbb"\n';
    const first = await loadCredentials({
      baseUrl: api.baseUrl,
      apiKey: api.adminKey,
      entries: parseSecretsFile(yamlText),
    });
    assert.deepEqual(first, { created: ['gitea/admin-token', 'cloudflare/dns'], updated: [] });
    const changed = JSON.stringify({
      gitea: { 'admin-token': 'token-cccccccccccc' },
      cloudflare: { dns: 'cf-bbbbbbbbbbbbbb' },
    });
    const second = await loadCredentials({
      baseUrl: api.baseUrl,
      apiKey: api.adminKey,
      entries: parseSecretsFile(changed),
    });
    assert.deepEqual(second, { created: [], updated: ['gitea/admin-token', 'cloudflare/dns'] });
    const listed = await api.call('GET', '/credentials');
    assert.equal(listed.json.items.length, 2);
    assert.equal(
      listed.json.items.find((item: { name: string }) => item.name === 'admin-token').masked_value,
      'to••••••cc',
    );
  });

  it('refuses secrets files with unknown categories or non-string values before sending anything', () => {
    assert.throws(() => parseSecretsFile('aws:\n  key: "x"\n'), /unknown category "aws"/);
    assert.throws(() => parseSecretsFile('gitea:\n  key: [1, 2]\n'), /must be a string/);
    assert.throws(() => parseSecretsFile('- just\n- a list\n'), /category/);
    assert.throws(
      () => parseSecretsFile('gitea: {key: "sekrit-in-broken-yaml"'),
      (error: Error) => !error.message.includes('sekrit'),
    );
  });

  it('runs as a script with the key from the environment', async function () {
    this.timeout(30_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'svc-secrets-'));
    try {
      const file = path.join(dir, 'secrets.json');
      writeFileSync(file, JSON.stringify({ woodpecker: { 'agent-secret': 'wp-secret-0123456789' } }));
      const run = () =>
        promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/load-credentials.ts', file, api.baseUrl], {
          env: { ...process.env, SVC_API_KEY: api.adminKey },
        });
      const first = await run();
      assert.match(first.stdout, /created 1: woodpecker\/agent-secret/);
      const second = await run();
      assert.match(second.stdout, /updated 1: woodpecker\/agent-secret/);
      assert.ok(!first.stdout.includes('wp-secret-0123456789') && !second.stdout.includes('wp-secret-0123456789'));
      assert.equal((await api.call('GET', '/credentials')).json.items.length, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('api: masking and secret key parsing', () => {
  it('masks long values as ab••••••yz and short ones as ••••', () => {
    assert.equal(maskSecret('abcdefghijklmnopqrstuvwxyz'), 'ab••••••yz');
    assert.equal(maskSecret('abcdefghijk'), '••••');
    assert.equal(maskSecret(''), '••••');
    assert.equal(maskSecret('😀😀bbbbbbbbbb😎😎'), '😀😀••••••😎😎');
  });

  it('parses a 32-byte secret key from hex or base64 and refuses anything else without echoing it', () => {
    const bytes = Buffer.alloc(32, 7);
    assert.deepEqual(parseSecretKey(bytes.toString('hex')), bytes);
    assert.deepEqual(parseSecretKey(bytes.toString('base64') + '\n'), bytes);
    assert.deepEqual(parseSecretKey(bytes.toString('base64url')), bytes);
    assert.throws(
      () => parseSecretKey('too-short-secret'),
      (error: Error) => !error.message.includes('too-short'),
    );
  });
});
