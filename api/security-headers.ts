import type { ServerResponse } from 'node:http';
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
  const apply = securityHeaderSetter(options);
  return (_req, res, next) => {
    apply(res);
    next();
  };
}

/** The same headers as a plain function, for handlers that answer outside the Express router. */
export function securityHeaderSetter(options: { https: boolean }): (res: ServerResponse) => void {
  const helmetHeaders = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: JSON_POLICY },
    strictTransportSecurity: options.https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
    // Servers and CORS fetches read the API (CORP does not apply to them); other sites may not embed our answers.
    crossOriginResourcePolicy: { policy: 'same-origin' },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
  });
  const { set, removed } = staticHeadersOf(helmetHeaders);
  // helmet's answer does not depend on the request (every directive here is a constant), so it is
  // worked out once: per request, the same headers go on in one loop instead of through helmet's
  // chain of a dozen middlewares, each a closure and a next() (bench:orders; scripts/bench/FINDINGS.md).
  const names = set.map(([name]) => name);
  const values = set.map(([, value]) => value);
  return (res) => {
    for (let i = 0; i < names.length; i++) res.setHeader(names[i], values[i]);
    for (let i = 0; i < removed.length; i++) res.removeHeader(removed[i]);
  };
}

/**
 * What a middleware that only sets constant headers does to a response: the headers it sets, in
 * order, and those it removes. Refuses one that does anything else (reads the request, answers,
 * fails, or goes on later): such a middleware cannot be replaced by its headers.
 */
export function staticHeadersOf(middleware: RequestHandler): { set: [string, string][]; removed: string[] } {
  const set: [string, string][] = [];
  const removed: string[] = [];
  const recorder = {
    setHeader(name: string, value: unknown) {
      if (typeof value !== 'string') throw new Error(`Header ${name}: not a constant string`);
      set.push([name, value]);
      return recorder;
    },
    removeHeader(name: string) {
      removed.push(name);
    },
  };
  const request = new Proxy(
    {},
    {
      get: (_t, key) => {
        throw new Error(`Header middleware read the request (${String(key)})`);
      },
    },
  );
  let passed = false;
  middleware(request as never, recorder as never, (err?: unknown) => {
    if (err) throw err;
    passed = true;
  });
  if (!passed) throw new Error('Header middleware did not pass the request on at once');
  return { set, removed };
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
 * The API reference (api/docs-page.ts, Swagger UI from our origin): our scripts and stylesheet
 * only; "try it" may call this origin and PUBLIC_BASE_URL's (the document's server).
 */
export function docsPolicy(publicBaseUrl: string): string {
  return serialize({
    'default-src': ["'none'"],
    'script-src': ["'self'"],
    'style-src': ["'self'"],
    'img-src': ["'self'", 'data:'],
    'connect-src': ["'self'", new URL(publicBaseUrl).origin],
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
