// What `svc certs` issues (in process, @peculiar/x509 over node's WebCrypto), read by an independent reader: the
// openssl binary parses and verifies each certificate, and finds the profile the peers check
// (transports/grpc/peer-identity.ts). And issuing needs no openssl: the CLI runs with only node on its PATH.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import { mkdir, readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createAdminCert, createClusterCa, createNodeCert } from '../../cli/certs/certs.js';
import { makeTempDir, removeTempDir } from '../transports/storage/helpers.js';
import { runCli } from './helpers.js';

const run = promisify(execFile);
const openssl = async (...args: string[]) => (await run('openssl', args)).stdout;

describe('certs: read back by openssl, issued without it', function () {
  this.timeout(120_000);
  let dir: string;

  before(async () => {
    dir = await makeTempDir('certs-openssl');
    await createClusterCa({ dir, commonName: 'svc oracle CA' });
    await createNodeCert({
      dir,
      name: 'node-0',
      clusterId: 'c7',
      peersService: 'svc-peers',
      namespace: 'prod',
      podNames: ['svc-0'],
    });
    await createAdminCert({ dir, name: 'ops', clusterId: 'c7' });
  });
  after(async () => {
    await removeTempDir(dir);
  });

  /** extensionText is openssl's rendering of one certificate's extensions (`-ext`), one string. */
  const extensionText = (name: string, extensions: string) =>
    openssl('x509', '-in', join(dir, name), '-noout', '-ext', extensions);

  it('makes a CA openssl reads as a path-length-0 CA signing certificates and CRLs only', async () => {
    const text = await extensionText('ca.crt', 'basicConstraints,keyUsage,subjectKeyIdentifier,authorityKeyIdentifier');
    assert.match(text, /X509v3 Basic Constraints: critical\n\s+CA:TRUE, pathlen:0\n/);
    assert.match(text, /X509v3 Key Usage: critical\n\s+Certificate Sign, CRL Sign\n/);
    // RFC 5280's key identifier, method 1: SHA-1 of the public key's bits; self-signed, so AKI = SKI.
    const spki = createPublicKey(await readFile(join(dir, 'ca.key'))).export({ type: 'spki', format: 'der' });
    const keyBits = spki.subarray(spki.length - 65);
    const sha1 = createHash('sha1').update(keyBits).digest('hex');
    const colons = sha1.toUpperCase().match(/../g)!.join(':');
    assert.match(text, new RegExp(`Subject Key Identifier: \\n\\s+${colons}\\n`));
    assert.match(text, new RegExp(`Authority Key Identifier: \\n\\s+${colons}\\n`));
    const subject = await openssl(
      'x509',
      '-in',
      join(dir, 'ca.crt'),
      '-noout',
      '-subject',
      '-nameopt',
      'multiline,show_type',
    );
    assert.match(subject, /commonName\s+= UTF8STRING:svc oracle CA/);
  });

  it('makes node certificates openssl verifies for TLS servers and clients, with the identity URI and names', async () => {
    for (const purpose of ['sslserver', 'sslclient'])
      assert.equal(
        await openssl('verify', '-purpose', purpose, '-CAfile', join(dir, 'ca.crt'), join(dir, 'node-0.crt')),
        `${join(dir, 'node-0.crt')}: OK\n`,
      );
    const text = await extensionText('node-0.crt', 'basicConstraints,keyUsage,extendedKeyUsage,subjectAltName');
    assert.match(text, /X509v3 Basic Constraints: critical\n\s+CA:FALSE\n/);
    assert.match(text, /X509v3 Key Usage: critical\n\s+Digital Signature\n/);
    assert.match(
      text,
      /X509v3 Extended Key Usage: \n\s+TLS Web Server Authentication, TLS Web Client Authentication\n/,
    );
    assert.match(
      text,
      /X509v3 Subject Alternative Name: \n\s+URI:spiffe:\/\/svc\/c7\/peer\/node-0, DNS:\*\.svc-peers\.prod\.svc\.cluster\.local, DNS:svc-0\.svc-peers\.prod\.svc\.cluster\.local, DNS:localhost, IP Address:127\.0\.0\.1\n/,
    );
    const details = await openssl('x509', '-in', join(dir, 'node-0.crt'), '-noout', '-text');
    assert.match(details, /Version: 3 \(0x2\)/);
    assert.match(details, /Signature Algorithm: ecdsa-with-SHA256/);
    assert.match(details, /ASN1 OID: prime256v1/);
    const caSki = /Subject Key Identifier: \n\s+(\S+)/.exec(await extensionText('ca.crt', 'subjectKeyIdentifier'))![1]!;
    assert.match(await extensionText('node-0.crt', 'authorityKeyIdentifier'), new RegExp(caSki));
  });

  it('makes admin certificates openssl verifies for TLS clients and refuses for servers', async () => {
    assert.equal(
      await openssl('verify', '-purpose', 'sslclient', '-CAfile', join(dir, 'ca.crt'), join(dir, 'ops.crt')),
      `${join(dir, 'ops.crt')}: OK\n`,
    );
    await assert.rejects(
      openssl('verify', '-purpose', 'sslserver', '-CAfile', join(dir, 'ca.crt'), join(dir, 'ops.crt')),
    );
    const text = await extensionText('ops.crt', 'extendedKeyUsage,subjectAltName');
    assert.match(text, /X509v3 Extended Key Usage: \n\s+TLS Web Client Authentication\n/);
    assert.match(text, /X509v3 Subject Alternative Name: \n\s+URI:spiffe:\/\/svc\/c7\/admin\/ops\n/);
  });

  it('signs with a CA an operator brought (RSA, made by openssl), and writes validity past 2049 as openssl reads it', async () => {
    const rsa = join(dir, 'rsa');
    await mkdir(rsa);
    await openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      join(rsa, 'ca.key'),
      '-out',
      join(rsa, 'ca.crt'),
      '-subj',
      '/CN=operator CA',
      '-days',
      '30',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
    );
    await createNodeCert({
      dir: rsa,
      name: 'n1',
      clusterId: 'c7',
      peersService: 'p',
      namespace: 'x',
      validDays: 36_500,
    });
    assert.equal(
      await openssl('verify', '-purpose', 'sslserver', '-CAfile', join(rsa, 'ca.crt'), join(rsa, 'n1.crt')),
      `${join(rsa, 'n1.crt')}: OK\n`,
    );
    const details = await openssl('x509', '-in', join(rsa, 'n1.crt'), '-noout', '-text');
    assert.match(details, /Signature Algorithm: sha256WithRSAEncryption/);
    const notAfter = new Date(new X509Certificate(await readFile(join(rsa, 'n1.crt'))).validTo);
    assert.ok(notAfter.getUTCFullYear() >= new Date().getUTCFullYear() + 99, String(notAfter));
  });

  it('issues from the CLI with no openssl on the PATH (only node)', async () => {
    const bin = join(dir, 'only-node');
    await mkdir(bin);
    await symlink(process.execPath, join(bin, 'node'));
    const env = { PATH: bin, HOME: dir };
    const out = join(dir, 'cli');
    const ca = await runCli(['certs', 'ca', '--out', out], { env });
    assert.equal(ca.code, 0, ca.stderr);
    const node = await runCli(
      ['certs', 'node', '--out', out, '--name', 'n1', '--cluster-id', 'c7', '--peers-service', 'p', '--namespace', 'x'],
      { env },
    );
    assert.equal(node.code, 0, node.stderr);
    assert.equal(
      await openssl('verify', '-CAfile', join(out, 'ca.crt'), join(out, 'n1.crt')),
      `${join(out, 'n1.crt')}: OK\n`,
    );
  });
});
