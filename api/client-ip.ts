import type { IncomingMessage } from 'node:http';
import proxyaddr from 'proxy-addr';
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
