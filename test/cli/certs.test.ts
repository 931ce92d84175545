import assert from 'node:assert/strict';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CertError,
  createAdminCert,
  createApiCert,
  createClusterCa,
  createNodeCert,
  newClusterId,
  nodeSubjectAltNames,
  readCertIdentity,
} from '../../cli/certs/certs.js';
import { runCertsCli } from '../../cli/certs/certs-command.js';
import { CLUSTER_ID, certIdentity, pemIdentity } from '../../transports/grpc/peer-identity.js';
import { makeTempDir, removeTempDir } from '../transports/storage/helpers.js';

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

describe('certs: cluster CA and node certificates', function () {
  this.timeout(30_000);
  let dir: string;
  let ca: X509Certificate;
  let otherCa: X509Certificate;
  let node: X509Certificate;
  let foreignNode: X509Certificate;

  before(async () => {
    dir = await makeTempDir('certs');
    await createClusterCa({ dir: join(dir, 'ca1'), commonName: 'svc test CA' });
    await createNodeCert({
      clusterId: 'c1',
      dir: join(dir, 'ca1'),
      name: 'node-0',
      peersService: 'svc-peers',
      namespace: 'prod',
      podNames: ['svc-0', 'svc-1'],
    });
    await createClusterCa({ dir: join(dir, 'ca2'), commonName: 'other CA' });
    await createNodeCert({
      clusterId: 'c1',
      dir: join(dir, 'ca2'),
      name: 'intruder',
      peersService: 'svc-peers',
      namespace: 'prod',
    });
    const load = async (path: string) => new X509Certificate(await readFile(join(dir, path)));
    [ca, otherCa, node, foreignNode] = await Promise.all([
      load('ca1/ca.crt'),
      load('ca2/ca.crt'),
      load('ca1/node-0.crt'),
      load('ca2/intruder.crt'),
    ]);
  });
  after(async () => {
    await removeTempDir(dir);
  });

  it('makes a CA that is a CA', () => {
    assert.equal(ca.ca, true);
    assert.match(ca.subject, /CN=svc test CA/);
    assert.equal(ca.verify(ca.publicKey), true, 'self-signed');
  });

  it('names its identity URI, the wildcard, each pod, localhost and 127.0.0.1', () => {
    assert.equal(
      node.subjectAltName,
      [
        'URI:spiffe://svc/c1/peer/node-0',
        'DNS:*.svc-peers.prod.svc.cluster.local',
        'DNS:svc-0.svc-peers.prod.svc.cluster.local',
        'DNS:svc-1.svc-peers.prod.svc.cluster.local',
        'DNS:localhost',
        'IP Address:127.0.0.1',
      ].join(', '),
    );
    assert.equal(
      node.checkHost('svc-7.svc-peers.prod.svc.cluster.local'),
      '*.svc-peers.prod.svc.cluster.local',
      'a pod added later matches the wildcard',
    );
    assert.equal(
      node.checkHost('a.b.svc-peers.prod.svc.cluster.local'),
      undefined,
      'the wildcard covers one label only',
    );
    assert.equal(node.checkHost('svc-0.svc-peers.staging.svc.cluster.local'), undefined);
    assert.equal(node.checkHost('localhost'), 'localhost');
    assert.equal(node.checkIP('127.0.0.1'), '127.0.0.1');
  });

  it('is issued by the CA for both server and client use, and is no CA itself', () => {
    assert.equal(node.issuer, ca.subject);
    assert.match(node.subject, /CN=node-0/);
    assert.equal(node.ca, false);
    assert.deepEqual([...(node.keyUsage ?? [])].sort(), [SERVER_AUTH, CLIENT_AUTH].sort());
    assert.equal(node.checkIssued(ca), true);
    assert.equal(node.verify(ca.publicKey), true);
  });

  it('does not verify against another CA', () => {
    assert.equal(node.verify(otherCa.publicKey), false);
    assert.equal(foreignNode.verify(ca.publicKey), false);
    assert.equal(foreignNode.checkIssued(ca), false);
  });

  it('writes keys 0600 that match their certificates', async () => {
    for (const [key, cert] of [
      ['ca1/ca.key', ca],
      ['ca1/node-0.key', node],
    ] as const) {
      assert.equal((await stat(join(dir, key))).mode & 0o777, 0o600, key);
      assert.equal(cert.checkPrivateKey(createPrivateKey(await readFile(join(dir, key)))), true, key);
    }
    assert.equal((await stat(join(dir, 'ca1/node-0.crt'))).mode & 0o777, 0o644);
  });

  it('refuses to overwrite unless told, and refuses names that are not DNS labels', async () => {
    await assert.rejects(
      createClusterCa({ dir: join(dir, 'ca1') }),
      (err: unknown) => err instanceof CertError && /exists/.test(err.message),
    );
    await assert.rejects(
      createNodeCert({
        clusterId: 'c1',
        dir: join(dir, 'ca1'),
        name: 'node-0',
        peersService: 'svc-peers',
        namespace: 'prod',
      }),
      /exists/,
    );
    for (const bad of ['a,DNS:evil.example', 'UPPER', '-x', '', 'a'.repeat(64), 'a.b']) {
      assert.throws(
        () => nodeSubjectAltNames({ peersService: bad, namespace: 'prod' }),
        CertError,
        JSON.stringify(bad),
      );
      await assert.rejects(
        createNodeCert({
          clusterId: 'c1',
          dir: join(dir, 'ca1'),
          name: 'n',
          peersService: 'p',
          namespace: 'x',
          podNames: [bad],
        }),
        CertError,
        JSON.stringify(bad),
      );
    }
    await assert.rejects(
      createNodeCert({
        clusterId: 'c1',
        dir: join(dir, 'ca1'),
        name: 'n',
        peersService: 'p',
        namespace: 'x',
        validDays: 0,
      }),
      /validity/,
    );
  });

  it('refuses a CA whose key does not match its certificate', async () => {
    const mixed = await makeTempDir('certs-mixed');
    try {
      await writeFile(join(mixed, 'ca.crt'), await readFile(join(dir, 'ca1/ca.crt')));
      await writeFile(join(mixed, 'ca.key'), await readFile(join(dir, 'ca2/ca.key')));
      await assert.rejects(
        createNodeCert({ clusterId: 'c1', dir: mixed, name: 'n', peersService: 'p', namespace: 'x' }),
        /does not match/,
      );
    } finally {
      await removeTempDir(mixed);
    }
  });

  it('runs from the CLI with clear usage errors', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const sink = (list: string[]) => ({ write: (t: string) => list.push(t) });
    const cliDir = join(dir, 'cli');
    assert.equal(await runCertsCli(['ca', '--out', cliDir], sink(out), sink(err)), 0);
    assert.equal(
      await runCertsCli(
        [
          'node',
          '--out',
          cliDir,
          '--name',
          'n1',
          '--cluster-id',
          'c9',
          '--peers-service',
          'p',
          '--namespace',
          'ns',
          '--pod',
          'p-0',
          '--pod',
          'p-1',
        ],
        sink(out),
        sink(err),
      ),
      0,
    );
    const cert = new X509Certificate(await readFile(join(cliDir, 'n1.crt')));
    assert.match(cert.subjectAltName ?? '', /DNS:p-1\.p\.ns\.svc\.cluster\.local/);
    assert.equal(await runCertsCli(['node', '--out', cliDir], sink(out), sink(err)), 2);
    assert.match(err.join(''), /node needs --name, --cluster-id, --peers-service, --namespace/);
    assert.equal(
      await runCertsCli(['admin', '--out', cliDir, '--name', 'ops', '--cluster-id', 'c9'], sink(out), sink(err)),
      0,
    );
    assert.deepEqual(await readCertIdentity(join(cliDir, 'ops.crt')), { role: 'admin', clusterId: 'c9', name: 'ops' });
    assert.deepEqual(await readCertIdentity(join(cliDir, 'n1.crt')), { role: 'peer', clusterId: 'c9', name: 'n1' });
    assert.equal(await runCertsCli(['admin', '--out', cliDir, '--name', 'ops2'], sink(out), sink(err)), 2);
    assert.match(err.join(''), /admin needs --cluster-id/);
    const before = out.length;
    assert.equal(await runCertsCli(['cluster-id'], sink(out), sink(err)), 0);
    assert.match(out.slice(before).join('').trim(), CLUSTER_ID);
    assert.equal(await runCertsCli(['bogus'], sink(out), sink(err)), 2);
    assert.equal(await runCertsCli(['ca', '--out', cliDir, '--nope'], sink(out), sink(err)), 2);
    assert.equal(await runCertsCli(['ca', '--out', cliDir], sink(out), sink(err)), 1, 'an existing CA is kept');
  });

  it('issues admin certificates for client use only, told apart from peer certificates in the certificate', async () => {
    await createAdminCert({ dir: join(dir, 'ca1'), name: 'alice', clusterId: 'c1' });
    const admin = new X509Certificate(await readFile(join(dir, 'ca1/alice.crt')));
    assert.equal(admin.subjectAltName, 'URI:spiffe://svc/c1/admin/alice', 'no DNS names: it never serves');
    assert.deepEqual([...(admin.keyUsage ?? [])], [CLIENT_AUTH]);
    assert.equal(admin.verify(ca.publicKey), true);
    assert.deepEqual(certIdentity({ subjectAltName: admin.subjectAltName, extKeyUsage: admin.keyUsage }), {
      role: 'admin',
      clusterId: 'c1',
      name: 'alice',
    });
    assert.deepEqual(certIdentity({ subjectAltName: node.subjectAltName, extKeyUsage: node.keyUsage }), {
      role: 'peer',
      clusterId: 'c1',
      name: 'node-0',
    });
    // A role URI whose key usage disagrees, two identities, or none: no role at all.
    assert.match(
      String(certIdentity({ subjectAltName: admin.subjectAltName, extKeyUsage: [SERVER_AUTH, CLIENT_AUTH] })),
      /must not have .*serverAuth/,
    );
    assert.match(
      String(certIdentity({ subjectAltName: node.subjectAltName, extKeyUsage: [CLIENT_AUTH] })),
      /serverAuth too/,
    );
    assert.match(
      String(
        certIdentity({
          subjectAltName: `${node.subjectAltName}, URI:spiffe://svc/c1/admin/x`,
          extKeyUsage: [SERVER_AUTH, CLIENT_AUTH],
        }),
      ),
      /2 identities/,
    );
    assert.match(
      String(certIdentity({ subjectAltName: 'DNS:localhost', extKeyUsage: [SERVER_AUTH, CLIENT_AUTH] })),
      /names no role/,
    );
    assert.match(
      String(certIdentity({ subjectAltName: 'URI:spiffe://svc/C1!/peer/x', extKeyUsage: [SERVER_AUTH, CLIENT_AUTH] })),
      /malformed/,
    );
    for (const bad of ['', 'UPPER', '-x', 'a'.repeat(64), 'a/b']) {
      await assert.rejects(
        createAdminCert({ dir: join(dir, 'ca1'), name: 'bob', clusterId: bad }),
        CertError,
        JSON.stringify(bad),
      );
      await assert.rejects(
        createNodeCert({ dir: join(dir, 'ca1'), name: 'bob', clusterId: bad, peersService: 'p', namespace: 'x' }),
        CertError,
        JSON.stringify(bad),
      );
    }
    assert.match(newClusterId(), CLUSTER_ID);
    assert.notEqual(newClusterId(), newClusterId());
  });

  it("issues the HTTP API's certificate: serverAuth only, its DNS and IP names, no identity the peer gate takes", async () => {
    const files = await createApiCert({
      dir: join(dir, 'ca1'),
      name: 'api',
      dnsNames: ['svc.prod.svc.cluster.local', '*.svc-peers.prod.svc.cluster.local'],
      ipAddresses: ['127.0.0.1'],
    });
    const api = new X509Certificate(await readFile(files.certPath));
    assert.equal(
      api.subjectAltName,
      'DNS:svc.prod.svc.cluster.local, DNS:*.svc-peers.prod.svc.cluster.local, IP Address:127.0.0.1',
    );
    assert.deepEqual([...(api.keyUsage ?? [])], [SERVER_AUTH]);
    assert.equal(api.verify(ca.publicKey), true);
    assert.notEqual(api.checkHost('svc-3.svc-peers.prod.svc.cluster.local'), undefined);
    assert.match(String(pemIdentity(await readFile(files.certPath))), /names no role/);
    await assert.rejects(createApiCert({ dir: join(dir, 'ca1'), name: 'api2', dnsNames: [] }), CertError);
    await assert.rejects(
      createApiCert({ dir: join(dir, 'ca1'), name: 'api3', dnsNames: ['bad name'] }),
      /must be dot-separated DNS labels/,
    );
    await assert.rejects(
      createApiCert({ dir: join(dir, 'ca1'), name: 'api4', dnsNames: ['x'], ipAddresses: ['300.1.1.1'] }),
      /not an IP address/,
    );
  });
});
