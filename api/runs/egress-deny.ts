// The destinations no networked run may reach beyond the egress filter's standing denials (egress-filter.ts):
// the configured ones (SVC_RUN_EGRESS_DENY), the cluster's members (the node's live roster, read again at every
// resolution, so a member that joins or moves is denied from the next run on) and the Redis host. The members'
// advertised ports and the Redis port are `services`: denied before the allow entries, so no allow entry (a
// broad internal CIDR) opens them; the rest after, so an allow entry can open another port of such a host.
//
// Members are usually advertised by name (a pod under a Kubernetes headless service; `localhost` under `make
// cluster`), so names are resolved with the host's resolver (dns.lookup: /etc/hosts, then DNS) when the worker
// starts and again when each networked run starts: a run's rules hold the addresses its members had then. A run
// lives minutes, so a member that moves during it is not followed; where pods move, deny the pod network's CIDR
// in SVC_RUN_EGRESS_DENY as well.
//
// A name that does not resolve never opens what it names: its last addresses are kept (a DNS hiccup, a pod
// being rescheduled), and a name never resolved at all refuses networked runs with EGRESS_DENY_UNRESOLVED until
// it does, since what it would deny is unknown.
//
// IPv6: networked runs have no IPv6 route (slirp4netns runs without --enable-ipv6 and forwards no IPv6; a run's
// connect to an IPv6 address fails ENETUNREACH, test/api/run-isolation.test.ts), so only IPv4 addresses get
// rules (the filter is iptables, IPv4); a name's IPv6 addresses are listed in the run's `started` event as
// resolved, unreachable anyway. Were runs ever given IPv6, these would need ip6tables rules first.
import { redisAddresses, sentinelServers } from '../redis/redis-target.js';
import dns from 'node:dns/promises';
import net from 'node:net';
import type { EgressRule } from './egress-filter.js';
import { runEgressResolveTimeoutMs } from '../limits.js';

/** HostResolver answers every address of a name (both families); it rejects when the name cannot be resolved. */
export type HostResolver = (host: string) => Promise<string[]>;

/** dnsResolver is the real resolver: getaddrinfo through dns.lookup, so /etc/hosts counts as it does for a client. */
export const dnsResolver: HostResolver = async (host) =>
  (await dns.lookup(host, { all: true, verbatim: true })).map((found) => found.address);

export { parseDenyEntry, type NamedDeny } from './egress-deny-entry.js';
import { parseDenyEntry, type NamedDeny } from './egress-deny-entry.js';

const defaultPorts: Record<string, number> = { 'http:': 80, 'https:': 443, 'redis:': 6379, 'rediss:': 6379 };

/**
 * addressEndpoints picks the host (and port, a URL's default one if it names none) out of member addresses
 * (`host:port`, `[v6]:port`, URLs): names and IPv4 and IPv6 literals (without brackets), lower-cased, once each.
 * Anything without a host is skipped.
 */
export function addressEndpoints(addresses: readonly string[]): Array<{ host: string; port?: number }> {
  const endpoints = new Map<string, { host: string; port?: number }>();
  for (const address of addresses) {
    let host: string | undefined;
    let port: number | undefined;
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(address)) {
      try {
        const url = new URL(address);
        host = url.hostname;
        port = url.port ? Number(url.port) : defaultPorts[url.protocol];
      } catch {
        host = undefined;
      }
    } else {
      const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(address) ?? /^([^:[\]]+)(?::(\d+))?$/.exec(address);
      host = match?.[1];
      port = match?.[2] === undefined ? undefined : Number(match[2]);
    }
    host = host?.replace(/^\[|\]$/g, '').toLowerCase();
    if (!host) continue;
    if (port !== undefined && !(port >= 1 && port <= 65_535)) port = undefined;
    const endpoint = { host, ...(port !== undefined ? { port } : {}) };
    endpoints.set(`${host} ${port ?? ''}`, endpoint);
  }
  return [...endpoints.values()];
}

/** addressHosts are addressEndpoints' hosts, once each. */
export function addressHosts(addresses: readonly string[]): string[] {
  return [...new Set(addressEndpoints(addresses).map((endpoint) => endpoint.host))];
}

/** ruleText writes a rule as it is configured: `cidr` or `cidr:port`. */
export function ruleText(rule: EgressRule): string {
  return rule.port === undefined ? rule.cidr : `${rule.cidr}:${rule.port}`;
}

export interface EgressDenySources {
  /** configured are SVC_RUN_EGRESS_DENY's entries: `ip[/len][:port]` or `name[:port]` (parsed at once: throws). */
  configured?: readonly string[];
  /** clusterAddresses answers the members' addresses (host:port or URLs) now; read at every resolution. */
  clusterAddresses?: () => readonly string[];
  /**
   * redisUrl's host is denied too; for a Sentinel URL, every sentinel and the servers they report (the primary
   * and its replicas, asked again at every resolution; the last answer is kept when no sentinel answers).
   */
  redisUrl?: string;
  /** resolve answers a name's addresses (default dnsResolver; tests give their own). */
  resolve?: HostResolver;
  /** timeoutMs bounds one name's resolution (default runEgressResolveTimeoutMs). */
  timeoutMs?: number;
}

export interface ResolvedDeny {
  /** services are the members' advertised ports and the Redis port (IPv4): denied before any allow entry. */
  services: EgressRule[];
  /** rules are the rest (whole member and Redis hosts, configured entries): denied after the allow entries. */
  rules: EgressRule[];
  /** names are the names resolved and the addresses each stands for (both families; `stale`: kept from before). */
  names: Array<{ name: string; addresses: string[]; stale?: true }>;
}

/** EgressDenyUnresolved: a name to deny has never resolved; networked runs are refused until it does. */
export class EgressDenyUnresolved extends Error {
  readonly code = 'EGRESS_DENY_UNRESOLVED';
  constructor(readonly failures: Array<{ name: string; reason: string }>) {
    super(
      `cannot tell what to deny runs: ${failures.map((failure) => `${failure.name} (${failure.reason})`).join(', ')} never resolved`,
    );
  }
}

export interface EgressDenyList {
  /** resolve answers the rules for a run starting now, or throws EgressDenyUnresolved. */
  resolve(): Promise<ResolvedDeny>;
}

/** egressDenyList parses the configured entries now (throwing on a malformed one) and resolves names on demand. */
export function egressDenyList(sources: EgressDenySources): EgressDenyList {
  const fixedRules: EgressRule[] = [];
  const fixedNames: NamedDeny[] = [];
  for (const entry of sources.configured ?? []) {
    const parsed = parseDenyEntry(entry);
    if ('cidr' in parsed) fixedRules.push(parsed);
    else fixedNames.push(parsed);
  }
  const redisEndpoints = sources.redisUrl ? addressEndpoints(redisAddresses(sources.redisUrl)) : [];
  let redisServersLast: string[] = [];
  const redisServers = async (): Promise<string[]> => {
    if (!sources.redisUrl) return [];
    redisServersLast = await sentinelServers(sources.redisUrl).catch(() => redisServersLast);
    return redisServersLast;
  };
  const resolveHost = sources.resolve ?? dnsResolver;
  const timeoutMs = sources.timeoutMs ?? runEgressResolveTimeoutMs;
  /** lastGood keeps each name's last addresses, so a failed lookup denies what the name stood for before. */
  const lastGood = new Map<string, string[]>();

  const lookup = async (name: string): Promise<string[]> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const addresses = await Promise.race([
        resolveHost(name),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
      const valid = addresses.filter((address) => net.isIP(address) !== 0);
      if (valid.length === 0) throw new Error('no addresses');
      return valid;
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    async resolve() {
      const rules = [...fixedRules];
      const services: EgressRule[] = [];
      /** named: entries to resolve; `service` ones deny one port before the allow entries. */
      const named: Array<NamedDeny & { service?: true }> = [...fixedNames];
      const endpoints = [
        ...addressEndpoints(sources.clusterAddresses?.() ?? []),
        ...redisEndpoints,
        ...addressEndpoints(await redisServers()),
      ];
      for (const { host, port } of endpoints) {
        if (net.isIPv6(host)) continue; // runs have no IPv6 route: nothing to deny
        if (net.isIPv4(host)) {
          rules.push({ cidr: `${host}/32` });
          if (port !== undefined) services.push({ cidr: `${host}/32`, port });
        } else {
          named.push({ name: host });
          if (port !== undefined) named.push({ name: host, port, service: true });
        }
      }
      const distinct = [...new Set(named.map((entry) => entry.name))];
      const failures: Array<{ name: string; reason: string }> = [];
      const names: ResolvedDeny['names'] = [];
      const outcomes = await Promise.allSettled(distinct.map((name) => lookup(name)));
      const addressesOf = new Map<string, string[]>();
      outcomes.forEach((outcome, index) => {
        const name = distinct[index]!;
        if (outcome.status === 'fulfilled') {
          lastGood.set(name, outcome.value);
          addressesOf.set(name, outcome.value);
          names.push({ name, addresses: outcome.value });
          return;
        }
        const previous = lastGood.get(name);
        const reason = (outcome.reason as NodeJS.ErrnoException).code ?? (outcome.reason as Error).message;
        if (previous) {
          addressesOf.set(name, previous);
          names.push({ name, addresses: previous, stale: true });
        } else failures.push({ name, reason });
      });
      if (failures.length > 0) throw new EgressDenyUnresolved(failures);
      for (const entry of named) {
        for (const address of addressesOf.get(entry.name)!) {
          if (!net.isIPv4(address)) continue;
          const rule = { cidr: `${address}/32`, ...(entry.port !== undefined ? { port: entry.port } : {}) };
          (entry.service ? services : rules).push(rule);
        }
      }
      const unique = (list: EgressRule[]) => [...new Map(list.map((rule) => [ruleText(rule), rule])).values()];
      return { services: unique(services), rules: unique(rules), names };
    },
  };
}
