// A key creates, rotates and revokes only keys within its own scope (role, expiry, allowlist): issue 13's
// "a key with a short expiry and an IP allowlist created a key with no expiry and no allowlist".
import assert from 'node:assert/strict';
import { scopeExcess } from '../../api/auth/key-scope.js';
import { rulesOutside } from '../../api/auth/ip-allowlist.js';
import { startTestApi } from './harness.js';
import type { TestApi } from './harness.js';

const inMinutes = (minutes: number): string => new Date(Date.now() + minutes * 60_000).toISOString();

describe('api: a key creates only keys no broader than itself', () => {
  let api: TestApi;
  let userId: string;
  before(async () => {
    api = await startTestApi();
    userId = (await api.call('POST', '/users', { body: { name: 'scoped-user' } })).json.id;
  });
  after(async () => {
    await api.close();
  });

  /** restricted: a developer key for userId that expires in 10 minutes and works only from loopback. */
  async function restrictedKey(
    role: 'developer' | 'admin' = 'developer',
  ): Promise<{ key: string; id: string; expiresAt: string }> {
    const expiresAt = inMinutes(10);
    const result = await api.call('POST', '/keys', {
      body: { name: 'restricted', user_id: userId, role, expires_at: expiresAt, allowed_ips: ['127.0.0.0/24'] },
    });
    assert.equal(result.status, 201, result.text);
    return { key: result.json.key, id: result.json.record.id, expiresAt: result.json.record.expires_at };
  }

  it('refuses a key with no expiry, a later expiry, no allowlist, a wider allowlist or a higher role (403 KEY_SCOPE_EXCEEDED)', async () => {
    const restricted = await restrictedKey();
    const broader: Array<[Record<string, unknown>, string]> = [
      [{ expires_at: null, allowed_ips: ['127.0.0.1'] }, '/body/expires_at'],
      [{ expires_at: inMinutes(60), allowed_ips: ['127.0.0.1'] }, '/body/expires_at'],
      [{ expires_at: inMinutes(5), allowed_ips: null }, '/body/allowed_ips'],
      [{ expires_at: inMinutes(5), allowed_ips: ['127.0.0.0/8'] }, '/body/allowed_ips'],
      [{ expires_at: inMinutes(5), allowed_ips: ['127.0.0.1', '10.0.0.1'] }, '/body/allowed_ips'],
      [{ expires_at: inMinutes(5), allowed_ips: ['::1'] }, '/body/allowed_ips'],
      [{ expires_at: inMinutes(5), allowed_ips: ['127.0.0.1'], role: 'admin' }, '/body/role'],
    ];
    for (const [fields, path] of broader) {
      const result = await api.call('POST', '/keys', { key: restricted.key, body: { name: 'broader', ...fields } });
      assert.equal(result.status, 403, JSON.stringify(fields));
      assert.equal(result.json.code, 'KEY_SCOPE_EXCEEDED', JSON.stringify(fields));
      assert.deepEqual(
        result.json.details.map((item: { path: string }) => item.path),
        [path],
        JSON.stringify(fields),
      );
    }
    const all = await api.call('POST', '/keys', {
      key: restricted.key,
      body: { name: 'everything', role: 'admin', expires_at: null, allowed_ips: null },
    });
    assert.equal(all.json.code, 'KEY_SCOPE_EXCEEDED');
    assert.equal(all.json.details.length, 3, 'each field that reaches too far is named');
    const mine = (await api.call('GET', '/keys', { key: restricted.key })).json.items as Array<{ name: string }>;
    assert.deepEqual(
      mine.map((item) => item.name),
      ['restricted'],
      'no refused key was stored',
    );
  });

  it("allows a key within its scope, and an omitted expiry or allowlist takes the creator's own", async () => {
    const restricted = await restrictedKey();
    const narrower = await api.call('POST', '/keys', {
      key: restricted.key,
      body: { name: 'narrower', expires_at: inMinutes(5), allowed_ips: ['127.0.0.1'] },
    });
    assert.equal(narrower.status, 201, narrower.text);
    assert.equal((await api.call('GET', '/projects', { key: narrower.json.key })).status, 200);
    const equal = await api.call('POST', '/keys', {
      key: restricted.key,
      body: { name: 'equal', expires_at: restricted.expiresAt, allowed_ips: ['127.0.0.0/25', '127.0.0.128/25'] },
    });
    assert.equal(equal.status, 201, equal.text);
    const inherited = await api.call('POST', '/keys', { key: restricted.key, body: { name: 'inherited' } });
    assert.equal(inherited.status, 201, inherited.text);
    assert.equal(inherited.json.record.expires_at, restricted.expiresAt);
    assert.deepEqual(inherited.json.record.allowed_ips, ['127.0.0.0/24']);
    assert.equal(inherited.json.record.role, 'developer');
  });

  it('bounds an admin key too: a restricted admin key cannot mint an unrestricted key for anyone', async () => {
    const restrictedAdmin = await restrictedKey('admin');
    for (const body of [
      { name: 'forever', user_id: api.adminUserId, expires_at: null },
      { name: 'anywhere', user_id: userId, allowed_ips: null },
    ]) {
      const result = await api.call('POST', '/keys', { key: restrictedAdmin.key, body });
      assert.equal(result.status, 403, JSON.stringify(body));
      assert.equal(result.json.code, 'KEY_SCOPE_EXCEEDED');
    }
    const within = await api.call('POST', '/keys', {
      key: restrictedAdmin.key,
      body: { name: 'ok', role: 'admin', user_id: userId },
    });
    assert.equal(within.status, 201, within.text);
  });

  it("a narrow key cannot rotate or revoke its user's broader keys, but may rotate and revoke itself", async () => {
    const broad = await api.call('POST', '/keys', { body: { name: 'broad', user_id: userId, role: 'admin' } });
    assert.equal(broad.status, 201);
    const restricted = await restrictedKey();
    // Rotating the user's admin key would hand the narrow key's holder a fresh admin secret.
    const rotate = await api.call('POST', `/keys/${broad.json.record.id}/rotate`, { key: restricted.key });
    assert.equal(rotate.status, 403, rotate.text);
    assert.equal(rotate.json.code, 'KEY_SCOPE_EXCEEDED');
    const revoke = await api.call('POST', `/keys/${broad.json.record.id}/revoke`, { key: restricted.key });
    assert.equal(revoke.json.code, 'KEY_SCOPE_EXCEEDED');
    assert.equal(
      (await api.call('GET', '/projects', { key: broad.json.key })).status,
      200,
      'the broad key still works',
    );

    const self = await api.call('POST', `/keys/${restricted.id}/rotate`, { key: restricted.key });
    assert.equal(self.status, 201, self.text);
    assert.equal(self.json.record.expires_at, restricted.expiresAt);
    assert.deepEqual(self.json.record.allowed_ips, ['127.0.0.0/24']);
    const revokeSelf = await api.call('POST', `/keys/${self.json.record.id}/revoke`, { key: self.json.key });
    assert.equal(revokeSelf.status, 200, revokeSelf.text);
  });

  it('documents who may create, rotate and revoke keys in the OpenAPI document', async () => {
    const document = (await api.call('GET', '/openapi.json')).json;
    assert.ok((document.info.description as string).includes('`KEY_SCOPE_EXCEEDED` | 403'));
    for (const [path, operation] of [
      ['/keys', 'post'],
      ['/keys/{id}/revoke', 'post'],
      ['/keys/{id}/rotate', 'post'],
    ] as const) {
      const described = document.paths[path][operation];
      assert.match(described.description as string, /scope/, path);
      assert.match(described.responses[403].description as string, /KEY_SCOPE_EXCEEDED/, path);
    }
  });
});

describe('api: key scope rules', () => {
  it('holds an allowlist within another only when every address is covered, across the union of rules', () => {
    assert.deepEqual(rulesOutside(['10.1.0.0/16'], ['10.0.0.0/8']), []);
    assert.deepEqual(rulesOutside(['10.0.0.0/8'], ['10.1.0.0/16']), ['10.0.0.0/8']);
    assert.deepEqual(rulesOutside(['10.0.0.0/23'], ['10.0.0.0/24', '10.0.1.0/24']), []);
    assert.deepEqual(rulesOutside(['10.0.0.0/22'], ['10.0.0.0/24', '10.0.1.0/24', '10.0.3.0/24']), ['10.0.0.0/22']);
    assert.deepEqual(rulesOutside(['::ffff:10.2.3.4'], ['10.0.0.0/8']), []);
    assert.deepEqual(rulesOutside(['2001:db8::1'], ['10.0.0.0/8']), ['2001:db8::1']);
    assert.deepEqual(rulesOutside(['2001:db8:1::/48'], ['2001:db8::/32']), []);
    assert.deepEqual(rulesOutside(['0.0.0.0/0'], ['0.0.0.0/1', '128.0.0.0/1']), []);
  });

  it('orders roles and expiries', () => {
    const holder = { role: 'developer' as const, expiresAt: '2100-01-01T00:00:00.000Z', allowedIps: null };
    assert.deepEqual(scopeExcess(holder, { ...holder }), []);
    assert.deepEqual(scopeExcess(holder, { ...holder, expiresAt: '2099-01-01T00:00:00.000Z' }), []);
    assert.equal(scopeExcess(holder, { ...holder, expiresAt: '2100-01-01T00:00:00.001Z' }).length, 1);
    assert.equal(scopeExcess(holder, { ...holder, role: 'admin' }).length, 1);
    assert.deepEqual(
      scopeExcess(
        { role: 'admin', expiresAt: null, allowedIps: null },
        { role: 'admin', expiresAt: null, allowedIps: null },
      ),
      [],
    );
  });
});
