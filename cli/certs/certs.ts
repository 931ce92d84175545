// Peer mTLS material: a cluster CA, node (peer) certificates and admin certificates it signs. Keys
// come from node:crypto (EC P-256); certificates are built and signed in process with @peculiar/x509 over
// node's WebCrypto (node:crypto verifies certificates but cannot issue them), so issuing needs no `openssl`
// binary. Tests still parse what is issued here with openssl, as an independent reader.
//
// The two kinds are told apart in the certificate itself (transports/grpc/peer-identity.ts):
// - A node certificate serves both ends of a peer connection (extendedKeyUsage serverAuth and
//   clientAuth) and names, as subject alternative names, its identity URI
//   `spiffe://svc/<cluster-id>/peer/<name>`, the wildcard `*.<peersService>.<namespace>.svc.<clusterDomain>`
//   (so scaling the stateful set needs no re-issue), each given pod's own name under it, `localhost`
//   and `127.0.0.1`.
// - An admin certificate only dials (extendedKeyUsage clientAuth) and names only its identity URI
//   `spiffe://svc/<cluster-id>/admin/<name>`: it reaches svc.admin.v1 and nothing else.
// The profile is openssl's as this file used to ask it for: X.509 v3, SHA-256 signatures, random positive
// serials, subject and authority key identifiers (SHA-1 of the public key, RFC 5280 method 1), critical
// basicConstraints and keyUsage, UTF8String common names.
// @peculiar/x509 resolves its algorithms through tsyringe, which needs the reflect-metadata polyfill first.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  webcrypto,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { CLUSTER_ID, identityUri, pemIdentity, type CertIdentity } from '../../transports/grpc/peer-identity.js';

/** crypto is node's WebCrypto, handed to every @peculiar/x509 call (no global provider is set). */
const crypto = webcrypto;

export const CA_CERT_FILE = 'ca.crt';
export const CA_KEY_FILE = 'ca.key';
export const CERT_VALID_DAYS_DEFAULT = 825;
export const CA_VALID_DAYS_DEFAULT = 3650;
export const CERT_VALID_DAYS_MAX = 36_500;
export const CLUSTER_DOMAIN_DEFAULT = 'cluster.local';
export const POD_NAME_COUNT_MAX = 1000;
const KEY_FILE_MODE = 0o600;
const CERT_FILE_MODE = 0o644;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const COMMON_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,63}$/;

export class CertError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CertError';
  }
}

export interface CaOptions {
  /** dir receives ca.crt and ca.key (created 0700 when missing). */
  dir: string;
  commonName?: string;
  validDays?: number;
  /** overwrite replaces an existing CA; by default it refuses, since that orphans every node certificate. */
  overwrite?: boolean;
}

export interface NodeCertOptions {
  /** dir receives <name>.crt and <name>.key. */
  dir: string;
  /** caDir holds ca.crt and ca.key; defaults to dir. */
  caDir?: string;
  /** name is the node's name: the certificate's CN and its files' base name (a DNS label). */
  name: string;
  /** clusterId is the cluster the node belongs to (newClusterId() makes one): part of its identity URI. */
  clusterId: string;
  peersService: string;
  namespace: string;
  /** podNames get explicit SANs beside the wildcard. */
  podNames?: string[];
  clusterDomain?: string;
  validDays?: number;
  overwrite?: boolean;
}

export interface AdminCertOptions {
  /** dir receives <name>.crt and <name>.key. */
  dir: string;
  /** caDir holds ca.crt and ca.key; defaults to dir. */
  caDir?: string;
  /** name is the operator's (or tool's) name: the certificate's CN and its files' base name (a DNS label). */
  name: string;
  clusterId: string;
  validDays?: number;
  overwrite?: boolean;
}

export interface ApiCertOptions {
  /** dir receives <name>.crt and <name>.key. */
  dir: string;
  /** caDir holds ca.crt and ca.key; defaults to dir. */
  caDir?: string;
  /** name is the certificate's CN and its files' base name (a DNS label), e.g. `api`. */
  name: string;
  /** dnsNames are the names clients reach the API by (the client Service, an ingress host, localhost...). */
  dnsNames: string[];
  /** ipAddresses are IPs clients dial directly (127.0.0.1 for a local cluster). */
  ipAddresses?: string[];
  validDays?: number;
  overwrite?: boolean;
}

export interface IssuedFiles {
  certPath: string;
  keyPath: string;
}

/** nodeSubjectAltNames lists a node certificate's SANs in the `DNS:`/`IP:` form openssl and node print. */
export function nodeSubjectAltNames(
  options: Pick<NodeCertOptions, 'peersService' | 'namespace' | 'podNames' | 'clusterDomain'>,
): string[] {
  const domain = options.clusterDomain ?? CLUSTER_DOMAIN_DEFAULT;
  checkLabel('peers service', options.peersService);
  checkLabel('namespace', options.namespace);
  checkDomain(domain);
  const pods = options.podNames ?? [];
  if (pods.length > POD_NAME_COUNT_MAX) throw new CertError(`${pods.length} pod names, above ${POD_NAME_COUNT_MAX}`);
  for (const pod of pods) checkLabel('pod name', pod);
  const base = `${options.peersService}.${options.namespace}.svc.${domain}`;
  return [`DNS:*.${base}`, ...[...new Set(pods)].map((pod) => `DNS:${pod}.${base}`), 'DNS:localhost', 'IP:127.0.0.1'];
}

/** createClusterCa makes a self-signed CA (EC P-256) that can sign node certificates only. */
export async function createClusterCa(options: CaOptions): Promise<IssuedFiles> {
  const commonName = options.commonName ?? 'svc cluster CA';
  if (!COMMON_NAME.test(commonName))
    throw new CertError(`CA common name ${JSON.stringify(commonName)} must be 1-64 of A-Z a-z 0-9 space . _ -`);
  const days = validDays(options.validDays ?? CA_VALID_DAYS_DEFAULT);
  const certPath = join(options.dir, CA_CERT_FILE);
  const keyPath = join(options.dir, CA_KEY_FILE);
  await prepareOutput(options.dir, [certPath, keyPath], options.overwrite === true);
  const key = newKey();
  const keys = { privateKey: await signingKey(key.privateKey), publicKey: await verifyingKey(key.publicKey) };
  const { notBefore, notAfter } = validity(days);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialNumber(),
      name: commonNameOnly(commonName),
      notBefore,
      notAfter,
      signingAlgorithm: signingAlgorithm(key.privateKey),
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
        await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  await writeOutput(keyPath, pkcs8Pem(key.privateKey), KEY_FILE_MODE);
  await writeOutput(certPath, cert.toString('pem') + '\n', CERT_FILE_MODE);
  return { certPath, keyPath };
}

/** newClusterId makes a cluster id: 16 random hex digits (a DNS label, as identity URIs need). */
export function newClusterId(): string {
  return randomBytes(8).toString('hex');
}

/** createNodeCert makes `<name>.key` and `<name>.crt`, signed by the CA in caDir: a peer certificate, for server and client use. */
export async function createNodeCert(options: NodeCertOptions): Promise<IssuedFiles & { subjectAltNames: string[] }> {
  checkLabel('node name', options.name);
  checkClusterId(options.clusterId);
  const subjectAltNames = [
    `URI:${identityUri({ role: 'peer', clusterId: options.clusterId, name: options.name })}`,
    ...nodeSubjectAltNames(options),
  ];
  return issueLeaf(options, [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth], subjectAltNames);
}

/** createAdminCert makes `<name>.key` and `<name>.crt`, signed by the CA in caDir: an admin (client-only) certificate. */
export async function createAdminCert(options: AdminCertOptions): Promise<IssuedFiles & { subjectAltNames: string[] }> {
  checkLabel('admin name', options.name);
  checkClusterId(options.clusterId);
  return issueLeaf(
    options,
    [x509.ExtendedKeyUsage.clientAuth],
    [`URI:${identityUri({ role: 'admin', clusterId: options.clusterId, name: options.name })}`],
  );
}

/**
 * createApiCert makes `<name>.key` and `<name>.crt`, signed by the CA in caDir: the HTTP API's server certificate
 * (serverAuth only, DNS and IP names, no identity URI: the peer gate never takes it for a peer or an admin).
 */
export async function createApiCert(options: ApiCertOptions): Promise<IssuedFiles & { subjectAltNames: string[] }> {
  checkLabel('certificate name', options.name);
  const dns = [...new Set(options.dnsNames)];
  const ips = [...new Set(options.ipAddresses ?? [])];
  if (dns.length + ips.length === 0) throw new CertError('an API certificate needs at least one DNS name or IP');
  if (dns.length + ips.length > POD_NAME_COUNT_MAX)
    throw new CertError(`${dns.length + ips.length} names, above ${POD_NAME_COUNT_MAX}`);
  for (const name of dns) {
    const labels = name.startsWith('*.') ? name.slice(2) : name;
    if (labels.length > 253 || !labels.split('.').every((label) => DNS_LABEL.test(label)))
      throw new CertError(`DNS name ${JSON.stringify(name)} must be dot-separated DNS labels (a leading *. allowed)`);
  }
  for (const ip of ips) if (isIP(ip) === 0) throw new CertError(`${JSON.stringify(ip)} is not an IP address`);
  return issueLeaf(
    options,
    [x509.ExtendedKeyUsage.serverAuth],
    [...dns.map((name) => `DNS:${name}`), ...ips.map((ip) => `IP:${ip}`)],
  );
}

/** readCertIdentity reads the identity a certificate file names, or says why it names none. */
export async function readCertIdentity(certPath: string): Promise<CertIdentity | string> {
  try {
    return pemIdentity(await readFile(certPath));
  } catch (err) {
    return `cannot read ${certPath}: ${(err as Error).message}`;
  }
}

async function issueLeaf(
  options: { dir: string; caDir?: string; name: string; validDays?: number; overwrite?: boolean },
  extendedKeyUsages: x509.ExtendedKeyUsage[],
  subjectAltNames: string[],
): Promise<IssuedFiles & { subjectAltNames: string[] }> {
  const days = validDays(options.validDays ?? CERT_VALID_DAYS_DEFAULT);
  const caDir = options.caDir ?? options.dir;
  const ca = await loadCa(caDir);
  const certPath = join(options.dir, `${options.name}.crt`);
  const keyPath = join(options.dir, `${options.name}.key`);
  await prepareOutput(options.dir, [certPath, keyPath], options.overwrite === true);
  const key = newKey();
  const { notBefore, notAfter } = validity(days);
  const publicKey = await verifyingKey(key.publicKey);
  const caSki = ca.cert.getExtension(x509.SubjectKeyIdentifierExtension);
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serialNumber(),
      subject: commonNameOnly(options.name),
      issuer: ca.cert.subjectName,
      notBefore,
      notAfter,
      signingAlgorithm: signingAlgorithm(ca.key),
      publicKey,
      signingKey: await signingKey(ca.key),
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension(extendedKeyUsages, false),
        await x509.SubjectKeyIdentifierExtension.create(publicKey, false, crypto),
        // The issuer's own key identifier when it states one (as openssl's `keyid` copies it), else its key's hash.
        caSki
          ? new x509.AuthorityKeyIdentifierExtension(caSki.keyId, false)
          : await x509.AuthorityKeyIdentifierExtension.create(
              await verifyingKey(createPublicKey(ca.key)),
              false,
              crypto,
            ),
        new x509.SubjectAlternativeNameExtension(subjectAltNames.map(generalName), false),
      ],
    },
    crypto,
  );
  await writeOutput(keyPath, pkcs8Pem(key.privateKey), KEY_FILE_MODE);
  await writeOutput(certPath, cert.toString('pem') + '\n', CERT_FILE_MODE);
  return { certPath, keyPath, subjectAltNames };
}

async function loadCa(caDir: string): Promise<{ cert: x509.X509Certificate; key: KeyObject }> {
  let certPem: string;
  let keyPem: string;
  try {
    certPem = await readFile(join(caDir, CA_CERT_FILE), 'utf8');
    keyPem = await readFile(join(caDir, CA_KEY_FILE), 'utf8');
  } catch (err) {
    throw new CertError(`cannot read the CA in ${caDir} (${CA_CERT_FILE}, ${CA_KEY_FILE}): ${(err as Error).message}`);
  }
  try {
    const cert = new X509Certificate(certPem);
    if (!cert.ca) throw new Error('it is not a CA certificate');
    const key = createPrivateKey(keyPem);
    if (!cert.checkPrivateKey(key)) throw new Error(`${CA_KEY_FILE} does not match ${CA_CERT_FILE}`);
    signingAlgorithm(key);
    return { cert: new x509.X509Certificate(cert.raw), key };
  } catch (err) {
    throw new CertError(`the CA in ${caDir} is unusable: ${(err as Error).message}`);
  }
}

function newKey(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
}

function pkcs8Pem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** webCurves maps node's curve names to WebCrypto's, for the EC keys a CA may have. */
const webCurves: Record<string, string> = { prime256v1: 'P-256', secp384r1: 'P-384', secp521r1: 'P-521' };

/**
 * keyAlgorithm is the WebCrypto algorithm of a key: EC on a NIST curve (the keys this file makes) or RSA (a CA
 * an operator brought), both signing with SHA-256 as `openssl -sha256` did; other kinds are refused.
 */
function keyAlgorithm(key: KeyObject): webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams {
  if (key.asymmetricKeyType === 'ec') {
    const namedCurve = webCurves[key.asymmetricKeyDetails?.namedCurve ?? ''];
    if (namedCurve) return { name: 'ECDSA', namedCurve };
  }
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  throw new Error(
    `its key is ${key.asymmetricKeyType ?? 'of no known kind'}${key.asymmetricKeyDetails?.namedCurve ? ` (${key.asymmetricKeyDetails.namedCurve})` : ''}; an EC key on P-256, P-384 or P-521 or an RSA key is needed`,
  );
}

function signingAlgorithm(key: KeyObject): webcrypto.Algorithm | webcrypto.EcdsaParams {
  const algorithm = keyAlgorithm(key);
  return algorithm.name === 'ECDSA' ? { name: 'ECDSA', hash: 'SHA-256' } : algorithm;
}

function signingKey(key: KeyObject): Promise<webcrypto.CryptoKey> {
  const der = key.export({ type: 'pkcs8', format: 'der' });
  return crypto.subtle.importKey('pkcs8', der, keyAlgorithm(key), false, ['sign']);
}

function verifyingKey(key: KeyObject): Promise<webcrypto.CryptoKey> {
  const der = key.export({ type: 'spki', format: 'der' });
  return crypto.subtle.importKey('spki', der, keyAlgorithm(key), true, ['verify']);
}

/** validity starts now, to the second (X.509 times have no fractions), and lasts `days` days. */
function validity(days: number): { notBefore: Date; notAfter: Date } {
  const notBefore = new Date(Math.floor(Date.now() / 1000) * 1000);
  return { notBefore, notAfter: new Date(notBefore.getTime() + days * 86_400_000) };
}

/** commonNameOnly is a name of one CN, a UTF8String (as openssl's default string mask makes it). */
function commonNameOnly(commonName: string): x509.Name {
  return new x509.Name([{ CN: [{ utf8String: commonName }] }]);
}

/** generalName turns a SAN in its `URI:`, `DNS:` or `IP:` form into @peculiar/x509's. */
function generalName(san: string): x509.JsonGeneralName {
  const colon = san.indexOf(':');
  const kind = san.slice(0, colon);
  const value = san.slice(colon + 1);
  if (kind === 'URI') return { type: 'url', value };
  if (kind === 'DNS') return { type: 'dns', value };
  if (kind === 'IP') return { type: 'ip', value };
  throw new Error(`unknown subject alternative name kind in ${JSON.stringify(san)}`);
}

/**
 * serialNumber is a random positive serial of 16 bytes in hex, as RFC 5280 asks (unique per CA): the first byte
 * is 0x01..0x7f, so the DER integer is positive and needs no leading zero byte.
 */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f || 0x01;
  return bytes.toString('hex');
}

async function prepareOutput(dir: string, paths: string[], overwrite: boolean): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (overwrite) return;
  for (const path of paths) {
    if (await exists(path)) throw new CertError(`${path} exists; pass overwrite (--force) to replace it`);
  }
}

async function writeOutput(path: string, content: string, mode: number): Promise<void> {
  await writeFile(path, content, { mode });
  // writeFile's mode applies only to a new file (and under the umask): set it outright.
  await chmod(path, mode);
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

function validDays(days: number): number {
  if (!Number.isSafeInteger(days) || days < 1 || days > CERT_VALID_DAYS_MAX)
    throw new CertError(`validity must be 1..${CERT_VALID_DAYS_MAX} days, got ${String(days)}`);
  return days;
}

function checkLabel(what: string, value: unknown): void {
  if (typeof value !== 'string' || !DNS_LABEL.test(value)) {
    throw new CertError(
      `${what} ${JSON.stringify(value)} must be a DNS label: 1-63 of a-z 0-9 -, not starting or ending with -`,
    );
  }
}

function checkClusterId(clusterId: unknown): void {
  if (typeof clusterId !== 'string' || !CLUSTER_ID.test(clusterId)) {
    throw new CertError(
      `cluster id ${JSON.stringify(clusterId)} must be a DNS label: 1-63 of a-z 0-9 -, not starting or ending with -`,
    );
  }
}

function checkDomain(domain: string): void {
  if (domain.length > 200 || !domain.split('.').every((label) => DNS_LABEL.test(label))) {
    throw new CertError(`cluster domain ${JSON.stringify(domain)} must be dot-separated DNS labels`);
  }
}
