// What a networked run is denied beyond the standing denials (api/runs/egress-deny.ts): configured entries, the
// cluster's members (read again at every resolution) and the Redis host; names resolved, a failed lookup never
// opening what a name stood for.
import assert from 'node:assert/strict';
import {
  EgressDenyUnresolved,
  addressEndpoints,
  addressHosts,
  dnsResolver,
  egressDenyList,
  parseDenyEntry,
} from '../../api/runs/egress-deny.js';

const notFound = (name: string) => Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });

describe('api: the egress deny list (egress-deny.ts)', () => {
  it('reads addresses, CIDRs and names, each with an optional port; refuses anything else', () => {
    assert.deepEqual(parseDenyEntry('10.1.2.3'), { cidr: '10.1.2.3/32' });
    assert.deepEqual(parseDenyEntry(' 10.1.0.0/16:6379 '), { cidr: '10.1.0.0/16', port: 6379 });
    assert.deepEqual(parseDenyEntry('Redis.Internal:6379'), { name: 'redis.internal', port: 6379 });
    assert.deepEqual(parseDenyEntry('svc-1.svc-headless.default.svc.cluster.local'), {
      name: 'svc-1.svc-headless.default.svc.cluster.local',
    });
    for (const bad of ['', 'http://x', 'a b', '10.1.2.3/40', 'host:0', 'host:70000', '-bad.example', '10.0.0.1:x'])
      assert.throws(() => parseDenyEntry(bad), Error, bad);
  });

  it("takes the hosts of members' gRPC addresses, URLs and seeds once each: names and literals of both families", () => {
    assert.deepEqual(
      addressHosts([
        '10.1.2.3:7000',
        'http://10.1.2.3:8080',
        'https://10.1.2.4:8443/',
        'node-3.internal:7000',
        'https://NODE-3.internal:8443',
        '[::1]:7000',
        'http://[fd00::2]:8080',
        'localhost',
        '',
      ]),
      ['10.1.2.3', '10.1.2.4', 'node-3.internal', '::1', 'fd00::2', 'localhost'],
    );
  });

  it("takes members' endpoints with their ports (a URL's default port when it names none)", () => {
    assert.deepEqual(
      addressEndpoints([
        'svc-0.svc:7000',
        'http://svc-0.svc',
        'https://10.1.2.3/',
        'redis://:pw@redis.svc/0',
        '[::1]:7000',
        'bare',
      ]),
      [
        { host: 'svc-0.svc', port: 7000 },
        { host: 'svc-0.svc', port: 80 },
        { host: '10.1.2.3', port: 443 },
        { host: 'redis.svc', port: 6379 },
        { host: '::1', port: 7000 },
        { host: 'bare' },
      ],
    );
  });

  it('resolves names when asked, reading the members again each time; only IPv4 addresses become rules', async () => {
    const members = ['svc-0.svc:7000', 'http://10.9.0.1:8080', '[fd00::9]:7000'];
    const asked: string[] = [];
    const addresses: Record<string, string[]> = {
      'svc-0.svc': ['10.9.0.10', 'fd00::10'],
      'svc-1.svc': ['10.9.0.11'],
      'redis.svc': ['10.9.0.20'],
      'gitea.svc': ['10.9.0.30', '10.9.0.31'],
    };
    const list = egressDenyList({
      configured: ['192.0.2.0/24', 'gitea.svc:22'],
      clusterAddresses: () => members,
      redisUrl: 'redis://:secret@redis.svc:6379/0',
      resolve: async (name) => {
        asked.push(name);
        if (!addresses[name]) throw notFound(name);
        return addresses[name]!;
      },
    });
    const first = await list.resolve();
    const texts = (rules: Array<{ cidr: string; port?: number }>) =>
      rules.map((rule) => (rule.port ? `${rule.cidr}:${rule.port}` : rule.cidr));
    assert.deepEqual(texts(first.rules), [
      '192.0.2.0/24',
      '10.9.0.1/32',
      '10.9.0.30/32:22',
      '10.9.0.31/32:22',
      '10.9.0.10/32',
      '10.9.0.20/32',
    ]);
    // The members' advertised ports and the Redis port: no allow entry opens them.
    assert.deepEqual(texts(first.services), ['10.9.0.1/32:8080', '10.9.0.10/32:7000', '10.9.0.20/32:6379']);
    assert.deepEqual(first.names, [
      { name: 'gitea.svc', addresses: ['10.9.0.30', '10.9.0.31'] },
      { name: 'svc-0.svc', addresses: ['10.9.0.10', 'fd00::10'] },
      { name: 'redis.svc', addresses: ['10.9.0.20'] },
    ]);
    assert.deepEqual(asked.sort(), ['gitea.svc', 'redis.svc', 'svc-0.svc']);

    // A member joins (by name), and svc-0 moves: the next resolution has both as they are now.
    members.push('svc-1.svc:7000');
    addresses['svc-0.svc'] = ['10.9.0.12'];
    const second = await list.resolve();
    assert.ok(second.rules.some((rule) => rule.cidr === '10.9.0.11/32'));
    assert.ok(second.rules.some((rule) => rule.cidr === '10.9.0.12/32'));
    assert.ok(!second.rules.some((rule) => rule.cidr === '10.9.0.10/32'));
  });

  it('keeps the last addresses of a name that stops resolving; refuses while a name never resolved', async () => {
    let failing = new Set<string>(['late.svc']);
    const members = ['svc-0.svc:7000'];
    const list = egressDenyList({
      clusterAddresses: () => members,
      resolve: async (name) => {
        if (failing.has(name)) throw notFound(name);
        return name === 'svc-0.svc' ? ['10.9.0.10'] : ['10.9.0.99'];
      },
    });
    assert.deepEqual((await list.resolve()).rules, [{ cidr: '10.9.0.10/32' }]);
    failing = new Set(['svc-0.svc', 'late.svc']);
    const kept = await list.resolve();
    assert.deepEqual(kept.rules, [{ cidr: '10.9.0.10/32' }]);
    assert.deepEqual(kept.services, [{ cidr: '10.9.0.10/32', port: 7000 }]);
    assert.deepEqual(kept.names, [{ name: 'svc-0.svc', addresses: ['10.9.0.10'], stale: true }]);

    members.push('late.svc:7000');
    const refused = await list.resolve().then(
      () => assert.fail('a name never resolved must refuse'),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof EgressDenyUnresolved);
    assert.equal(refused.code, 'EGRESS_DENY_UNRESOLVED');
    assert.deepEqual(refused.failures, [{ name: 'late.svc', reason: 'ENOTFOUND' }]);
    failing = new Set();
    assert.deepEqual((await list.resolve()).rules, [{ cidr: '10.9.0.10/32' }, { cidr: '10.9.0.99/32' }]);
  });

  it('a lookup that does not answer in time counts as failed (never as nothing to deny)', async () => {
    const list = egressDenyList({
      configured: ['slow.svc'],
      resolve: () => new Promise(() => undefined),
      timeoutMs: 50,
    });
    await assert.rejects(list.resolve(), /slow\.svc \(no answer within 50 ms\)/);
  });

  it('resolves through the host resolver by default (localhost)', async () => {
    const found = await dnsResolver('localhost');
    assert.ok(found.includes('127.0.0.1'), JSON.stringify(found));
    const list = egressDenyList({ clusterAddresses: () => ['localhost:7001'] });
    const resolved = await list.resolve();
    assert.ok(resolved.rules.some((rule) => rule.cidr === '127.0.0.1/32'));
    assert.equal(resolved.names[0]?.name, 'localhost');
  });

  it('refuses a malformed configured entry when the list is made', () => {
    assert.throws(() => egressDenyList({ configured: ['not a host'] }), /not an address/);
  });
});
