import type { Request, Response } from 'express';

/** The Cookie header as a map (first value of each name wins, as browsers send the most specific first). */
export function readCookies(req: Request): Map<string, string> {
  const out = new Map<string, string>();
  const header = req.headers.cookie;
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 1) continue;
    const name = part.slice(0, eq).trim();
    if (out.has(name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      out.set(name, decodeURIComponent(value));
    } catch {
      // A malformed value is no cookie of ours.
    }
  }
  return out;
}

export interface CookieNames {
  session: string;
  /** The sign-in form's own CSRF token, before there is a session (double submit). */
  preSession: string;
}

/**
 * Secure deployments use the __Host- prefix: the browser then accepts the cookie only over HTTPS,
 * from this host, for path / — a sibling subdomain cannot plant a session (fixation) with it.
 */
export function cookieNames(secure: boolean): CookieNames {
  return secure ? { session: '__Host-sg_session', preSession: '__Host-sg_pre' } : { session: 'sg_session', preSession: 'sg_pre' };
}

/** HttpOnly, SameSite=Lax, Path=/, Secure outside NETWORK=local; a session cookie of the browser (no Max-Age). */
export function setCookie(res: Response, name: string, value: string, secure: boolean): void {
  const attributes = [`${name}=${encodeURIComponent(value)}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (secure) attributes.push('Secure');
  res.append('Set-Cookie', attributes.join('; '));
}

export function clearCookie(res: Response, name: string, secure: boolean): void {
  const attributes = [`${name}=`, 'Path=/', 'HttpOnly', 'SameSite=Lax', 'Max-Age=0'];
  if (secure) attributes.push('Secure');
  res.append('Set-Cookie', attributes.join('; '));
}
