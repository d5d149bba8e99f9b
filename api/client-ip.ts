import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';
import ipaddr from 'ipaddr.js';
import type { Config } from '../core/platform/config';

/** Whether the hop at `address`, `i` hops from the socket, may tell us the client's IP. */
export type TrustProxy = (address: string, i: number) => boolean;

/**
 * TRUST_PROXY compiled once (proxy-addr), with Express's meaning: nobody, a hop count, or
 * addresses/CIDR ranges. The app gives it to Express (`trust proxy`, so req.ip uses it) and to the
 * status endpoint's early path, so both read the same client IP.
 */
export function compileTrustProxy(trustProxy: Config['trustProxy']): TrustProxy {
  if (typeof trustProxy === 'number') return (_address, i) => i < trustProxy;
  return proxyaddr.compile(trustProxy === false ? [] : trustProxy);
}

/** The client's IP as req.ip gives it: the socket's address, or X-Forwarded-For's as far as trusted. */
export function clientIpOf(req: IncomingMessage, trust: TrustProxy): string {
  return proxyaddr(req, trust);
}

/**
 * The key a client IP's limits and budgets are kept under: an IPv4 address as it is (an
 * IPv4-mapped IPv6 one as its IPv4), an IPv6 address as its /64 network. One IPv6 subscriber (a
 * home line, a rented server) is given a whole /64: keyed by the full address, each of its 2^64
 * addresses had a budget of its own, and a loop from one machine walking its /64 was never refused.
 * Parsed by ipaddr.js (the parser proxy-addr uses for TRUST_PROXY); a text that is no IP is its own key.
 */
export function clientIpKey(ip: string | undefined): string {
  if (!ip) return 'unknown';
  if (!ipaddr.isValid(ip)) return ip;
  const address = ipaddr.process(ip);
  if (address.kind() === 'ipv4') return address.toString();
  const network = (address as ipaddr.IPv6).parts.slice(0, 4).map((part) => part.toString(16));
  return `${network.join(':')}::/64`;
}
