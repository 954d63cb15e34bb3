import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

/**
 * Addresses the service never sends a request to (issue 46, decision 0052): link-local ranges
 * (169.254.0.0/16 and fe80::/10, where every cloud's instance metadata service answers) and the
 * metadata addresses outside them (AWS's IPv6 fd00:ec2::254, Alibaba's 100.100.100.200), also
 * written as IPv4-mapped IPv6. Loopback and private ranges stay allowed: a local Ollama or MinIO is
 * a normal setup. Host names that name a metadata service are refused as well.
 */
const METADATA_ADDRESSES = ['fd00:ec2::254', '100.100.100.200'].map((a) => ipaddr.parse(a).toNormalizedString());
const METADATA_NAMES = /^(metadata|metadata\.google\.internal|instance-data(\.ec2\.internal)?)\.?$/i;

/** True when `address` (an IP literal, IPv6 with or without brackets) is link-local or a metadata address. */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!ipaddr.isValid(bare)) return false;
  const ip = ipaddr.process(bare); // IPv4-mapped IPv6 → IPv4
  return ip.range() === 'linkLocal' || METADATA_ADDRESSES.includes(ip.toNormalizedString());
}

/** True when a host (name or IP literal) is refused as an outbound destination without resolving it. */
export function isForbiddenHost(host: string): boolean {
  return METADATA_NAMES.test(host) || isForbiddenAddress(host);
}

/** The sentence a refused setting or request gets. */
export const FORBIDDEN_HOST = 'must not point at a link-local or cloud metadata address (169.254.0.0/16, fe80::/10, fd00:ec2::254)';

/** The hosts a MongoDB connection string names (mongodb://h1:p,h2/db → [h1, h2]). */
export function mongoHosts(uri: string): string[] {
  const m = /^mongodb(?:\+srv)?:\/\/(?:[^@/?#]*@)?([^/?#]*)/i.exec(uri);
  if (!m) return [];
  return m[1]
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean)
    .map((h) => (h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : h.replace(/:\d*$/, '')));
}

/**
 * Resolves a URL's host and refuses it when any address it resolves to is forbidden (so a name
 * that points at 169.254.169.254 is caught too). Throws an Error naming the rule.
 */
export async function assertOutboundUrl(url: string): Promise<void> {
  const host = new URL(url).hostname;
  if (isForbiddenHost(host)) throw new Error(`the URL ${FORBIDDEN_HOST}`);
  if (ipaddr.isValid(host.replace(/^\[|\]$/g, ''))) return;
  const addresses = await lookup(host, { all: true });
  if (addresses.some((a) => isForbiddenAddress(a.address))) throw new Error(`the URL's host resolves to a link-local or metadata address, which the service does not call`);
}
