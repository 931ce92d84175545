// clientIp is the socket peer, unless that peer is a trusted proxy: then X-Forwarded-For is walked from the
// right (the hop nearest us) past trusted proxies, and the first untrusted hop is the client.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import { addressInRanges, parseAddress } from './ip-allowlist.js';

/** forwardedHopsMax bounds how many X-Forwarded-For entries are examined. */
export const forwardedHopsMax = 16;

export function canonicalAddress(text: string): string {
  return parseAddress(text)?.toString() ?? text;
}

/** peerBySocket keeps each connection's canonical peer address: a keep-alive connection asks once, not per request. */
const peerBySocket = new WeakMap<Socket, string>();

function socketPeer(socket: Socket): string {
  let peer = peerBySocket.get(socket);
  if (peer === undefined) {
    peer = canonicalAddress(socket.remoteAddress ?? '');
    // remoteAddress is undefined once the socket is gone; only a real answer is kept.
    if (socket.remoteAddress !== undefined) peerBySocket.set(socket, peer);
  }
  return peer;
}

export function clientIp(req: IncomingMessage, trustedProxies: readonly string[]): string {
  const peer = socketPeer(req.socket);
  if (trustedProxies.length === 0 || !addressInRanges(peer, trustedProxies)) return peer;
  const header = req.headers['x-forwarded-for'];
  const joined = Array.isArray(header) ? header.join(',') : (header ?? '');
  const hops = joined
    .split(',')
    .map((hop) => hop.trim())
    .filter(Boolean)
    .slice(-forwardedHopsMax);
  for (let index = hops.length - 1; index >= 0; index--) {
    const hop = parseAddress(hops[index]!);
    // A malformed hop ends the walk: anything left of it was written by someone we cannot vouch for.
    if (!hop) return peer;
    const text = hop.toString();
    if (!addressInRanges(text, trustedProxies)) return text;
  }
  return hops.length > 0 ? canonicalAddress(hops[0]!) : peer;
}
