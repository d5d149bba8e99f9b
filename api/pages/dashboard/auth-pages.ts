import type { Express, Request, Response } from 'express';
import { notFound } from '../../../core/platform/errors';
import { recordAudit } from '../../../core/platform/audit';
import { passwordProblem } from '../../../core/users/passwords';
import { createSession, endSession, endUserSessions, countUserSessions, switchSessionOrganization } from '../../../core/users/sessions';
import { consumeSignInLink, peekSignInLink } from '../../../core/users/sign-in-links';
import { mailSignInLinkTo } from '../../../core/users/sign-in-mail';
import { WriteBudgets } from '../public-write';
import { clientIpKey } from '../../client-ip';
import { checkPassword, currentPasswordMatches, getUser, listMemberships, membershipRole, setPassword, type UserView } from '../../../core/users/users';
import { sha256Hex } from '../../../core/platform/secrets';
import { chromeText, langOf } from './chrome-text';
import { SignInLimitsUnavailable } from './sign-in-limits';
import { html } from '../html';
import { clearCookie, readCookies, setCookie } from './cookies';
import { csrfField, dashboardPage, notice, plainPage } from './layout';
import { action, checkPreSessionToken, field, page, preSessionToken, publicStep, safeNext, sendHtml, type Dashboard, type SignedIn, chromeOf } from './web';

function signInForm(d: Dashboard, req: Request, res: Response, status: number, options: { email?: string; error?: string; next?: string }): void {
  const token = preSessionToken(d, req, res);
  sendHtml(
    res,
    status,
    plainPage(
      'Sign in',
      html`${notice(options.error ?? null, 'error')}
<form method="post" action="/dashboard/sign-in">
<input type="hidden" name="_csrf" value="${token}">
<input type="hidden" name="next" value="${options.next ?? '/dashboard'}">
<label for="email">E-mail</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${options.email ?? ''}" autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<p><button type="submit">Sign in</button></p>
</form>
${d.deps.config.smtp
        ? html`<h2>Or sign in with a link by e-mail</h2><form method="post" action="/dashboard/sign-in/email">
<input type="hidden" name="_csrf" value="${token}"><label for="link-email">E-mail</label><input id="link-email" name="email" type="email" autocomplete="username" required>
<p><button class="secondary" type="submit">E-mail me a sign-in link</button></p></form>`
        : html`<p class="muted">No password yet? Ask an Owner of your organization for an invitation link, or an operator for a one-time sign-in link (npm run admin -- sign-in-link &lt;email&gt;).</p>`}`,
    ),
  );
}

/**
 * Starts a fresh session for the user (rotation: whatever session cookie the browser had is ended
 * and replaced, so a session id planted before sign-in is worth nothing after it).
 */
async function startSession(d: Dashboard, req: Request, res: Response, user: UserView, how: string): Promise<boolean> {
  const memberships = await listMemberships(d.deps.db, user.id);
  const old = readCookies(req).get(d.cookies.session);
  if (old) await endSession(d.deps.db, sha256Hex(old));
  if (memberships.length === 0) {
    clearCookie(res, d.cookies.session, d.secure);
    sendHtml(res, 403, plainPage('No organization', html`<p>${user.email} is not a member of any organization. Ask an Owner for an invitation.</p>`));
    return false;
  }
  const organizationId = memberships[0].organizationId;
  const { token } = await createSession(d.deps.db, { userId: user.id, organizationId, ip: req.ip ?? null, now: d.deps.clock.now(), timeouts: d.timeouts });
  setCookie(res, d.cookies.session, token, d.secure);
  clearCookie(res, d.cookies.preSession, d.secure);
  for (const m of memberships) {
    await recordAudit(d.deps.db, { organizationId: m.organizationId, userId: user.id, actor: user.email, action: 'user.signed_in', detail: { method: how }, ip: req.ip ?? null });
  }
  return true;
}

export function mountAuthPages(app: Express, d: Dashboard): void {
  const { deps } = d;

  app.get(
    '/dashboard/sign-in',
    publicStep(d, async (req, res) => signInForm(d, req, res, 200, { next: safeNext(req.query.next) })),
  );

  app.post(
    '/dashboard/sign-in',
    publicStep(
      d,
      async (req, res) => {
        checkPreSessionToken(d, req);
        const email = field(req, 'email').trim().slice(0, 254);
        const password = field(req, 'password');
        const next = safeNext(field(req, 'next'));
        const ip = req.ip ?? 'unknown';
        try {
          // Only this client's own failures delay it (sign-in-limits.ts): the owner with the right
          // password is never kept out by what other clients sent.
          const wait = await d.limits.wait(ip, email);
          if (wait > 0) {
            res.setHeader('Retry-After', String(wait));
            return signInForm(d, req, res, 429, { email, next, error: 'Too many failed attempts from here. Wait a little, then try again.' });
          }
          const user = email && password ? await checkPassword(deps.db, email, password) : null;
          if (!user) {
            await d.limits.failed(ip, email);
            deps.logger.info({ reason: 'wrong e-mail or password' }, 'dashboard sign-in refused');
            return signInForm(d, req, res, 401, { email, next, error: 'Wrong e-mail or password.' });
          }
          await d.limits.succeeded(ip, email);
          if (await startSession(d, req, res, user, 'password')) res.redirect(303, next);
        } catch (err) {
          if (!(err instanceof SignInLimitsUnavailable)) throw err;
          // Fails closed: while the limits cannot be consulted, no sign-in goes through.
          deps.logger.warn({ err: { message: err.message } }, 'dashboard sign-in refused: its attempt limits cannot be consulted');
          res.setHeader('Retry-After', '5');
          return signInForm(d, req, res, 503, { email, next, error: 'Sign-in is unavailable for a moment (its attempt limits cannot be checked). Please try again shortly.' });
        }
      },
      { form: true },
    ),
  );

  // A sign-in link by e-mail (SMTP_URL set): the same answer whether or not the address has an
  // account; budgets per client IP and per address keep it from being a mail cannon.
  const linkBudgets = new WriteBudgets(
    { redis: deps.redis, keyPrefix: `${deps.config.redisPrefix}:signin-mail`, logger: deps.logger },
    { ip: { points: 10, durationSeconds: 3600 }, account: { points: 3, durationSeconds: 900 } },
  );
  app.post(
    '/dashboard/sign-in/email',
    publicStep(
      d,
      async (req, res) => {
        checkPreSessionToken(d, req);
        if (!deps.config.smtp) throw notFound('Page');
        const email = field(req, 'email').trim().toLowerCase().slice(0, 254);
        await linkBudgets.spend([
          { budget: 'ip', key: clientIpKey(req.ip) },
          { budget: 'account', key: email },
        ]);
        await mailSignInLinkTo(deps, email);
        sendHtml(res, 200, plainPage('Check your e-mail', html`<p>If ${email} has an account, a one-time sign-in link is on its way. It works once, for 24 hours.</p>`));
      },
      { form: true },
    ),
  );

  // A one-time link asks before it is used: mail scanners and link previews fetch GETs.
  app.get(
    '/dashboard/link/:token',
    publicStep(d, async (req, res) => {
      const link = await peekSignInLink(deps.db, String(req.params.token), deps.clock.now());
      if (!link) {
        return sendHtml(res, 404, plainPage('Link not valid', html`<p>This sign-in link has been used or has expired. Ask for a new one.</p><p><a href="/dashboard/sign-in">Sign in</a></p>`));
      }
      const user = await getUser(deps.db, link.userId);
      const token = preSessionToken(d, req, res);
      sendHtml(
        res,
        200,
        plainPage(
          link.purpose === 'invitation' ? 'Accept the invitation' : 'Sign in with this link',
          html`<p>Continue as <strong>${user.email}</strong>. The link works once.</p>
<form method="post" action="/dashboard/link/${String(req.params.token)}"><input type="hidden" name="_csrf" value="${token}"><button type="submit">Continue</button></form>`,
        ),
      );
    }),
  );

  app.post(
    '/dashboard/link/:token',
    publicStep(
      d,
      async (req, res) => {
        checkPreSessionToken(d, req);
        const link = await consumeSignInLink(deps.db, String(req.params.token), deps.clock.now());
        if (!link) {
          return sendHtml(res, 404, plainPage('Link not valid', html`<p>This sign-in link has been used or has expired. Ask for a new one.</p>`));
        }
        const user = await getUser(deps.db, link.userId);
        if (await startSession(d, req, res, user, link.purpose === 'invitation' ? 'invitation link' : 'one-time link')) {
          res.redirect(303, user.hasPassword ? '/dashboard' : '/dashboard/account');
        }
      },
      { form: true },
    ),
  );

  app.post(
    '/dashboard/sign-out',
    action(d, 'viewer', async (_req, res, who) => {
      await endSession(deps.db, who.session.idHash);
      clearCookie(res, d.cookies.session, d.secure);
      res.redirect(303, '/dashboard/sign-in');
    }),
  );

  app.post(
    '/dashboard/account/sign-out-everywhere',
    action(d, 'viewer', async (_req, res, who) => {
      const ended = await endUserSessions(deps.db, who.session.userId);
      await who.audit('user.signed_out_everywhere', who.session.email, { sessions: ended });
      clearCookie(res, d.cookies.session, d.secure);
      res.redirect(303, '/dashboard/sign-in');
    }),
  );

  const accountPage = async (res: Response, who: SignedIn, status: number, message: { ok?: string; error?: string } = {}) => {
    const user = await getUser(deps.db, who.session.userId);
    const sessions = await countUserSessions(deps.db, user.id, deps.clock.now());
    sendHtml(
      res,
      status,
      dashboardPage({
        ...chromeOf(res),
        session: who.session,
        memberships: await listMemberships(deps.db, user.id),
        section: '/dashboard/account',
        title: 'Account',
        body: html`${notice(message.ok ?? null)}${notice(message.error ?? null, 'error')}
<section class="panel" aria-labelledby="pw-h"><h2 id="pw-h">${user.hasPassword ? 'Change your password' : 'Set a password'}</h2>
<form method="post" action="/dashboard/account/password">${csrfField(who.session)}
<input type="text" name="username" autocomplete="username" value="${user.email}" hidden>
${user.hasPassword ? html`<label for="current">Current password</label><input id="current" name="current" type="password" autocomplete="current-password" required>` : null}
<label for="new-password">New password (at least 10 characters)</label><input id="new-password" name="password" type="password" autocomplete="new-password" required minlength="10">
<p><button type="submit">${chromeText(langOf(res), 'Save password')}</button></p></form>
<p class="muted">Changing the password signs out your other sessions.</p></section>
<section class="panel" aria-labelledby="so-h"><h2 id="so-h">${chromeText(langOf(res), 'Sessions')}</h2><p>You are signed in in ${sessions} session${sessions === 1 ? '' : 's'}.</p>
<form method="post" action="/dashboard/account/sign-out-everywhere">${csrfField(who.session)}<button class="danger" type="submit">${chromeText(langOf(res), 'Sign out everywhere')}</button></form></section>`,
      }),
    );
  };

  app.get('/dashboard/account', page(d, 'viewer', async (_req, res, who) => accountPage(res, who, 200)));

  app.post(
    '/dashboard/account/password',
    action(d, 'viewer', async (req, res, who) => {
      if (!(await currentPasswordMatches(deps.db, who.session.userId, field(req, 'current')))) {
        return accountPage(res, who, 400, { error: 'The current password is not right.' });
      }
      const password = field(req, 'password');
      const problem = passwordProblem(password);
      if (problem) return accountPage(res, who, 400, { error: problem });
      await setPassword(deps.db, who.session.userId, password);
      // Every other session ends; this one is replaced by a new one (a new id after the change).
      await endUserSessions(deps.db, who.session.userId);
      const { token, csrfToken } = await createSession(deps.db, {
        userId: who.session.userId,
        organizationId: who.session.organizationId,
        ip: req.ip ?? null,
        now: deps.clock.now(),
        timeouts: d.timeouts,
      });
      setCookie(res, d.cookies.session, token, d.secure);
      await who.audit('user.password_changed', who.session.email);
      return accountPage(res, { ...who, session: { ...who.session, csrfToken } }, 200, { ok: 'Password saved. Your other sessions were signed out.' });
    }),
  );

  app.post(
    '/dashboard/switch-organization',
    action(d, 'viewer', async (req, res, who) => {
      const organizationId = field(req, 'organizationId');
      const role = await membershipRole(deps.db, who.session.userId, organizationId);
      // Not a member: answered as an organization that does not exist.
      if (!role) throw notFound('Organization');
      await switchSessionOrganization(deps.db, who.session.idHash, organizationId);
      res.redirect(303, '/dashboard');
    }),
  );

}
