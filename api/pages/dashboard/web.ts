import type { ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { checkSameOrigin, publicBodyReader, PublicWriteRefusal, type PublicBody } from '../public-write';
import { AppError } from '../../../core/platform/errors';
import { constantTimeEqual, randomToken } from '../../../core/platform/secrets';
import { roleAtLeast, type Role } from '../../../core/organizations/roles';
import type { Caller } from '../../../core/organizations/organizations';
import { loadSession, type Session, type SessionTimeouts } from '../../../core/users/sessions';
import { recordAudit } from '../../../core/platform/audit';
import type { ApiDeps } from '../../deps';
import { addRequestLogFields, logRequestError } from '../../request-log';
import { rejectUnstorableValues } from '../../validation';
import { createRateLimiter, type RateLimiter } from '../../middleware/rate-limit';
import type { Html } from '../html';
import { clearCookie, cookieNames, readCookies, setCookie, type CookieNames } from './cookies';
import { dashboardPage, messageView } from './layout';
import { listMemberships, userCaller } from '../../../core/users/users';
import { signInLimits, type SignInLimits } from './sign-in-limits';
import { pickLanguage, type Language } from '../i18n';
import { langOf } from './chrome-text';

/** What every dashboard page and action shares. */
export interface Dashboard {
  deps: ApiDeps;
  cookies: CookieNames;
  secure: boolean;
  timeouts: SessionTimeouts;
  limits: SignInLimits;
  /** The public write kit's body reader, at the pool import's size (the largest form: a CSV). */
  readBody: (req: Request, res: Response) => Promise<PublicBody>;
  setHeaders: (res: ServerResponse) => void;
  /** The API's per-key limits (RATE_LIMIT_*), applied to each signed-in user's actions; null when off. */
  limitWrites: RateLimiter | null;
}

export function dashboardOf(deps: ApiDeps, setHeaders: (res: ServerResponse) => void): Dashboard {
  const secure = deps.config.dashboard.secureCookies;
  return {
    deps,
    cookies: cookieNames(secure),
    secure,
    timeouts: { idleMs: deps.config.dashboard.sessionIdleMs, absoluteMs: deps.config.dashboard.sessionAbsoluteMs },
    limits: signInLimits({ redis: deps.redis, keyPrefix: `${deps.config.redisPrefix}:signin` }),
    readBody: publicBodyReader(deps.config.importBodyLimitBytes),
    setHeaders,
    limitWrites: createRateLimiter(deps),
  };
}

/** A signed-in request: its session, and the user as a Caller of the domain operations. */
export interface SignedIn {
  session: Session;
  caller: Caller;
  ip: string | null;
  /** Records a security-relevant or settings change in the organization's audit log. */
  audit(action: string, target?: string | null, detail?: Record<string, unknown>): Promise<void>;
}

export type PageHandler = (req: Request, res: Response, who: SignedIn) => Promise<void>;

/** A form field as one string ('' when absent or sent twice). */
export function field(req: Request, name: string): string {
  const body = req.body as Record<string, unknown> | undefined;
  const value = body?.[name];
  return typeof value === 'string' ? value : '';
}

export function sendHtml(res: Response, status: number, page: Html): void {
  res.status(status).type('html').send(page.text);
}

/** A signed-in page in the dashboard's chrome (the organization switcher needs the user's memberships). */
export async function sendPage(d: Dashboard, res: Response, who: SignedIn, section: string, title: string, body: Html, status = 200): Promise<void> {
  sendHtml(res, status, dashboardPage({ ...chromeOf(res), session: who.session, memberships: await listMemberships(d.deps.db, who.session.userId), section, title, body }));
}

/**
 * The chrome's language, and whether the page was asked for it by `?lang=` (its links then keep
 * it). Said in Content-Language for a signed-in page; the pages outside the chrome are English.
 */
export function chromeOf(res: Response): { lang: Language; keepLang: boolean } {
  res.setHeader('Content-Language', langOf(res));
  return { lang: langOf(res), keepLang: res.locals.langAsked === true };
}

/**
 * The public write kit's pieces (api/pages/public-write/): a size-limited form body and the
 * same-origin check (Sec-Fetch-Site, Origin, Referer; a form post naming none is refused). The
 * session's CSRF token is checked on top of it for signed-in actions.
 */
async function readForm(d: Dashboard, req: Request, res: Response): Promise<void> {
  checkSameOrigin(req, d.deps.config.publicBaseUrl, 'form');
  const body = await d.readBody(req, res);
  if (body.kind !== 'form') throw new PublicWriteRefusal('unsupportedType', 'The dashboard takes HTML forms');
  rejectUnstorableValues('request body', req.body);
}

async function signedIn(d: Dashboard, req: Request, res: Response): Promise<SignedIn | null> {
  const token = readCookies(req).get(d.cookies.session);
  if (!token) return null;
  const session = await loadSession(d.deps.db, token, d.deps.clock.now(), d.timeouts);
  if (!session) {
    clearCookie(res, d.cookies.session, d.secure);
    return null;
  }
  addRequestLogFields(res, { organizationId: session.organizationId, keyId: session.userId });
  const ip = req.ip ?? null;
  return {
    session,
    caller: userCaller(session.userId, session.organizationId, session.role),
    ip,
    audit: (action, target, detail) =>
      recordAudit(d.deps.db, { organizationId: session.organizationId, userId: session.userId, actor: session.email, action, target, detail, ip }),
  };
}

function errorStatus(err: unknown): { status: number; message: string } | null {
  if (err instanceof AppError) return { status: err.status, message: err.message };
  if (err instanceof PublicWriteRefusal) return { status: err.status, message: err.message };
  const e = err as { type?: string; status?: number };
  if (e?.type === 'entity.too.large') return { status: 413, message: 'The form is larger than the dashboard accepts' };
  if (e?.status && e.status >= 400 && e.status < 500) return { status: e.status, message: 'The form could not be read' };
  return null;
}

/** Runs a page's steps in one layer: headers, no caching, its work; errors become a page. */
function run(d: Dashboard, work: (req: Request, res: Response) => Promise<void>) {
  return async (req: Request, res: Response, _next: NextFunction): Promise<void> => {
    d.setHeaders(res);
    res.setHeader('Cache-Control', 'no-store');
    // The chrome's language, negotiated as the payment page's is (chrome-text.ts).
    res.locals.lang = pickLanguage(req);
    res.locals.langAsked = typeof req.query.lang === 'string' && res.locals.lang === req.query.lang.toLowerCase();
    try {
      // A NUL or half a surrogate pair in an id, a filter or a cursor would fail its query with a 500.
      rejectUnstorableValues('path', req.params);
      rejectUnstorableValues('query', req.query);
      await work(req, res);
    } catch (err) {
      const known = errorStatus(err);
      if (!known) logRequestError(d.deps.logger, req, res, err);
      // The answer has started (a download written page by page): no error page can follow, and
      // left open it would hang the browser's download; cut, it fails there at once.
      if (res.headersSent) {
        res.destroy();
        return;
      }
      sendHtml(res, known?.status ?? 500, messageView(known ? 'That did not work' : 'Something went wrong', known?.message ?? 'Please try again later.'));
    }
  };
}

/** A page (GET) for signed-in users of at least `minRole`; others go to the sign-in page or get 403. */
export function page(d: Dashboard, minRole: Role, handler: PageHandler) {
  return run(d, async (req, res) => {
    const who = await signedIn(d, req, res);
    if (!who) return redirectToSignIn(req, res);
    if (!roleAtLeast(who.session.role, minRole)) throw new AppError('INSUFFICIENT_PERMISSIONS', `This page needs the ${minRole} role or higher`);
    await handler(req, res, who);
  });
}

/**
 * A state-changing request (POST) of a signed-in user: same-origin check, the session's CSRF
 * token in the form (`_csrf`), the role, then the handler. Viewers are refused every action.
 */
export function action(d: Dashboard, minRole: Role, handler: PageHandler) {
  return run(d, async (req, res) => {
    await readForm(d, req, res);
    const who = await signedIn(d, req, res);
    if (!who) return redirectToSignIn(req, res);
    if (!constantTimeEqual(field(req, '_csrf'), who.session.csrfToken)) {
      throw new AppError('INSUFFICIENT_PERMISSIONS', 'This form has expired or did not come from this dashboard; reload the page and try again');
    }
    if (!roleAtLeast(who.session.role, minRole)) throw new AppError('INSUFFICIENT_PERMISSIONS', `This action needs the ${minRole} role or higher`);
    // The same limits as the API's writes (the user is the key): a loop of posts cannot do here what the API refuses.
    await d.limitWrites?.(who.caller, res, { method: 'post', path: req.path });
    await handler(req, res, who);
  });
}

/** Pages and actions of people not signed in (sign-in, one-time links). */
export function publicStep(d: Dashboard, work: (req: Request, res: Response) => Promise<void>, options: { form?: boolean } = {}) {
  return run(d, async (req, res) => {
    if (options.form) await readForm(d, req, res);
    await work(req, res);
  });
}

/** The sign-in form's token before any session: a cookie and the same value in the form. */
export function preSessionToken(d: Dashboard, req: Request, res: Response): string {
  const existing = readCookies(req).get(d.cookies.preSession);
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
  const token = randomToken(32);
  setCookie(res, d.cookies.preSession, token, d.secure);
  return token;
}

export function checkPreSessionToken(d: Dashboard, req: Request): void {
  const cookie = readCookies(req).get(d.cookies.preSession) ?? '';
  if (!cookie || !constantTimeEqual(cookie, field(req, '_csrf'))) {
    throw new AppError('INSUFFICIENT_PERMISSIONS', 'This form has expired; reload the sign-in page and try again');
  }
}

function redirectToSignIn(req: Request, res: Response): void {
  const back = req.method === 'GET' && req.originalUrl.startsWith('/dashboard') ? `?next=${encodeURIComponent(req.originalUrl)}` : '';
  res.redirect(303, `/dashboard/sign-in${back}`);
}

/** A `next` path to return to after sign-in: only our own dashboard paths (no open redirect). */
export function safeNext(value: unknown): string {
  if (typeof value !== 'string' || !/^\/dashboard(\/[A-Za-z0-9_\-/.?=&%]*)?$/.test(value) || value.includes('//')) return '/dashboard';
  return value;
}
