// Peer credentials. Peers talk mutual TLS: the server demands a client
// certificate signed by the cluster CA, the client checks the server's against
// the same CA. Plaintext exists only when a caller asks for it by name.
import * as grpc from '@grpc/grpc-js';
import * as http2 from 'node:http2';
import * as net from 'node:net';
import type { LookupFunction } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import { certIdentity } from './peer-identity.js';
import { LEAN_CONNECTION_SETTINGS } from './lean-connections.js';

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
export function clientCredentials(material: PeerTlsMaterial, expect: ServerExpectation = {}): grpc.ChannelCredentials {
  const { peerOfCluster } = expect;
  const verify =
    peerOfCluster === undefined
      ? {}
      : {
          checkServerIdentity: (hostname: string, cert: PeerCertificate): Error | undefined =>
            serverIdentityProblem(hostname, cert, peerOfCluster),
        };
  return grpc.credentials.createSsl(
    pem(material.ca, 'ca'),
    pem(material.key, 'key'),
    pem(material.cert, 'cert'),
    verify,
  );
}

/** ServerExpectation is what a client demands of a server's certificate beyond the CA and the host name. */
export interface ServerExpectation {
  /** peerOfCluster: the server must present a peer certificate of this cluster (peer-identity.ts). */
  peerOfCluster?: string;
}

/** serverIdentityProblem is the host-name check, then the server's role and cluster; undefined when it passes. */
export function serverIdentityProblem(hostname: string, cert: PeerCertificate, clusterId: string): Error | undefined {
  const hostProblem = checkServerIdentity(hostname, cert);
  if (hostProblem) return hostProblem;
  const identity = certIdentity({ subjectAltName: cert.subjectaltname, extKeyUsage: cert.ext_key_usage });
  if (typeof identity === 'string') return new Error(`the server's certificate is not a peer's: ${identity}`);
  if (identity.role !== 'peer')
    return new Error(`the server's certificate is an ${identity.role} certificate, not a peer's`);
  if (identity.clusterId !== clusterId)
    return new Error(`the server is a peer of cluster ${identity.clusterId}, not of ${clusterId}`);
  return undefined;
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
export type PeerSecurity =
  | {
      mode: 'mtls';
      material: PeerTlsMaterial;
      /** clusterId, when set, is demanded of every server this node dials (a peer certificate of this cluster). */
      clusterId?: string;
    }
  | { mode: 'insecure' };

export function peerServerCredentials(security: PeerSecurity): grpc.ServerCredentials {
  return security.mode === 'mtls' ? serverCredentials(security.material) : insecureServerCredentials();
}

export function peerClientCredentials(security: PeerSecurity): grpc.ChannelCredentials {
  if (security.mode === 'insecure') return insecureClientCredentials();
  return clientCredentials(
    security.material,
    security.clusterId === undefined ? {} : { peerOfCluster: security.clusterId },
  );
}

/**
 * peerTlsDialOptions is what a peer dial hands to tls.connect (directly, or through http2.connect): this node's
 * certificate, only servers signed by the cluster CA, the host name checked (against serverNameOverride when set,
 * as grpc.ssl_target_name_override does) and, with a cluster id, the server a peer of that cluster. Both lean
 * dials below take it from here, so their server-certificate checks are one and the same.
 */
function peerTlsDialOptions(
  security: Extract<PeerSecurity, { mode: 'mtls' }>,
  serverNameOverride: string | undefined,
): Pick<ConnectionOptions, 'ca' | 'cert' | 'key' | 'servername' | 'checkServerIdentity'> {
  const { material, clusterId } = security;
  return {
    ca: pem(material.ca, 'ca'),
    cert: pem(material.cert, 'cert'),
    key: pem(material.key, 'key'),
    ...(serverNameOverride ? { servername: serverNameOverride } : {}),
    ...(clusterId === undefined
      ? {}
      : {
          checkServerIdentity: (hostname: string, peer: PeerCertificate): Error | undefined =>
            serverIdentityProblem(hostname, peer, clusterId),
        }),
  };
}

/**
 * peerHttp2Dial opens the HTTP/2 sessions of lean-unary.ts with the same security as peerClientCredentials
 * (peerTlsDialOptions). `lookup`, when given, looks the host names up (a node gives its PeerNames' lookup, so
 * that no dial leaves a getaddrinfo its exit would wait for: transports/node/peer-names.ts).
 */
export function peerHttp2Dial(
  security: PeerSecurity,
  serverNameOverride?: string,
  lookup?: LookupFunction,
): (address: string) => http2.ClientHttp2Session {
  // Every session of lean-unary.ts asks to be served on the lean connection path (lean-connections.ts).
  const resolving = lookup ? { lookup, settings: LEAN_CONNECTION_SETTINGS } : { settings: LEAN_CONNECTION_SETTINGS };
  if (security.mode === 'insecure') return (address) => http2.connect(`http://${address}`, resolving);
  const options = peerTlsDialOptions(security, serverNameOverride);
  return (address) => http2.connect(`https://${address}`, { ...resolving, ...options });
}

/**
 * peerSocketDial opens the sockets of transports/h2/unary-client.ts with the same security as peerHttp2Dial: the
 * same tls.connect options (peerTlsDialOptions), the server name defaulting to the host unless it is an IP
 * address (as http2.connect sets it), and ALPN offering h2 only (the client checks the server chose it).
 */
export function peerSocketDial(
  security: PeerSecurity,
  serverNameOverride?: string,
  lookup?: LookupFunction,
): (address: string) => net.Socket {
  const resolving = lookup ? { lookup } : {};
  if (security.mode === 'insecure')
    return (address) => {
      const { host, port } = splitAddress(address);
      return net.connect({ host, port, ...resolving });
    };
  const options = peerTlsDialOptions(security, serverNameOverride);
  return (address) => {
    const { host, port } = splitAddress(address);
    return tlsConnect({
      host,
      port,
      ...(net.isIP(host) ? {} : { servername: host }),
      ...resolving,
      ...options,
      ALPNProtocols: ['h2'],
    });
  };
}

/** splitAddress reads host:port (an IPv6 host in brackets, as in a URL's authority). */
export function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const port = Number(address.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65_535)
    throw new Error(`${address} is not host:port`);
  const host = address.slice(0, colon);
  return { host: host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host, port };
}
