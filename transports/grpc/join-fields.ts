// JoinCluster's names and addresses, checked at the edge before the leader appends anything: a
// roster entry is permanent, so an address no peer can dial would leave a member that never reports
// its capabilities, and every later membership change would wait on it (issue 10, reproduction 3).
// The spec's forms: name (the joiner's permanent name), grpc_addr `host:port` (a DNS name or a literal
// IP), http_addr `scheme://host:port`.
import { DNS_NAME_CHARS_MAX, MEMBER_NAME_CHARS_MAX } from '../../engine/limits.js';
import type { JoinRequest } from '../../engine/rpc.js';

/** JOIN_NAME matches a member name: a node's configured name (cli/node/config.ts), 1-MEMBER_NAME_CHARS_MAX characters. */
export const JOIN_NAME = new RegExp(`^[A-Za-z0-9][A-Za-z0-9._-]{0,${MEMBER_NAME_CHARS_MAX - 1}}$`);
/**
 * JOIN_ADDRESS_BYTES_MAX bounds grpc_addr and http_addr (a 253-byte DNS name, a port and a scheme fit);
 * stricter than the engine's own bound (MEMBER_ADDRESS_CHARS_MAX, engine/limits.ts).
 */
export const JOIN_ADDRESS_BYTES_MAX = 300;

const DNS_LABEL = /^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6_BRACKETED = /^\[[0-9A-Fa-f:.]{2,45}\]$/;

/** hostProblem says why `host` is not a DNS name, an IPv4 address or a bracketed IPv6 address. */
function hostProblem(host: string): string | null {
  if (IPV4.test(host) || IPV6_BRACKETED.test(host)) return null;
  if (host.length === 0 || host.length > DNS_NAME_CHARS_MAX)
    return `its host must be 1-${DNS_NAME_CHARS_MAX} characters`;
  if (/^[\d.]+$/.test(host)) return 'its host is not a valid IPv4 address';
  if (!host.split('.').every((label) => DNS_LABEL.test(label)))
    return 'its host is not a DNS name (labels of A-Z a-z 0-9 -)';
  return null;
}

/** hostPortProblem says why value is not `host:port` with a port of 1-65535, or returns null. */
export function hostPortProblem(value: string): string | null {
  if (Buffer.byteLength(value) > JOIN_ADDRESS_BYTES_MAX) return `it is longer than ${JOIN_ADDRESS_BYTES_MAX} bytes`;
  const colon = value.lastIndexOf(':');
  if (colon <= 0) return 'it is not host:port';
  const host = value.slice(0, colon);
  const port = value.slice(colon + 1);
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65_535) return 'its port is not 1-65535';
  return hostProblem(host);
}

/** httpBaseProblem says why value is not `http://host:port` or `https://host:port`, or returns null. */
export function httpBaseProblem(value: string): string | null {
  const match = /^(https?):\/\/(.*)$/.exec(value);
  if (!match) return 'it is not scheme://host:port (scheme http or https)';
  return hostPortProblem(match[2]!);
}

/** joinRequestProblem names the first JoinRequest field that is not well formed, or returns null. */
export function joinRequestProblem(request: JoinRequest): string | null {
  if (!JOIN_NAME.test(request.name))
    return `name ${JSON.stringify(request.name.slice(0, 64))} must be 1-${MEMBER_NAME_CHARS_MAX} of A-Z a-z 0-9 . _ -, starting with a letter or digit`;
  const grpc = hostPortProblem(request.grpcAddr);
  if (grpc !== null) return `grpc_addr ${JSON.stringify(request.grpcAddr.slice(0, 64))}: ${grpc}`;
  const http = httpBaseProblem(request.httpAddr);
  if (http !== null) return `http_addr ${JSON.stringify(request.httpAddr.slice(0, 64))}: ${http}`;
  return null;
}
