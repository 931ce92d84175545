import assert from 'node:assert/strict';
import { createApiKey, hashApiKey } from '../../api/auth/api-keys.js';
import { addressInRanges, normalizeRange } from '../../api/auth/ip-allowlist.js';
import { startTestApi } from './harness.js';
import type { TestApi } from './harness.js';

async function issueKey(
  api: TestApi,
  body: Record<string, unknown>,
  key?: string,
): Promise<{ key: string; id: string }> {
  const result = await api.call('POST', '/keys', { body, key });
  assert.equal(result.status, 201, result.text);
  return { key: result.json.key, id: result.json.record.id };
}

describe('api: API keys and authentication', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api.close();
  });

  it('answers 401 UNAUTHORIZED for a missing key and for an unknown or malformed one', async () => {
    for (const key of [null, '', 'svc_' + 'A'.repeat(43), 'not-a-key', 'svc_' + 'x'.repeat(400)]) {
      const result = await api.call('GET', '/projects', { key });
      assert.equal(result.status, 401, String(key));
      assert.equal(result.json.code, 'UNAUTHORIZED');
    }
  });

  it('answers 401 KEY_REVOKED once a key is revoked, recording who revoked it', async () => {
    const issued = await issueKey(api, { name: 'soon-revoked' });
    assert.equal((await api.call('GET', '/projects', { key: issued.key })).status, 200);
    const revoked = await api.call('POST', `/keys/${issued.id}/revoke`);
    assert.equal(revoked.status, 200);
    assert.equal(revoked.json.revoked_by, api.adminKeyId);
    assert.ok(Date.parse(revoked.json.revoked_at) <= Date.now());
    const result = await api.call('GET', '/projects', { key: issued.key });
    assert.equal(result.status, 401);
    assert.equal(result.json.code, 'KEY_REVOKED');
  });

  it('answers 401 KEY_EXPIRED for a key past expires_at', async () => {
    const { secret } = await createApiKey(api.store, {
      name: 'expired',
      userId: api.adminUserId,
      role: 'developer',
      expiresAt: new Date(Date.now() - 1000).toISOString(),
      allowedIps: null,
    });
    const result = await api.call('GET', '/projects', { key: secret });
    assert.equal(result.status, 401);
    assert.equal(result.json.code, 'KEY_EXPIRED');
    const expiredId = (await api.call('GET', '/keys?limit=200')).json.items.find(
      (item: { name: string }) => item.name === 'expired',
    ).id as string;
    assert.equal((await api.call('POST', `/keys/${expiredId}/rotate`)).json.code, 'CONFLICT', 'no dead replacement');
    const future = await issueKey(api, { name: 'not yet', expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    assert.equal((await api.call('GET', '/projects', { key: future.key })).status, 200);
    const past = await api.call('POST', '/keys', { body: { name: 'x', expires_at: '2000-01-01T00:00:00Z' } });
    assert.equal(past.json.code, 'VALIDATION_FAILED');
  });

  it('answers 403 IP_NOT_ALLOWED when the client address is outside the allowlist', async () => {
    const outside = await issueKey(api, { name: 'ten-net', allowed_ips: ['10.0.0.0/8', '2001:db8::/32'] });
    const result = await api.call('GET', '/projects', { key: outside.key });
    assert.equal(result.status, 403);
    assert.equal(result.json.code, 'IP_NOT_ALLOWED');
    // The test client is 127.0.0.1; the IPv4-mapped form of a rule must match it too.
    const mapped = await issueKey(api, { name: 'mapped', allowed_ips: ['::ffff:127.0.0.1'] });
    assert.equal((await api.call('GET', '/projects', { key: mapped.key })).status, 200);
    const cidr = await issueKey(api, { name: 'loopback', allowed_ips: ['127.0.0.0/8'] });
    assert.equal((await api.call('GET', '/projects', { key: cidr.key })).status, 200);
  });

  it('documents the four authentication codes with their statuses', async () => {
    const description = (await api.call('GET', '/openapi.json')).json.info.description as string;
    for (const row of [
      '`UNAUTHORIZED` | 401',
      '`KEY_REVOKED` | 401',
      '`KEY_EXPIRED` | 401',
      '`IP_NOT_ALLOWED` | 403',
    ]) {
      assert.ok(description.includes(row), row);
    }
  });

  it('rejects allowlist entries that are not addresses or CIDRs', async () => {
    for (const allowed_ips of [['10.0.0.0/33'], ['banana'], [], ['1.2.3.4/8/1']]) {
      const result = await api.call('POST', '/keys', { body: { name: 'bad', allowed_ips } });
      assert.equal(result.status, 400, JSON.stringify(allowed_ips));
      assert.equal(result.json.code, 'VALIDATION_FAILED');
    }
  });

  it('stores only a hash and a prefix; the full key appears once, in the creation response', async () => {
    const created = await api.call('POST', '/keys', { body: { name: 'hashed' } });
    const key = created.json.key as string;
    assert.match(key, /^svc_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.json.record.key_prefix, key.slice(0, 12));
    const everything = JSON.stringify((await api.store.list('')).entries);
    assert.ok(!everything.includes(key), 'the full key is not in the store');
    assert.ok(everything.includes(hashApiKey(key).toString('hex')));
    const listed = await api.call('GET', '/keys');
    assert.ok(!listed.text.includes(key) && !listed.text.includes('key_hash'));
  });

  it('rotates a key: the replacement works with the same settings and the old one is revoked', async () => {
    const original = await issueKey(api, { name: 'rotating', allowed_ips: ['127.0.0.1'] });
    const rotated = await api.call('POST', `/keys/${original.id}/rotate`, { key: original.key });
    assert.equal(rotated.status, 201, rotated.text);
    assert.deepEqual(rotated.json.record.allowed_ips, ['127.0.0.1']);
    assert.equal((await api.call('GET', '/projects', { key: original.key })).json.code, 'KEY_REVOKED');
    assert.equal((await api.call('GET', '/projects', { key: rotated.json.key })).status, 200);
    const again = await api.call('POST', `/keys/${original.id}/rotate`);
    assert.equal(again.status, 409);
  });

  it("keeps admin-only operations from developer keys (403 FORBIDDEN) and hides other users' keys", async () => {
    const user = await api.call('POST', '/users', { body: { name: 'dev-user' } });
    assert.equal(user.status, 201);
    const developer = await issueKey(api, { name: 'dev', user_id: user.json.id, role: 'developer' });
    const forbidden: Array<[string, string, unknown]> = [
      ['POST', '/projects', { name: 'p', workspace: '/tmp/p', command: ['true'] }],
      ['POST', '/credentials', { category: 'gitea', name: 'n', value: 'v' }],
      ['POST', '/users', { name: 'x' }],
      ['GET', '/users', undefined],
      ['POST', '/keys', { name: 'other', user_id: api.adminUserId }],
    ];
    for (const [method, path, body] of forbidden) {
      const result = await api.call(method, path, { key: developer.key, body });
      assert.equal(result.status, 403, `${method} ${path}`);
      assert.equal(result.json.code, 'FORBIDDEN');
    }
    const escalate = await api.call('POST', '/keys', { key: developer.key, body: { name: 'escalate', role: 'admin' } });
    assert.equal(escalate.status, 403);
    assert.equal(escalate.json.code, 'KEY_SCOPE_EXCEEDED');
    assert.equal((await api.call('GET', '/projects', { key: developer.key })).status, 200);
    assert.equal((await api.call('GET', `/keys/${api.adminKeyId}`, { key: developer.key })).status, 404);
    assert.equal((await api.call('POST', `/keys/${api.adminKeyId}/revoke`, { key: developer.key })).status, 404);
    const own = await api.call('GET', '/keys', { key: developer.key });
    assert.deepEqual(
      own.json.items.map((item: { id: string }) => item.id),
      [developer.id],
    );
    const selfIssued = await issueKey(api, { name: 'my second key' }, developer.key);
    assert.equal((await api.call('GET', `/keys/${selfIssued.id}`, { key: developer.key })).json.user_id, user.json.id);
  });

  it('never logs keys or secret values, even with the access log on', async () => {
    const logged = await startTestApi({ config: { accessLog: true } });
    try {
      const issued = await issueKey(logged, { name: 'logged?' });
      await logged.call('POST', '/credentials', {
        body: { category: 'gitea', name: 'log-check', value: 'do-not-log-me-123' },
      });
      await logged.call('POST', '/keys', { key: issued.key, rawBody: `{"name": "${issued.key}"` });
      await logged.call('GET', `/credentials?cursor=${issued.key}`);
      await logged.call('GET', '/projects', { key: issued.key.slice(0, -1) });
      assert.ok(logged.logs.filter((line) => line.event === 'request').length >= 5, 'the access log is on');
      const text = JSON.stringify(logged.logs);
      assert.ok(!text.includes(issued.key) && !text.includes(issued.key.slice(0, -1)));
      assert.ok(!text.includes('do-not-log-me-123'));
    } finally {
      await logged.close();
    }
  });
});

describe('api: client address behind trusted proxies', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi({ config: { trustedProxies: ['127.0.0.1/32', '::1'] } });
  });
  after(async () => {
    await api.close();
  });

  it('honours X-Forwarded-For from a trusted peer, for IPv4, IPv6 and IPv4-mapped addresses', async () => {
    const key = (await issueKey(api, { name: 'fwd', allowed_ips: ['10.0.0.0/8', '2001:db8::/32', '198.51.100.7'] }))
      .key;
    const expectations: Array<[string, number]> = [
      ['10.1.2.3', 200],
      ['::ffff:10.1.2.3', 200],
      ['2001:db8::5', 200],
      ['198.51.100.7', 200],
      ['192.168.1.1', 403],
      ['2001:db9::1', 403],
      ['::ffff:192.168.1.1', 403],
      // The right-most untrusted hop is the client: a client cannot spoof by prepending.
      ['10.9.9.9, 192.168.1.1', 403],
      ['192.168.1.1, 10.9.9.9', 200],
      ['10.1.1.1, 127.0.0.1', 200],
      ['garbage', 403],
    ];
    for (const [forwarded, status] of expectations) {
      const result = await api.call('GET', '/projects', { key, headers: { 'x-forwarded-for': forwarded } });
      assert.equal(result.status, status, forwarded);
      if (status === 403) assert.equal(result.json.code, 'IP_NOT_ALLOWED');
    }
  });

  it('ignores X-Forwarded-For from an untrusted peer', async () => {
    const untrusted = await startTestApi({ config: { trustedProxies: ['10.255.0.1'] } });
    try {
      const key = (await issueKey(untrusted, { name: 'no-trust', allowed_ips: ['10.0.0.0/8'] })).key;
      const result = await untrusted.call('GET', '/projects', { key, headers: { 'x-forwarded-for': '10.1.2.3' } });
      assert.equal(result.json.code, 'IP_NOT_ALLOWED');
    } finally {
      await untrusted.close();
    }
  });
});

describe('api: IP allowlist rules', () => {
  it('matches single addresses and CIDRs across IPv4, IPv6 and IPv4-mapped IPv6', () => {
    assert.equal(addressInRanges('10.1.2.3', ['10.0.0.0/8']), true);
    assert.equal(addressInRanges('::ffff:10.1.2.3', ['10.0.0.0/8']), true);
    assert.equal(addressInRanges('10.1.2.3', ['::ffff:10.0.0.0/104']), true);
    assert.equal(addressInRanges('11.1.2.3', ['::ffff:10.0.0.0/104']), false);
    assert.equal(addressInRanges('2001:db8::1', ['2001:db8::/32']), true);
    assert.equal(addressInRanges('2001:db8::1', ['10.0.0.0/8']), false);
    assert.equal(addressInRanges('1.2.3.4', ['1.2.3.4']), true);
    assert.equal(addressInRanges('1.2.3.5', ['1.2.3.4']), false);
    assert.equal(addressInRanges('not-an-ip', ['0.0.0.0/0']), false);
    assert.equal(normalizeRange('::ffff:1.2.3.4'), '1.2.3.4');
    assert.equal(normalizeRange('2001:0db8:0000::/32'), '2001:db8::/32');
    assert.equal(normalizeRange('1.2.3.4/33'), null);
  });
});
