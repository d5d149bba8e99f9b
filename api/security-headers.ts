import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import helmet from 'helmet';

/**
 * Security headers on every answer (helmet: nosniff, frame and referrer policies, …; HSTS when the
 * deployment is reached over https) and a Content-Security-Policy per surface. The default policy
 * suits JSON: nothing may load. A surface that renders HTML replaces it with its own
 * (`res.setHeader('Content-Security-Policy', …)` wins over this default): the docs page and
 * bull-board here, the public payment pages in their own module.
 */
export function securityHeaders(options: { https: boolean }): RequestHandler {
  return helmet({
    contentSecurityPolicy: { useDefaults: false, directives: JSON_POLICY },
    strictTransportSecurity: options.https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
    // Servers and CORS fetches read the API (CORP does not apply to them); other sites may not embed our answers.
    crossOriginResourcePolicy: { policy: 'same-origin' },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
  });
}

type Directives = Record<string, string[]>;

/** JSON answers (and plain-text errors): nothing to load, nothing to frame. */
const JSON_POLICY: Directives = {
  'default-src': ["'none'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
};

function serialize(directives: Directives): string {
  return Object.entries(directives)
    .map(([name, values]) => `${name} ${values.join(' ')}`)
    .join('; ');
}

/**
 * The docs page: static HTML with inline <style> blocks and no script. The styles are allowed by
 * their hashes, so nothing injected into the page could style or script it.
 */
export function docsPolicy(html: string): string {
  const hashes = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => `'sha256-${createHash('sha256').update(m[1]).digest('base64')}'`);
  return serialize({
    'default-src': ["'none'"],
    'style-src': hashes.length ? hashes : ["'none'"],
    'img-src': ["'self'", 'data:'],
    'frame-ancestors': ["'none'"],
    'base-uri': ["'none'"],
    'form-action': ["'none'"],
  });
}

/**
 * bull-board: its own scripts and stylesheet from our origin (it sets `<base href>` to its path),
 * React's inline style attributes, its JSON API, and the Google Fonts stylesheet its page links
 * (an operator surface; no script may come from anywhere but our origin).
 */
export const BULL_BOARD_POLICY = serialize({
  'default-src': ["'none'"],
  'script-src': ["'self'"],
  'style-src': ["'self'", "'unsafe-inline'", 'https://fonts.googleapis.com'],
  'img-src': ["'self'", 'data:'],
  'font-src': ["'self'", 'data:', 'https://fonts.gstatic.com'],
  'connect-src': ["'self'"],
  'manifest-src': ["'self'"],
  'base-uri': ["'self'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
});
