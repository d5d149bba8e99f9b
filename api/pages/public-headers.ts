import type { ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/**
 * Headers of every public (unauthenticated, browser-facing) page and its assets (design.md §6a):
 * a strict CSP (only our own scripts, styles and connections; no inline script), no framing by
 * default, no indexing, no referrer leaking the token-bearing URL to other sites.
 * Wave 3's checkout and dashboard mount the same middleware.
 */
export function publicPageHeaders(options: { frameAncestors: string }): RequestHandler {
  const apply = publicPageHeaderSetter(options);
  return (_req, res, next) => {
    apply(res);
    next();
  };
}

/** The same headers as a plain function, for handlers that run their steps in one layer (api/pages/index.ts). */
export function publicPageHeaderSetter(options: { frameAncestors: string }): (res: ServerResponse) => void {
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    `frame-ancestors ${options.frameAncestors}`,
  ].join('; ');
  const noFraming = options.frameAncestors.trim() === "'none'";
  return (res) => {
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('X-Robots-Tag', 'noindex, nofollow');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    res.setHeader('Cross-Origin-Resource-Policy', 'same-origin');
    res.setHeader('Permissions-Policy', 'camera=(), microphone=(), geolocation=(), payment=()');
    // The app-wide security headers (api/security-headers.ts) deny framing; a page a shop may embed takes that back.
    if (noFraming) res.setHeader('X-Frame-Options', 'DENY');
    else res.removeHeader('X-Frame-Options');
  };
}
