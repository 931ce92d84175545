// IP allowlists: single addresses and CIDRs, IPv4 and IPv6. An IPv4-mapped IPv6 address (::ffff:1.2.3.4)
// is treated as the IPv4 address it carries, both in rules and in the client address.
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type IpRange = [Address, number];

/** parseAddress returns null for anything that is not one IP address (no CIDR, no zone index). */
export function parseAddress(text: string): Address | null {
  if (typeof text !== 'string' || text.length > 64 || !ipaddr.isValid(text)) return null;
  try {
    return ipaddr.process(text);
  } catch {
    return null;
  }
}

/** parseRange accepts "1.2.3.4", "10.0.0.0/8", "2001:db8::/32", "::ffff:10.0.0.0/104" and similar. */
export function parseRange(text: string): IpRange | null {
  if (typeof text !== 'string' || text.length > 64) return null;
  if (!text.includes('/')) {
    const address = parseAddress(text);
    return address ? [address, address.kind() === 'ipv4' ? 32 : 128] : null;
  }
  try {
    const [address, bits] = ipaddr.parseCIDR(text);
    if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return [(address as ipaddr.IPv6).toIPv4Address(), bits - 96];
    }
    return [address, bits];
  } catch {
    return null;
  }
}

/** normalizeRange returns the canonical text of a rule, or null if it is not a valid address or CIDR. */
export function normalizeRange(text: string): string | null {
  const range = parseRange(text);
  if (!range) return null;
  const [address, bits] = range;
  const full = address.kind() === 'ipv4' ? 32 : 128;
  return bits === full ? address.toString() : `${address.toString()}/${bits}`;
}

export function addressInRanges(address: string, rules: readonly string[]): boolean {
  const parsed = parseAddress(address);
  if (!parsed) return false;
  for (const rule of rules) {
    const range = parseRange(rule);
    if (range && range[0].kind() === parsed.kind() && parsed.match(range)) return true;
  }
  return false;
}

/** rangeWithin: every address of `inner` is in `outer` (CIDRs nest or are disjoint, never partly overlap). */
function rangeWithin(inner: IpRange, outer: IpRange): boolean {
  return inner[0].kind() === outer[0].kind() && inner[1] >= outer[1] && inner[0].match(outer);
}

/** halves splits a CIDR into its two CIDRs one bit longer. */
function halves([address, bits]: IpRange): [IpRange, IpRange] {
  const bytes = address.toByteArray();
  const low = bytes.slice();
  const high = bytes.slice();
  // Clear every bit from `bits` on for the low half; the high half also sets bit `bits`.
  for (let bit = bits; bit < bytes.length * 8; bit++) {
    low[bit >> 3]! &= ~(0x80 >> (bit & 7));
    high[bit >> 3]! &= ~(0x80 >> (bit & 7));
  }
  high[bits >> 3]! |= 0x80 >> (bits & 7);
  return [
    [ipaddr.fromByteArray(low), bits + 1],
    [ipaddr.fromByteArray(high), bits + 1],
  ];
}

/**
 * rangeCovered: every address of `range` is in the union of `rules`. A range no single rule holds is covered
 * only if rules strictly inside it fill it: split it in halves until each half is held by one rule or meets none.
 * Each split is driven by a rule inside the range, so the work is bounded by rules × prefix bits.
 */
function rangeCovered(range: IpRange, rules: readonly IpRange[]): boolean {
  if (rules.some((rule) => rangeWithin(range, rule))) return true;
  if (!rules.some((rule) => rangeWithin(rule, range))) return false;
  const [low, high] = halves(range);
  return rangeCovered(low, rules) && rangeCovered(high, rules);
}

/** rulesOutside returns the entries of `inner` that reach addresses `outer` does not allow. */
export function rulesOutside(inner: readonly string[], outer: readonly string[]): string[] {
  const outerRanges = outer.map(parseRange).filter((range): range is IpRange => range !== null);
  return inner.filter((rule) => {
    const range = parseRange(rule);
    return range === null || !rangeCovered(range, outerRanges);
  });
}
