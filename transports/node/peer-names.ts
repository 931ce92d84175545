// PeerNames looks up the host names of the addresses a node dials (its peers' gRPC and HTTP addresses) with
// c-ares (node:dns's Resolver): queries on the event loop, each attempt bounded by nameLookupTimeoutMs,
// NAME_LOOKUP_TRIES attempts, and every query still waiting cancelled by close().
//
// Why not dns.lookup, what net.connect uses when given no `lookup`: it calls getaddrinfo in libuv's threadpool
// (four threads), where a lookup cannot be cancelled, and process.exit joins that pool, so it waits for every
// lookup running or queued there. A peer whose name the DNS does not answer (a stopped podman container's alias
// takes 25 s to fail) had a stopped node's process live on for tens of seconds after its stop, past its pod's
// termination grace (`make image-test`: exit 137), and the lookups queued the WAL's file-system work behind them.
//
// A name the DNS says does not exist (ENOTFOUND, ENODATA) is looked up once more with dns.lookup, for what only
// the system's resolver knows (/etc/hosts, `localhost`): the DNS has just answered, so that lookup does not
// wait on it. A DNS that does not answer fails the lookup (ETIMEOUT) without that second lookup.
import { lookup as systemLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';

/** NAME_LOOKUP_TRIES is how many times c-ares asks each name server before the lookup fails. */
export const NAME_LOOKUP_TRIES = 2;

/** NOT_IN_DNS are the c-ares answers that say the DNS answered and holds no such record. */
const NOT_IN_DNS = new Set(['ENOTFOUND', 'ENODATA']);

/** LookupCallback is net.connect's `lookup` callback, for one address or (options.all) all of them. */
export type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

export class PeerNames {
  private readonly resolver: Resolver;
  private closed = false;

  /** servers, when given, are the name servers to ask (ip or ip:port) instead of the system's (/etc/resolv.conf). */
  constructor(nameLookupTimeoutMs: number, servers?: readonly string[]) {
    this.resolver = new Resolver({ timeout: nameLookupTimeoutMs, tries: NAME_LOOKUP_TRIES });
    if (servers !== undefined) this.resolver.setServers(servers);
  }

  /** lookup is a `lookup` for net.connect, tls.connect, http2.connect and undici's connect options. */
  readonly lookup = (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    this.addresses(hostname, familyOf(options.family)).then(
      (found) => {
        if (options.all === true) callback(null, found);
        else callback(null, found[0]!.address, found[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, options.all === true ? [] : ''),
    );
  };

  /** addresses are `hostname`'s addresses of `family` (0: both, IPv4 first); at least one, or it rejects. */
  async addresses(hostname: string, family: 0 | 4 | 6 = 0): Promise<LookupAddress[]> {
    if (this.closed) throw lookupError(hostname, 'ECANCELLED', 'the node is stopping');
    const literal = isIP(hostname);
    if (literal !== 0) return [{ address: hostname, family: literal }];
    const queries: Array<Promise<LookupAddress[]>> = [];
    if (family !== 6)
      queries.push(this.resolver.resolve4(hostname).then((found) => found.map((address) => ({ address, family: 4 }))));
    if (family !== 4)
      queries.push(this.resolver.resolve6(hostname).then((found) => found.map((address) => ({ address, family: 6 }))));
    const answers = await Promise.allSettled(queries);
    const found = answers.flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
    if (found.length > 0) return found;
    const errors = answers.flatMap((answer) =>
      answer.status === 'rejected' ? [answer.reason as NodeJS.ErrnoException] : [],
    );
    const notInDns = errors.every((err) => NOT_IN_DNS.has(err.code ?? ''));
    if (!notInDns || this.closed) {
      const err = errors.find((e) => !NOT_IN_DNS.has(e.code ?? '')) ?? errors[0]!;
      throw lookupError(hostname, err.code ?? 'EAI_FAIL', err.message);
    }
    return await new Promise((resolve, reject) => {
      systemLookup(hostname, { all: true, family }, (err, addresses) => {
        if (err) reject(lookupError(hostname, err.code ?? 'ENOTFOUND', err.message));
        else if (addresses.length === 0) reject(lookupError(hostname, 'ENOTFOUND', 'no address'));
        else resolve(addresses);
      });
    });
  }

  /** close cancels every query still waiting (they fail ECANCELLED) and fails the lookups asked for after it. */
  close(): void {
    this.closed = true;
    this.resolver.cancel();
  }
}

function familyOf(family: LookupOptions['family']): 0 | 4 | 6 {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}

function lookupError(hostname: string, code: string, why: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`cannot look up ${hostname}: ${why} (${code})`);
  err.code = code;
  return err;
}
