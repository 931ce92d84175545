// Peer credentials. Peers talk mutual TLS: the server demands a client
// certificate signed by the cluster CA, the client checks the server's against
// the same CA. Plaintext exists only when a caller asks for it by name.
import * as grpc from '@grpc/grpc-js';

/** PeerTlsMaterial is PEM text or bytes: the cluster CA, this node's certificate chain and its key. */
export interface PeerTlsMaterial {
  ca: Buffer | string;
  cert: Buffer | string;
  key: Buffer | string;
}

function pem(value: Buffer | string, what: string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  if (!bytes.includes('-----BEGIN ')) throw new Error(`${what} is not PEM (no "-----BEGIN" line)`);
  return bytes;
}

/** serverCredentials serves TLS and refuses any client without a certificate from `ca`. */
export function serverCredentials(material: PeerTlsMaterial): grpc.ServerCredentials {
  return grpc.ServerCredentials.createSsl(
    pem(material.ca, 'ca'),
    [{ cert_chain: pem(material.cert, 'cert'), private_key: pem(material.key, 'key') }],
    true,
  );
}

/**
 * clientCredentials presents this node's certificate and trusts only servers signed by `ca`.
 * The server's name is checked against the dialled host, which the cluster certificate covers
 * with its per-pod and wildcard names (spec, Authentication 2).
 */
export function clientCredentials(material: PeerTlsMaterial): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(pem(material.ca, 'ca'), pem(material.key, 'key'), pem(material.cert, 'cert'));
}

/** insecureServerCredentials serves plaintext: for tests and explicitly configured development only. */
export function insecureServerCredentials(): grpc.ServerCredentials {
  return grpc.ServerCredentials.createInsecure();
}

/** insecureClientCredentials dials plaintext: for tests and explicitly configured development only. */
export function insecureClientCredentials(): grpc.ChannelCredentials {
  return grpc.credentials.createInsecure();
}

/** PeerSecurity is how a node's configuration names its transport security. */
export type PeerSecurity = { mode: 'mtls'; material: PeerTlsMaterial } | { mode: 'insecure' };

export function peerServerCredentials(security: PeerSecurity): grpc.ServerCredentials {
  return security.mode === 'mtls' ? serverCredentials(security.material) : insecureServerCredentials();
}

export function peerClientCredentials(security: PeerSecurity): grpc.ChannelCredentials {
  return security.mode === 'mtls' ? clientCredentials(security.material) : insecureClientCredentials();
}
