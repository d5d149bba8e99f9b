import type { Request, Response } from 'express';
import { parse } from 'cookie';

/**
 * The Cookie header as a map (first value of each name wins, as browsers send the most specific
 * first), parsed by the `cookie` package (the parser express itself uses); a value that does not
 * decode is kept as sent. Copied into a Map: the package's plain object would answer prototype names.
 */
export function readCookies(req: Request): Map<string, string> {
  const header = req.headers.cookie;
  return new Map(header ? Object.entries(parse(header)) : []);
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
