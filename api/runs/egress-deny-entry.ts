// One SVC_RUN_EGRESS_DENY entry read: an address, CIDR or host name, optionally with a port. Apart from
// egress-deny.ts (which reaches Redis and DNS) so the settings schema (../env-settings.ts) checks entries without
// loading either.
import type { EgressRule } from './egress-filter.js';
import { parseEgressRule } from './egress-filter.js';

/** NamedDeny is a deny entry given by host name (optionally one port of it). */
export interface NamedDeny {
  name: string;
  port?: number;
}

const hostNamePattern = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*\.?$/i;

/** parseDenyEntry reads `ip[/len][:port]` (an EgressRule) or `name[:port]`; it throws on anything else. */
export function parseDenyEntry(text: string): EgressRule | NamedDeny {
  const trimmed = text.trim();
  if (/^[\d./:]+$/.test(trimmed)) return parseEgressRule(trimmed);
  const match = /^([^:]+)(?::(\d{1,5}))?$/.exec(trimmed);
  if (!match || !hostNamePattern.test(match[1]!)) throw new Error(`not an address, CIDR or host name: ${text}`);
  const port = match[2] === undefined ? undefined : Number(match[2]);
  if (port !== undefined && (port < 1 || port > 65_535)) throw new Error(`port out of range: ${text}`);
  return { name: match[1]!.toLowerCase(), ...(port !== undefined ? { port } : {}) };
}
