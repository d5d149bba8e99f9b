import dns from 'node:dns';
import net from 'node:net';
import type { LookupFunction } from 'node:net';
import { validationError } from '../platform/errors';

/**
 * SSRF guard for webhook URLs (design.md §6). A URL must be HTTPS and every address its host
 * resolves to must be public. It is checked when an endpoint is registered and again at connect
 * time against the address the socket actually uses (DNS rebinding): `guardedLookup` is passed to
 * the http(s) request, so the socket connects only to an address that passed the check.
 * `allowInsecure` (WEBHOOK_ALLOW_INSECURE) relaxes both rules for local development and tests.
 */

const V4: [string, number][] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];
const V6: [string, number][] = [
  ['::', 96], // unspecified, loopback (::1), IPv4-compatible
  ['64:ff9b::', 96], // NAT64 (would reach any IPv4 address, private ones included)
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 32], // Teredo
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 (embeds an IPv4 address)
  ['fc00::', 7], // unique local (ULA), incl. fd00:ec2::254 (AWS metadata over IPv6)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

/** A BlockList of `ranges`, only to be read. */
function blockList(ranges: [string, number][], family: 'ipv4' | 'ipv6'): Pick<net.BlockList, 'check'> {
  const list = new net.BlockList();
  for (const [address, prefix] of ranges) list.addSubnet(address, prefix, family);
  return list;
}

// Two lists: a BlockList holding IPv6 rules also matches IPv4 addresses as ::ffff:a.b.c.d.
const BLOCKED_V4 = blockList(V4, 'ipv4');
const BLOCKED_V6 = blockList(V6, 'ipv6');

/** The 8 16-bit groups of an IPv6 address (with an optional dotted IPv4 tail). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1].split('.').map(Number);
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : new Array(8 - h.length - t.length).fill('0');
  return [...h, ...zeros, ...t].map((g) => parseInt(g, 16));
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d), or null. */
function mappedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  if (g.length !== 8 || g.slice(0, 5).some((x) => x !== 0) || g[5] !== 0xffff) return null;
  return [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff].join('.');
}

/** True when a literal IP address must never be the target of a webhook. */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = net.isIP(bare);
  if (family === 0) return true; // not an address at all: refuse rather than guess
  if (family === 4) return BLOCKED_V4.check(bare, 'ipv4');
  const mapped = mappedIpv4(bare);
  if (mapped) return BLOCKED_V4.check(mapped, 'ipv4');
  return BLOCKED_V6.check(bare, 'ipv6');
}

export class ForbiddenAddressError extends Error {
  readonly code = 'EWEBHOOKFORBIDDEN';
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, a private, loopback, link-local or otherwise non-public address`);
    this.name = 'ForbiddenAddressError';
  }
}

export interface UrlGuardOptions {
  allowInsecure: boolean;
}

const MAX_URL_LENGTH = 2048;

/** Parses and checks the form of a webhook URL (no DNS). Throws VALIDATION_ERROR. */
export function parseWebhookUrl(text: string, opts: UrlGuardOptions): URL {
  const problem = (message: string) => validationError(`Invalid webhook url: ${message}`, [{ field: 'url', message }]);
  if (text.length > MAX_URL_LENGTH) throw problem(`must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw problem('must be an absolute URL');
  }
  if (url.protocol !== 'https:' && !(opts.allowInsecure && url.protocol === 'http:')) throw problem('must use https');
  if (url.username || url.password) throw problem('must not contain credentials');
  if (url.hash) throw problem('must not contain a fragment');
  if (!url.hostname) throw problem('must name a host');
  return url;
}

/** Strips the brackets of an IPv6 literal host. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Registration-time check: the URL's form, then every address its host resolves to
 * (dns.lookup, all addresses) must be public. Throws VALIDATION_ERROR.
 */
export async function assertWebhookUrlAllowed(text: string, opts: UrlGuardOptions): Promise<URL> {
  const url = parseWebhookUrl(text, opts);
  if (opts.allowInsecure) return url;
  const host = bareHost(url);
  const fail = (message: string) => validationError(`Invalid webhook url: ${message}`, [{ field: 'url', message }]);
  if (net.isIP(host)) {
    if (isForbiddenAddress(host)) throw fail('must not point at a private, loopback, link-local or metadata address');
    return url;
  }
  let addresses: dns.LookupAddress[];
  try {
    addresses = await dns.promises.lookup(host, { all: true, verbatim: true });
  } catch {
    throw fail(`host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw fail(`host ${host} does not resolve`);
  if (addresses.some((a) => isForbiddenAddress(a.address))) {
    throw fail('must not resolve to a private, loopback, link-local or metadata address');
  }
  return url;
}

/**
 * Connect-time check, for the `lookup` option of http(s).request: resolves the host, refuses if
 * any address is not public, and hands the socket exactly the checked address.
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { all: true, verbatim: true, family: options.family }, (err, addresses) => {
    if (err) return callback(err, '', 4);
    const list = addresses as dns.LookupAddress[];
    const bad = list.find((a) => isForbiddenAddress(a.address));
    if (list.length === 0 || bad) {
      return callback(new ForbiddenAddressError(hostname, bad?.address ?? 'nothing') as NodeJS.ErrnoException, '', 4);
    }
    if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    callback(null, list[0].address, list[0].family);
  });
};

/** Before connecting: an IP-literal host bypasses `lookup`, so it is checked here. */
export function assertLiteralHostAllowed(url: URL, opts: UrlGuardOptions): void {
  if (opts.allowInsecure) return;
  if (url.protocol !== 'https:') throw new Error('webhook URL is not https');
  const host = bareHost(url);
  if (net.isIP(host) && isForbiddenAddress(host)) throw new ForbiddenAddressError(host, host);
}
