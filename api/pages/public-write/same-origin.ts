import type { Request } from 'express';
import { PublicWriteRefusal } from './refusal';

/**
 * Refuses a cross-site anonymous post (CSRF, and a third-party page spending a visitor's budget):
 * - Sec-Fetch-Site, when the browser sends it, must be `same-origin`;
 * - else Origin, when present, must be one of ours (`null`, an opaque origin, is not);
 * - else Referer, when present, must be of one of our origins;
 * - a form post that says none of these is refused (every current browser sends Origin on POST);
 *   JSON without them is a script, not a browser: a browser cannot send JSON cross-site without a
 *   CORS preflight, which we never grant.
 * Ours: PUBLIC_BASE_URL's origin and the origin the request was addressed to (its Host).
 */
export function checkSameOrigin(req: Request, publicBaseUrl: string, kind: 'form' | 'json'): void {
  const ours = new Set([new URL(publicBaseUrl).origin]);
  const host = req.get('host');
  if (host) ours.add(`${req.protocol}://${host}`);

  const fetchSite = req.get('sec-fetch-site');
  if (fetchSite) {
    if (fetchSite === 'same-origin') return;
    throw new PublicWriteRefusal('crossSite', `Cross-site post refused (Sec-Fetch-Site: ${fetchSite})`);
  }
  const origin = req.get('origin');
  if (origin) {
    if (ours.has(origin)) return;
    throw new PublicWriteRefusal('crossSite', 'Cross-site post refused (Origin is not this site)');
  }
  const referer = req.get('referer');
  if (referer) {
    let refererOrigin = '';
    try {
      refererOrigin = new URL(referer).origin;
    } catch {
      /* unparsable: refused below */
    }
    if (ours.has(refererOrigin)) return;
    throw new PublicWriteRefusal('crossSite', 'Cross-site post refused (Referer is not this site)');
  }
  if (kind === 'form') throw new PublicWriteRefusal('crossSite', 'A form post must come from this site (no Origin or Referer)');
}
