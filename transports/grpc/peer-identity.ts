// Who is calling: the identity a certificate from the cluster CA carries, and the cluster id every
// peer call names. docs/protocol.md, "Identity and trust", gives the rules; this file only reads.
//
// A certificate says what it is for in two standard places:
//   - a URI subject alternative name in SPIFFE form (https://github.com/spiffe/spiffe, SPIFFE-ID):
//       spiffe://svc/<cluster-id>/peer/<node-name>    a node: replication and the internal store
//       spiffe://svc/<cluster-id>/admin/<name>        an operator or the CLI: the Admin service
//   - extendedKeyUsage: a peer certificate has serverAuth and clientAuth (it serves and dials); an
//     admin certificate has clientAuth only, so TLS itself never lets it serve as a node.
// A certificate with no such URI, two of them, or a URI whose role disagrees with its key usage has
// no role: it is refused everywhere.
import * as grpc from '@grpc/grpc-js';
import { X509Certificate } from 'node:crypto';

/** CLUSTER_ID_METADATA_KEY is the gRPC metadata every peer call carries the sender's cluster id in. */
export const CLUSTER_ID_METADATA_KEY = 'svc-cluster-id';
/** SPIFFE_TRUST_DOMAIN is the trust domain of every identity URI this system issues. */
export const SPIFFE_TRUST_DOMAIN = 'svc';
/** CLUSTER_ID matches a cluster id: a DNS label (lowercase), so it fits a URI path and a file name. */
export const CLUSTER_ID = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** IDENTITY_NAME matches a node or admin name in an identity URI (a SPIFFE path segment, a node name). */
export const IDENTITY_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;

const OID_SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
const OID_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

export type CertRole = 'peer' | 'admin';

export interface CertIdentity {
  role: CertRole;
  clusterId: string;
  name: string;
}

/** identityUri is the URI SAN that names a certificate's role, cluster and holder. */
export function identityUri(identity: CertIdentity): string {
  if (!CLUSTER_ID.test(identity.clusterId))
    throw new Error(`cluster id ${JSON.stringify(identity.clusterId)} must be a DNS label (a-z 0-9 -, 1-63)`);
  if (!IDENTITY_NAME.test(identity.name))
    throw new Error(`name ${JSON.stringify(identity.name)} must be 1-253 of A-Z a-z 0-9 . _ -`);
  return `spiffe://${SPIFFE_TRUST_DOMAIN}/${identity.clusterId}/${identity.role}/${identity.name}`;
}

const URI = /^spiffe:\/\/svc\/([^/]+)\/(peer|admin)\/([^/]+)$/;

/** parseIdentityUri reads an identity URI, or returns null for any other URI. */
export function parseIdentityUri(uri: string): CertIdentity | null {
  const match = URI.exec(uri);
  if (!match) return null;
  const [, clusterId, role, name] = match as unknown as [string, string, CertRole, string];
  return CLUSTER_ID.test(clusterId) && IDENTITY_NAME.test(name) ? { role, clusterId, name } : null;
}

/** CertFacts are what identity needs from a certificate: Node's subjectaltname text and its extended key usages. */
export interface CertFacts {
  /** subjectAltName is Node's rendering, e.g. `DNS:localhost, URI:spiffe://svc/c1/peer/n1`. */
  subjectAltName: string | undefined;
  /** extKeyUsage lists OIDs; undefined when the certificate has no extendedKeyUsage. */
  extKeyUsage: readonly string[] | undefined;
}

/** certIdentity finds a certificate's identity, or says why it has none. */
export function certIdentity(facts: CertFacts): CertIdentity | string {
  const uris = (facts.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('URI:spiffe://'))
    .map((entry) => entry.slice(4));
  const identities = uris.map(parseIdentityUri);
  if (identities.length === 0)
    return 'the certificate names no role (no spiffe://svc/<cluster>/<peer|admin>/<name> URI)';
  if (identities.length > 1) return `the certificate names ${identities.length} identities; it must name one`;
  const identity = identities[0];
  if (!identity) return `the certificate's identity URI ${JSON.stringify(uris[0])} is malformed`;
  const usages = facts.extKeyUsage ?? [];
  if (!usages.includes(OID_CLIENT_AUTH)) return 'the certificate lacks extendedKeyUsage clientAuth';
  if (identity.role === 'peer' && !usages.includes(OID_SERVER_AUTH))
    return 'a peer certificate must have extendedKeyUsage serverAuth too';
  if (identity.role === 'admin' && usages.includes(OID_SERVER_AUTH))
    return 'an admin certificate must not have extendedKeyUsage serverAuth';
  return identity;
}

/** pemIdentity reads the identity of a PEM certificate (the first one of a chain). */
export function pemIdentity(pem: string | Buffer): CertIdentity | string {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch (err) {
    return `not a certificate: ${(err as Error).message}`;
  }
  return certIdentity({ subjectAltName: cert.subjectAltName, extKeyUsage: cert.keyUsage });
}

/**
 * Caller is who a call came from. `tls` is false on a plaintext server (tests, development), where no
 * identity exists; `identity` is the peer certificate's, or `problem` says why it has none.
 * `clusterId` is what the call's metadata claims ('' when absent).
 */
export type Caller =
  | { tls: true; identity: CertIdentity; problem: null; clusterId: string }
  | { tls: true; identity: null; problem: string; clusterId: string }
  | { tls: false; identity: null; problem: null; clusterId: string };

/** MetadataReader is the part of a call's metadata identity reads (grpc-js's Metadata, or a lean call's headers). */
export interface MetadataReader {
  get(key: string): grpc.MetadataValue[];
}

/** ServerCallLike is the part of a server call identity needs (a grpc-js call, or a lean one: lean-serve.ts). */
export interface ServerCallLike {
  metadata: MetadataReader;
  /** http2Session: the call's HTTP/2 session, where the call says it (lean-serve.ts); else found as below. */
  http2Session?: object;
  getAuthContext?(): {
    transportSecurityType?: string;
    sslPeerCertificate?: { raw?: Buffer; subjectaltname?: string; ext_key_usage?: string[] };
  } | null;
}

/** CertStanding is the certificate half of a Caller: fixed for the life of a TLS connection. */
type CertStanding = Omit<Caller, 'clusterId'>;

/**
 * standingByConnection caches each connection's certificate standing, keyed on its HTTP/2 session object and
 * dropped with it (a WeakMap). grpc-js's getAuthContext() calls TLSSocket.getPeerCertificate() on every call,
 * which builds the certificate's object (fingerprints included) again each time: under `--cpu-prof` it was the
 * busiest function of a busy node. A connection's certificate cannot change (TLS 1.3 has no renegotiation and
 * Node's HTTP/2 refuses it), so reading it once per connection checks the same thing.
 */
const standingByConnection = new WeakMap<object, { standing: CertStanding; last: Caller | null }>();
/** certificateReads counts the peer certificates read (cache misses and calls with no session to key on): for tests. */
let certificateReads = 0;

/**
 * connectionOf finds the HTTP/2 session a grpc-js server call runs on, or null. grpc-js (1.10 and later) gives
 * the handler a call object whose `call` is the server's intercepting call; with no server interceptors that is
 * its BaseServerInterceptingCall, whose `stream` is the ServerHttp2Stream — the object its own getAuthContext()
 * reads the socket through. These fields are not grpc-js's typed API, so each step is checked, and a call of
 * any other shape is read per call as before (test/transports/tls.test.ts notices a grpc-js that changed it).
 */
function connectionOf(call: ServerCallLike): object | null {
  if (call.http2Session !== undefined) return call.http2Session;
  const inner = (call as { call?: unknown }).call;
  if (typeof inner !== 'object' || inner === null) return null;
  const stream = (inner as { stream?: unknown }).stream;
  if (typeof stream !== 'object' || stream === null) return null;
  const session = (stream as { session?: unknown }).session;
  return typeof session === 'object' && session !== null ? session : null;
}

function readStanding(call: ServerCallLike): CertStanding {
  certificateReads++;
  const auth = call.getAuthContext?.() ?? null;
  if (auth?.transportSecurityType !== 'ssl') return { tls: false, identity: null, problem: null };
  const cert = auth.sslPeerCertificate;
  if (!cert) return { tls: true, identity: null, problem: 'no client certificate' };
  const found = certIdentity({ subjectAltName: cert.subjectaltname, extKeyUsage: cert.ext_key_usage });
  return typeof found === 'string'
    ? { tls: true, identity: null, problem: found }
    : { tls: true, identity: found, problem: null };
}

/** peerCertificateReads is how many times callerOf has read a peer certificate in this process (tests). */
export function peerCertificateReads(): number {
  return certificateReads;
}

/**
 * callerOf reads the caller of a server call: the certificate's standing once per connection (cached on its
 * HTTP/2 session), the cluster id from each call's metadata.
 */
export function callerOf(call: ServerCallLike): Caller {
  const claimed = call.metadata.get(CLUSTER_ID_METADATA_KEY);
  const clusterId =
    claimed.length === 1 && typeof claimed[0] === 'string' ? claimed[0] : claimed.length > 1 ? '<several>' : '';
  const connection = connectionOf(call);
  let known = connection === null ? undefined : standingByConnection.get(connection);
  if (known === undefined) {
    known = { standing: readStanding(call), last: null };
    if (connection !== null) standingByConnection.set(connection, known);
  }
  // A connection's calls name the same cluster id: the Caller of the last one is the next one's (frozen, shared).
  if (known.last?.clusterId === clusterId) return known.last;
  known.last = Object.freeze({ ...known.standing, clusterId }) as Caller;
  return known.last;
}

/** clusterIdInterceptor adds the cluster id to the metadata of every call a client makes. */
export function clusterIdInterceptor(clusterId: string): grpc.Interceptor {
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        metadata.set(CLUSTER_ID_METADATA_KEY, clusterId);
        next(metadata, listener);
      },
    });
}

/**
 * clusterChannelOptions are channel options that make every call on the channel carry clusterId (grpc-js
 * reads `interceptors` from a Client's options); '' adds nothing (a plaintext node with no cluster id).
 */
export function clusterChannelOptions(clusterId: string): grpc.ChannelOptions {
  return clusterId === '' ? {} : ({ interceptors: [clusterIdInterceptor(clusterId)] } as grpc.ChannelOptions);
}
