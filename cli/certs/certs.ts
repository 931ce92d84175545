// Peer mTLS material: a cluster CA, node (peer) certificates and admin certificates it signs. Keys
// come from node:crypto (EC P-256); certificates from the `openssl` binary (node:crypto cannot issue
// certificates).
//
// The two kinds are told apart in the certificate itself (transports/grpc/peer-identity.ts):
// - A node certificate serves both ends of a peer connection (extendedKeyUsage serverAuth and
//   clientAuth) and names, as subject alternative names, its identity URI
//   `spiffe://svc/<cluster-id>/peer/<name>`, the wildcard `*.<peersService>.<namespace>.svc.<clusterDomain>`
//   (so scaling the stateful set needs no re-issue), each given pod's own name under it, `localhost`
//   and `127.0.0.1`.
// - An admin certificate only dials (extendedKeyUsage clientAuth) and names only its identity URI
//   `spiffe://svc/<cluster-id>/admin/<name>`: it reaches svc.admin.v1 and nothing else.
import { execFile } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CLUSTER_ID, identityUri, pemIdentity, type CertIdentity } from '../../transports/grpc/peer-identity.js';

const run = promisify(execFile);

export const CA_CERT_FILE = 'ca.crt';
export const CA_KEY_FILE = 'ca.key';
export const CERT_VALID_DAYS_DEFAULT = 825;
export const CA_VALID_DAYS_DEFAULT = 3650;
export const CERT_VALID_DAYS_MAX = 36_500;
export const CLUSTER_DOMAIN_DEFAULT = 'cluster.local';
export const POD_NAME_COUNT_MAX = 1000;
/** opensslTimeoutMs bounds one openssl run, so a wedged binary is an error, not a hang. */
export const OPENSSL_TIMEOUT_MS = 30_000;
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

/** nodeSubjectAltNames lists a node certificate's SANs in openssl's `DNS:`/`IP:` form. */
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
  const keyPem = newKeyPem();
  await withWorkDir(async (work) => {
    const config = [
      '[req]',
      'distinguished_name = dn',
      'prompt = no',
      'x509_extensions = ca_ext',
      '[dn]',
      `CN = ${commonName}`,
      '[ca_ext]',
      'basicConstraints = critical,CA:TRUE,pathlen:0',
      'keyUsage = critical,keyCertSign,cRLSign',
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid:always',
    ].join('\n');
    await writeFile(join(work, 'ca.cnf'), `${config}\n`);
    await writeFile(join(work, 'ca.key'), keyPem, { mode: KEY_FILE_MODE });
    await openssl([
      'req',
      '-x509',
      '-new',
      '-config',
      join(work, 'ca.cnf'),
      '-key',
      join(work, 'ca.key'),
      '-sha256',
      '-days',
      String(days),
      '-set_serial',
      serialNumber(),
      '-out',
      join(work, 'ca.crt'),
    ]);
    await writeOutput(keyPath, keyPem, KEY_FILE_MODE);
    await writeOutput(certPath, await readFile(join(work, 'ca.crt'), 'utf8'), CERT_FILE_MODE);
  });
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
  return issueLeaf(options, 'serverAuth,clientAuth', subjectAltNames);
}

/** createAdminCert makes `<name>.key` and `<name>.crt`, signed by the CA in caDir: an admin (client-only) certificate. */
export async function createAdminCert(options: AdminCertOptions): Promise<IssuedFiles & { subjectAltNames: string[] }> {
  checkLabel('admin name', options.name);
  checkClusterId(options.clusterId);
  return issueLeaf(options, 'clientAuth', [
    `URI:${identityUri({ role: 'admin', clusterId: options.clusterId, name: options.name })}`,
  ]);
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
  return issueLeaf(options, 'serverAuth', [...dns.map((name) => `DNS:${name}`), ...ips.map((ip) => `IP:${ip}`)]);
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
  extendedKeyUsage: string,
  subjectAltNames: string[],
): Promise<IssuedFiles & { subjectAltNames: string[] }> {
  const days = validDays(options.validDays ?? CERT_VALID_DAYS_DEFAULT);
  const caDir = options.caDir ?? options.dir;
  const ca = await loadCa(caDir);
  const certPath = join(options.dir, `${options.name}.crt`);
  const keyPath = join(options.dir, `${options.name}.key`);
  await prepareOutput(options.dir, [certPath, keyPath], options.overwrite === true);
  const keyPem = newKeyPem();
  await withWorkDir(async (work) => {
    const req = ['[req]', 'distinguished_name = dn', 'prompt = no', '[dn]', `CN = ${options.name}`].join('\n');
    const ext = [
      '[node_ext]',
      'basicConstraints = critical,CA:FALSE',
      'keyUsage = critical,digitalSignature',
      `extendedKeyUsage = ${extendedKeyUsage}`,
      'subjectKeyIdentifier = hash',
      'authorityKeyIdentifier = keyid,issuer',
      `subjectAltName = ${subjectAltNames.join(',')}`,
    ].join('\n');
    await writeFile(join(work, 'req.cnf'), `${req}\n`);
    await writeFile(join(work, 'ext.cnf'), `${ext}\n`);
    await writeFile(join(work, 'node.key'), keyPem, { mode: KEY_FILE_MODE });
    await writeFile(join(work, 'ca.key'), ca.keyPem, { mode: KEY_FILE_MODE });
    await writeFile(join(work, 'ca.crt'), ca.certPem);
    await openssl([
      'req',
      '-new',
      '-config',
      join(work, 'req.cnf'),
      '-key',
      join(work, 'node.key'),
      '-out',
      join(work, 'node.csr'),
    ]);
    await openssl([
      'x509',
      '-req',
      '-in',
      join(work, 'node.csr'),
      '-CA',
      join(work, 'ca.crt'),
      '-CAkey',
      join(work, 'ca.key'),
      '-set_serial',
      serialNumber(),
      '-days',
      String(days),
      '-sha256',
      '-extfile',
      join(work, 'ext.cnf'),
      '-extensions',
      'node_ext',
      '-out',
      join(work, 'node.crt'),
    ]);
    await writeOutput(keyPath, keyPem, KEY_FILE_MODE);
    await writeOutput(certPath, await readFile(join(work, 'node.crt'), 'utf8'), CERT_FILE_MODE);
  });
  return { certPath, keyPath, subjectAltNames };
}

/** opensslVersion says which openssl will run, or throws a CertError when there is none. */
export async function opensslVersion(): Promise<string> {
  return (await openssl(['version'])).trim();
}

async function loadCa(caDir: string): Promise<{ certPem: string; keyPem: string }> {
  let certPem: string;
  let keyPem: string;
  try {
    certPem = await readFile(join(caDir, CA_CERT_FILE), 'utf8');
    keyPem = await readFile(join(caDir, CA_KEY_FILE), 'utf8');
  } catch (err) {
    throw new CertError(`cannot read the CA in ${caDir} (${CA_CERT_FILE}, ${CA_KEY_FILE}): ${(err as Error).message}`);
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
    if (!cert.ca) throw new Error('it is not a CA certificate');
    if (!cert.checkPrivateKey(createPrivateKey(keyPem)))
      throw new Error(`${CA_KEY_FILE} does not match ${CA_CERT_FILE}`);
  } catch (err) {
    throw new CertError(`the CA in ${caDir} is unusable: ${(err as Error).message}`);
  }
  return { certPem, keyPem };
}

function newKeyPem(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

/** serialNumber is a random positive 127-bit serial, as RFC 5280 asks (unique per CA). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return `0x${bytes.toString('hex')}`;
}

async function openssl(args: string[]): Promise<string> {
  try {
    const { stdout } = await run('openssl', args, { timeout: OPENSSL_TIMEOUT_MS, maxBuffer: 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { code?: unknown; stderr?: unknown; message: string };
    if (e.code === 'ENOENT') throw new CertError('openssl is not installed (Debian: apt-get install openssl)');
    throw new CertError(
      `openssl ${args[0]} failed: ${typeof e.stderr === 'string' && e.stderr !== '' ? e.stderr.trim() : e.message}`,
    );
  }
}

async function withWorkDir(work: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-certs-'));
  try {
    await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
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
