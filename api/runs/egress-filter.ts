// The egress filter of runs with network: a run's traffic leaves through its user-mode network stack
// (slirp4netns), which runs as the run's own host uid, so host firewall rules that match that owner decide where
// it may go. Denied: the host itself (every local address: loopback, the host's interfaces, hence a Redis or a
// node listening on any of them), link-local (169.254/16: cloud metadata), multicast and 0/8, plus the addresses
// the worker is told to deny for each run (egress-deny.ts: the cluster's members, the Redis host, configured
// ones, resolved when the run starts). An allow entry (ip or cidr, optionally :port) opens one destination past
// those denials, e.g. an internal gitea.
//
// Rules (iptables, IPv4; runs are offered no IPv6):
//   OUTPUT        -m owner --uid-owner <run uid range> -j SVC-RUNS
//   SVC-RUNS      -m owner --uid-owner <uid> -j SVC-RUN-<uid>     (one per active run, inserted at the top)
//                 ... then the standing denials, appended once
//   SVC-RUN-<uid> service denials -j REJECT (the members' and Redis's ports: no allow entry opens them); DNS and
//                 allow entries -j ACCEPT; deny entries -j REJECT (then back to SVC-RUNS's standing denials)
// A run whose rules cannot be installed does not get the network (its run fails with NETWORK_POLICY_UNAVAILABLE).
import { execFile } from 'node:child_process';
import net from 'node:net';

export const runsChain = 'SVC-RUNS';
const runChain = (uid: number) => `SVC-RUN-${uid}`;

/** standingDenialsText states the standing denials in a run's `started` event. */
export const standingDenialsText = [
  "the host's own addresses",
  '127.0.0.0/8',
  '169.254.0.0/16',
  '0.0.0.0/8',
  '224.0.0.0/4',
  '255.255.255.255/32',
];

/** standingDenials are rejected for every run uid after its own chain (which may accept allow entries first). */
const standingDenials: string[][] = [
  ['-m', 'addrtype', '--dst-type', 'LOCAL'],
  ['-d', '127.0.0.0/8'],
  ['-d', '169.254.0.0/16'],
  ['-d', '0.0.0.0/8'],
  ['-d', '224.0.0.0/4'],
  ['-d', '255.255.255.255/32'],
];

export interface EgressRule {
  /** cidr is an IPv4 address or CIDR. */
  cidr: string;
  /** port narrows the rule to one TCP/UDP port. */
  port?: number;
}

/** parseEgressRule reads `ip`, `ip/len`, `ip:port` or `ip/len:port` (IPv4); it throws on anything else. */
export function parseEgressRule(text: string): EgressRule {
  const match = /^(\d{1,3}(?:\.\d{1,3}){3})(\/\d{1,2})?(?::(\d{1,5}))?$/.exec(text.trim());
  if (!match || !net.isIPv4(match[1]!))
    throw new Error(`not an IPv4 address, CIDR or address:port: ${JSON.stringify(text)}`);
  const prefix = match[2] ? Number(match[2].slice(1)) : 32;
  const port = match[3] ? Number(match[3]) : undefined;
  if (prefix > 32 || (port !== undefined && (port < 1 || port > 65_535)))
    throw new Error(`out of range: ${JSON.stringify(text)}`);
  return { cidr: `${match[1]}/${prefix}`, ...(port !== undefined ? { port } : {}) };
}

/**
 * rejections are the rules that refuse what match matches: TCP with a reset, so that the connection slirp4netns
 * makes for the run fails at once (and the run's connect with it) instead of waiting out a timeout; the rest
 * with an ICMP port-unreachable.
 */
function rejections(match: string[]): string[][] {
  if (match.includes('-p')) {
    return [[...match, '-j', 'REJECT', ...(match.includes('tcp') ? ['--reject-with', 'tcp-reset'] : [])]];
  }
  return [
    [...match, '-p', 'tcp', '-j', 'REJECT', '--reject-with', 'tcp-reset'],
    [...match, '-j', 'REJECT'],
  ];
}

function ruleMatches(rule: EgressRule): string[][] {
  if (rule.port === undefined) return [['-d', rule.cidr]];
  return ['tcp', 'udp'].map((protocol) => ['-d', rule.cidr, '-p', protocol, '--dport', String(rule.port)]);
}

interface Outcome {
  ok: boolean;
  stderr: string;
}

function iptables(args: string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile('iptables', ['-w', '5', ...args], { timeout: 15_000 }, (error, _stdout, stderr) => {
      resolve({ ok: !error, stderr: String(stderr).trim() });
    });
  });
}

async function must(args: string[]): Promise<void> {
  const outcome = await iptables(args);
  if (!outcome.ok) throw new Error(`iptables ${args.join(' ')}: ${outcome.stderr}`);
}

/** ensure adds a rule unless an identical one exists (-C), at the top (-I) or the end (-A). */
async function ensure(chain: string, rule: string[], where: 'top' | 'end'): Promise<void> {
  if ((await iptables(['-C', chain, ...rule])).ok) return;
  await must(where === 'top' ? ['-I', chain, '1', ...rule] : ['-A', chain, ...rule]);
}

export interface EgressFilterOptions {
  uidFirst: number;
  uidCount: number;
  allow: EgressRule[];
  /** dnsServers may be reached on port 53 even when local (a host resolver on 127.0.0.53). */
  dnsServers: string[];
}

/** RunDenials are one run's denials beyond the standing ones (egress-deny.ts resolves them as the run starts). */
export interface RunDenials {
  /** services are refused before any allow entry (the members' and Redis's ports). */
  services: readonly EgressRule[];
  /** rules are refused after the allow entries. */
  rules: readonly EgressRule[];
}

export interface EgressFilter {
  /** open installs the run uid's rules (service denials, the allow entries, then the rest); close removes them. */
  open(uid: number, deny: RunDenials): Promise<void>;
  close(uid: number): Promise<void>;
}

/**
 * installEgressFilter sets up the standing rules (idempotent: other workers on the host share them) and answers
 * the per-run half; it throws when iptables is missing or refuses (not root, no netfilter).
 */
export async function installEgressFilter(options: EgressFilterOptions): Promise<EgressFilter> {
  const range = `${options.uidFirst}-${options.uidFirst + options.uidCount - 1}`;
  const created = await iptables(['-N', runsChain]);
  if (!created.ok && !/exists/i.test(created.stderr)) throw new Error(`iptables -N ${runsChain}: ${created.stderr}`);
  for (const rule of standingDenials.flatMap(rejections)) await ensure(runsChain, rule, 'end');
  await ensure('OUTPUT', ['-m', 'owner', '--uid-owner', range, '-j', runsChain], 'top');

  const accepts = [
    ...options.dnsServers
      .filter((address) => net.isIPv4(address))
      .flatMap((address) => ruleMatches({ cidr: `${address}/32`, port: 53 })),
    ...options.allow.flatMap(ruleMatches),
  ];
  const jump = (uid: number) => ['-m', 'owner', '--uid-owner', String(uid), '-j', runChain(uid)];
  const removeJumps = async (uid: number) => {
    for (let index = 0; index < 16 && (await iptables(['-D', runsChain, ...jump(uid)])).ok; index++) {
      /* all copies */
    }
  };
  return {
    async open(uid, deny) {
      const chain = runChain(uid);
      // A chain left by a crashed worker is emptied and reused.
      const made = await iptables(['-N', chain]);
      if (!made.ok) {
        if (!/exists/i.test(made.stderr)) throw new Error(`iptables -N ${chain}: ${made.stderr}`);
        await must(['-F', chain]);
      }
      for (const rule of deny.services.flatMap(ruleMatches).flatMap(rejections)) await must(['-A', chain, ...rule]);
      for (const match of accepts) await must(['-A', chain, ...match, '-j', 'ACCEPT']);
      for (const rule of deny.rules.flatMap(ruleMatches).flatMap(rejections)) await must(['-A', chain, ...rule]);
      await removeJumps(uid);
      await must(['-I', runsChain, '1', ...jump(uid)]);
    },
    async close(uid) {
      await removeJumps(uid);
      await iptables(['-F', runChain(uid)]);
      await iptables(['-X', runChain(uid)]);
    },
  };
}
