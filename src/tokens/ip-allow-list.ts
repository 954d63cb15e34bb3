import * as ipaddr from 'ipaddr.js';
import { RequestValidationError, ValidationIssue } from '../common/errors';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses one allow-list entry (address or CIDR range); IPv4-mapped IPv6 is reduced to IPv4. */
/** Only the plain textual forms: dotted quad for IPv4 (no "1.2.3", octal or hex shorthands), RFC 4291 for IPv6. */
function isPlainAddress(text: string): boolean {
  if (text.includes(':')) {
    const v4tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
    if (/\./.test(text) && (!v4tail || !ipaddr.IPv4.isValidFourPartDecimal(v4tail[1]))) return false;
    return ipaddr.IPv6.isValid(text);
  }
  return ipaddr.IPv4.isValidFourPartDecimal(text);
}

function parseEntry(entry: string): Range | null {
  const text = entry.trim();
  try {
    if (text.includes('/')) {
      const [addrText, bitsText] = text.split('/', 2);
      if (!isPlainAddress(addrText) || !/^\d{1,3}$/.test(bitsText) || !ipaddr.isValidCIDR(text)) return null;
      const [addr, bits] = ipaddr.parseCIDR(text);
      if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
        return [(addr as ipaddr.IPv6).toIPv4Address(), bits - 96];
      }
      return [addr, bits];
    }
    if (!isPlainAddress(text)) return null;
    const addr = ipaddr.process(text);
    return [addr, addr.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return null;
  }
}

function format([addr, bits]: Range): string {
  const full = addr.kind() === 'ipv4' ? 32 : 128;
  return bits === full ? addr.toString() : `${addr.toString()}/${bits}`;
}

/**
 * Validates and normalizes an `allowed_ips` list. Each invalid entry is a 422 issue at
 * ["body", "allowed_ips", index]. Duplicates are dropped, order kept.
 */
export function normalizeAllowList(entries: string[], loc: (string | number)[] = ['body', 'allowed_ips']): string[] {
  const issues: ValidationIssue[] = [];
  const out: string[] = [];
  entries.forEach((entry, i) => {
    const range = parseEntry(entry);
    if (!range) {
      issues.push({ loc: [...loc, i], msg: 'Value error, expected an IPv4/IPv6 address or CIDR range', type: 'value_error', input: entry, ctx: {} });
      return;
    }
    const text = format(range);
    if (!out.includes(text)) out.push(text);
  });
  if (issues.length > 0) throw new RequestValidationError(issues);
  return out;
}

/**
 * The entries of `inner` that lie outside every range of `outer` (a token minted by a manager
 * token stays within the manager's allow-list, issue 43). Both lists are valid, normalized lists;
 * an empty `outer` allows everything, an empty `inner` (everywhere) lies outside any non-empty one.
 */
export function entriesOutside(outer: string[], inner: string[]): string[] {
  if (outer.length === 0) return [];
  const ranges = outer.map((e) => parseEntry(e)).filter((r): r is Range => r !== null);
  return inner.filter((entry) => {
    const r = parseEntry(entry);
    return !r || !ranges.some(([net, bits]) => net.kind() === r[0].kind() && r[1] >= bits && r[0].match(net, bits));
  });
}

/**
 * A compiled allow-list. An empty list allows every address. The client address is normalized
 * first (an IPv4-mapped IPv6 address such as ::ffff:127.0.0.1 matches 127.0.0.0/8).
 */
export class IpAllowList {
  private readonly ranges: Range[];

  constructor(entries: string[]) {
    this.ranges = entries.map((e) => parseEntry(e)).filter((r): r is Range => r !== null);
  }

  get allowsAll(): boolean {
    return this.ranges.length === 0;
  }

  allows(clientIp: string): boolean {
    if (this.allowsAll) return true;
    let addr: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      addr = ipaddr.process(clientIp.replace(/%.*$/, ''));
    } catch {
      return false;
    }
    return this.ranges.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits));
  }
}
