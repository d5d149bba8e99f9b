import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, knownSecrets, testDb, type TestOrg } from '../helpers/harness';
import { createDashboardUser, csrfOf, dashboardClient, sessionCookieOf } from '../helpers/dashboard';
import { issueSignInLink } from '../../core/users/sign-in-links';
import { createWebhookEndpoint } from '../../core/webhooks/endpoints';
import { listApiKeys } from '../../core/organizations/organizations';
import { findUserByEmail } from '../../core/users/users';
import { eq } from 'drizzle-orm';
import { events, memberships, webhookDeliveries, webhookEndpoints } from '../../db/schema';
import { REDELIVER_FAILED_AT_ONCE } from '../../core/webhooks/history';
import { newId, newIdInTimeOf } from '../../core/platform/ids';
import { tokenEnv } from '../helpers/orders';

/**
 * The dashboard's sign-in, sessions and permissions through HTTP: what a browser sends, what an
 * attacker could send instead. The passwords used here are known secrets: the run's log check
 * fails if any is ever logged.
 */
describe('dashboard: sign-in, sessions, CSRF and permissions', function () {
  this.timeout(60_000);
  const t = buildTestApp({ env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  const origin = t.config.publicBaseUrl;
  let org: TestOrg;
  let other: TestOrg;
  let owner: { email: string; password: string; userId: string };
  let viewer: { email: string; password: string; userId: string };

  before(async () => {
    org = await createTestOrg('Acme');
    other = await createTestOrg('Other Co');
    owner = await createDashboardUser(org.organizationId, 'owner', 'owner@acme.test');
    viewer = await createDashboardUser(org.organizationId, 'viewer', 'viewer@acme.test');
    await createDashboardUser(other.organizationId, 'owner', 'owner@other.test');
  });

  it('signs in with e-mail and password into a server-side session, HttpOnly and SameSite=Lax', async () => {
    const c = dashboardClient(t.app, origin);
    expect((await c.get('/dashboard')).status).to.equal(303);
    const wrong = await c.signIn(owner.email, 'not the password');
    expect(wrong.status).to.equal(401);
    expect(wrong.text).to.contain('Wrong e-mail or password');
    const res = await c.signIn(owner.email, owner.password);
    expect(res.status).to.equal(303);
    expect(res.headers.location).to.equal('/dashboard');
    const cookie = ([] as string[]).concat(res.headers['set-cookie']).find((x) => x.startsWith('sg_session='))!;
    expect(cookie).to.match(/HttpOnly/).and.match(/SameSite=Lax/).and.match(/Path=\//);
    // NETWORK=local: plain http, so not Secure (every other network sets Secure and the __Host- prefix).
    expect(cookie).not.to.match(/Secure/);
    const overview = await c.get('/dashboard');
    expect(overview.status).to.equal(200);
    expect(overview.text).to.contain('Overview').and.contain(owner.email);
    expect(overview.headers['content-security-policy']).to.contain("script-src 'self'").and.contain("form-action 'self'");
    expect(overview.headers['cache-control']).to.equal('no-store');
    expect((await c.get('/dashboard/no-such-page')).status).to.equal(404);
  });

  it('in a deployment other than local, the session cookie is Secure with the __Host- prefix', async () => {
    const secure = buildTestApp({ env: { NETWORK: 'testnet', PUBLIC_BASE_URL: 'https://pay.example', SECRET_ENCRYPTION_KEY: '11'.repeat(32) } });
    const page = await request(secure.app).get('/dashboard/sign-in');
    const pre = ([] as string[]).concat(page.headers['set-cookie']).find((x) => x.startsWith('__Host-sg_pre='))!;
    expect(pre).to.match(/; Secure/);
    const res = await request(secure.app)
      .post('/dashboard/sign-in')
      .set('Origin', 'https://pay.example')
      .set('Cookie', pre.split(';')[0])
      .type('form')
      .send({ _csrf: csrfOf(page.text), email: owner.email, password: owner.password });
    expect(res.status).to.equal(303);
    const cookie = ([] as string[]).concat(res.headers['set-cookie']).find((x) => x.startsWith('__Host-sg_session='))!;
    expect(cookie, String(res.headers['set-cookie'])).to.match(/; Secure/).and.match(/HttpOnly/).and.match(/SameSite=Lax/);
  });

  it('rotates the session at sign-in: a session id planted before it is worth nothing (fixation)', async () => {
    // The attacker's own valid session, planted in the victim's browser.
    const attacker = dashboardClient(t.app, origin);
    const attackerSignIn = await attacker.signIn(viewer.email, viewer.password);
    const planted = sessionCookieOf(attackerSignIn)!;
    const victim = request.agent(t.app);
    const page = await victim.get('/dashboard/sign-in').set('Cookie', `sg_session=${planted}`);
    const res = await victim
      .post('/dashboard/sign-in')
      .set('Origin', origin)
      .set('Cookie', `sg_session=${planted}; sg_pre=${/sg_pre=([^;]+)/.exec(String(page.headers['set-cookie']))![1]}`)
      .type('form')
      .send({ _csrf: csrfOf(page.text), email: owner.email, password: owner.password });
    expect(res.status).to.equal(303);
    const fresh = sessionCookieOf(res)!;
    expect(fresh).to.be.a('string').and.not.equal(planted);
    // The planted id was ended at sign-in: it opens nothing, not even the attacker's own session.
    expect((await request(t.app).get('/dashboard').set('Cookie', `sg_session=${planted}`)).status).to.equal(303);
    expect((await request(t.app).get('/dashboard').set('Cookie', `sg_session=${fresh}`)).status).to.equal(200);
    // An id the server never issued is no session either.
    expect((await request(t.app).get('/dashboard').set('Cookie', 'sg_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status).to.equal(303);
  });

  it('refuses a state change without the CSRF token, with a wrong one, or from another site; nothing changes', async () => {
    const c = dashboardClient(t.app, origin);
    await c.signIn(owner.email, owner.password);
    const before = (await listApiKeys(testDb(), { organizationId: org.organizationId, keyId: 'x', role: 'owner' }, org.organizationId)).length;
    const csrf = await c.csrf();
    const attempts = [
      c.post('/dashboard/settings/api-keys', { name: 'no token', role: 'viewer' }),
      c.post('/dashboard/settings/api-keys', { _csrf: 'A'.repeat(43), name: 'wrong token', role: 'viewer' }),
      // A cross-site form post: the browser says so (Sec-Fetch-Site) or names the other origin.
      c.agent.post('/dashboard/settings/api-keys').set('Origin', 'https://evil.example').type('form').send({ _csrf: csrf, name: 'evil', role: 'owner' }),
      c.agent.post('/dashboard/settings/api-keys').set('Sec-Fetch-Site', 'cross-site').type('form').send({ _csrf: csrf, name: 'evil', role: 'owner' }),
      // A form post that names no origin at all.
      c.agent.post('/dashboard/settings/api-keys').type('form').send({ _csrf: csrf, name: 'anonymous', role: 'owner' }),
    ];
    for (const res of await Promise.all(attempts)) expect(res.status, res.text).to.equal(403);
    const after = (await listApiKeys(testDb(), { organizationId: org.organizationId, keyId: 'x', role: 'owner' }, org.organizationId)).length;
    expect(after).to.equal(before);
    // The same form with the token, from our own page, works.
    const ok = await c.post('/dashboard/settings/api-keys', { _csrf: csrf, name: 'from the dashboard', role: 'viewer' });
    expect(ok.status).to.equal(201);
    const key = /id="new-secret">(pk_[A-Za-z0-9_-]+)</.exec(ok.text)![1];
    knownSecrets.add(key);
    // The key works on the API at once, with the role it was given.
    const api = await request(t.app).get('/api/v1/orders').set('X-API-Key', key);
    expect(api.status).to.equal(200);
    expect((await request(t.app).post('/api/v1/orders').set('X-API-Key', key).send({})).status).to.equal(403);
    // The list shows its prefix only, never the key again.
    const list = await c.get('/dashboard/settings/api-keys');
    expect(list.text).to.contain('from the dashboard').and.not.contain(key);
  });

  it('shows a Viewer no actions and refuses a Viewer\'s direct posts', async () => {
    const c = dashboardClient(t.app, origin);
    await c.signIn(viewer.email, viewer.password);
    const endpoint = await createWebhookEndpoint(t.deps, { organizationId: org.organizationId, keyId: 'setup', role: 'owner' }, { url: 'https://hooks.example/x', events: ['order.completed'] });
    for (const path of ['/dashboard', '/dashboard/orders', '/dashboard/settings/webhooks', `/dashboard/settings/webhooks/${endpoint.endpoint.id}`, '/dashboard/settings/members', '/dashboard/deposits', '/dashboard/transfers']) {
      const page = await c.get(path);
      expect(page.status, path).to.equal(200);
      // The only forms: sign out (header). No action button of any kind.
      const forms = [...page.text.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) => m[1]);
      expect(forms, path).to.deep.equal(['/dashboard/sign-out']);
    }
    expect((await c.get('/dashboard/settings/api-keys')).status).to.equal(403);
    expect((await c.get('/dashboard/audit')).status).to.equal(403);
    // The pool is the API's admin-only resource: no page for a Viewer, and no counts on the overview.
    expect((await c.get('/dashboard/pool')).status).to.equal(403);
    const overview = await c.get('/dashboard');
    expect(overview.text).not.to.contain('id="pool-health"').and.not.to.contain('href="/dashboard/pool"');
    const csrf = await c.csrf();
    const posts = [
      c.post('/dashboard/settings/api-keys', { _csrf: csrf, name: 'viewer key', role: 'viewer' }),
      c.post('/dashboard/settings/webhooks', { _csrf: csrf, url: 'https://hooks.example/v', events: 'order.completed' }),
      c.post(`/dashboard/settings/webhooks/${endpoint.endpoint.id}/rotate-secret`, { _csrf: csrf }),
      c.post(`/dashboard/settings/webhooks/${endpoint.endpoint.id}/disable`, { _csrf: csrf }),
      c.post('/dashboard/settings/members', { _csrf: csrf, email: 'friend@acme.test', role: 'owner' }),
      c.post('/dashboard/pool/threshold', { _csrf: csrf, protocol: 'evm', value: '0' }),
      c.post('/dashboard/settings/configuration', { _csrf: csrf, key: 'payment_window_minutes', value: '60', do: 'set' }),
    ];
    for (const res of await Promise.all(posts)) expect(res.status, res.text).to.equal(403);
    const still = await c.get('/dashboard/settings/webhooks');
    expect(still.text).to.contain('enabled');
  });

  it("never lets one organization's user read or change another's objects by editing ids", async () => {
    const theirs = await createWebhookEndpoint(t.deps, { organizationId: other.organizationId, keyId: 'setup', role: 'owner' }, { url: 'https://other.example/h', events: ['order.completed'] });
    const theirKeys = await listApiKeys(testDb(), { organizationId: other.organizationId, keyId: 'x', role: 'owner' }, other.organizationId);
    const [{ secretCiphertext: secretBefore }] = await testDb().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, theirs.endpoint.id));
    const c = dashboardClient(t.app, origin);
    await c.signIn(owner.email, owner.password);
    const csrf = await c.csrf();
    expect((await c.get(`/dashboard/settings/webhooks/${theirs.endpoint.id}`)).status).to.equal(404);
    expect((await c.get('/dashboard/orders/ord_01jd000000000000000000000')).status).to.equal(404);
    for (const verb of ['rotate-secret', 'disable', 'delete', 'test']) {
      expect((await c.post(`/dashboard/settings/webhooks/${theirs.endpoint.id}/${verb}`, { _csrf: csrf })).status, verb).to.equal(404);
    }
    expect((await c.post(`/dashboard/settings/api-keys/${theirKeys[0].id}/revoke`, { _csrf: csrf })).status).to.equal(404);
    const theirOwner = (await findUserByEmail(testDb(), 'owner@other.test'))!;
    expect((await c.post(`/dashboard/settings/members/${theirOwner.id}/role`, { _csrf: csrf, role: 'viewer' })).status).to.equal(404);
    expect((await c.post(`/dashboard/settings/members/${theirOwner.id}/remove`, { _csrf: csrf })).status).to.equal(404);
    // Switching to an organization one is not a member of is answered as a missing one.
    expect((await c.post('/dashboard/switch-organization', { _csrf: csrf, organizationId: other.organizationId })).status).to.equal(404);
    // Nothing of theirs changed.
    const after = await listApiKeys(testDb(), { organizationId: other.organizationId, keyId: 'x', role: 'owner' }, other.organizationId);
    expect(after.every((k) => k.revokedAt === null)).to.equal(true);
    const [row] = await testDb().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, theirs.endpoint.id));
    expect(row.enabled).to.equal(true);
    expect(row.secretCiphertext).to.equal(secretBefore);
    const members = await testDb().select().from(memberships).where(eq(memberships.organizationId, other.organizationId));
    expect(members.map((m) => m.role)).to.deep.equal(['owner']);
  });

  it('slows down password guessing with growing delays, and lets the real password in once the delay has passed', async () => {
    const target = await createDashboardUser(org.organizationId, 'member', 'guessed@acme.test');
    const c = dashboardClient(t.app, origin);
    for (let i = 0; i < 5; i++) expect((await c.signIn(target.email, `guess-${i}`)).status).to.equal(401);
    // The sixth failure starts a delay: now even the right password waits.
    expect((await c.signIn(target.email, 'guess-5')).status).to.equal(401);
    const delayed = await c.signIn(target.email, target.password);
    expect(delayed.status).to.equal(429);
    expect(Number(delayed.headers['retry-after'])).to.be.within(1, 2);
    // A delay, not a lock: once it has passed, the owner of the account gets in.
    await new Promise((r) => setTimeout(r, 2100));
    expect((await c.signIn(target.email, target.password)).status).to.equal(303);
  });

  it('signs out everywhere: another browser\'s session ends too', async () => {
    const a = dashboardClient(t.app, origin);
    const b = dashboardClient(t.app, origin);
    await a.signIn(owner.email, owner.password);
    await b.signIn(owner.email, owner.password);
    expect((await b.get('/dashboard')).status).to.equal(200);
    const res = await a.post('/dashboard/account/sign-out-everywhere', { _csrf: await a.csrf() });
    expect(res.status).to.equal(303);
    expect((await b.get('/dashboard')).status).to.equal(303);
    expect((await a.get('/dashboard')).status).to.equal(303);
  });

  it('ends a session after the idle timeout and after the absolute one', async () => {
    const c = dashboardClient(t.app, origin);
    await c.signIn(owner.email, owner.password);
    expect((await c.get('/dashboard')).status).to.equal(200);
    t.clock.advance(t.config.dashboard.sessionIdleMs + 1000);
    expect((await c.get('/dashboard')).status).to.equal(303);
    // Active all along, still ended at the absolute limit.
    await c.signIn(owner.email, owner.password);
    const step = t.config.dashboard.sessionIdleMs / 2;
    for (let elapsed = 0; elapsed < t.config.dashboard.sessionAbsoluteMs - step; elapsed += step) {
      t.clock.advance(step);
      expect((await c.get('/dashboard/account')).status).to.equal(200);
    }
    t.clock.advance(step + 1000);
    expect((await c.get('/dashboard/account')).status).to.equal(303);
  });

  it('a password change signs out the other sessions and keeps this one under a new id', async () => {
    const user = await createDashboardUser(org.organizationId, 'admin', 'changer@acme.test');
    const a = dashboardClient(t.app, origin);
    const b = dashboardClient(t.app, origin);
    await a.signIn(user.email, user.password);
    await b.signIn(user.email, user.password);
    const newPassword = 'a brand new passphrase';
    knownSecrets.add(newPassword);
    const res = await a.post('/dashboard/account/password', { _csrf: await a.csrf(), current: user.password, password: newPassword });
    expect(res.status).to.equal(200);
    expect(res.text).to.contain('Password saved');
    expect((await a.get('/dashboard')).status).to.equal(200);
    expect((await b.get('/dashboard')).status).to.equal(303);
    expect((await dashboardClient(t.app, origin).signIn(user.email, user.password)).status).to.equal(401);
    expect((await dashboardClient(t.app, origin).signIn(user.email, newPassword)).status).to.equal(303);
  });

  it('a one-time link signs in once; an invited member sets a password and joins with the role given', async () => {
    const c = dashboardClient(t.app, origin);
    await c.signIn(owner.email, owner.password);
    const invited = await c.post('/dashboard/settings/members', { _csrf: await c.csrf(), email: 'new.hire@acme.test', role: 'member' });
    expect(invited.status).to.equal(201);
    const link = /id="invite-link">([^<]+)</.exec(invited.text)![1];
    const path = new URL(link).pathname;
    const n = dashboardClient(t.app, origin);
    const confirm = await n.get(path);
    expect(confirm.status).to.equal(200);
    const used = await n.post(path, { _csrf: csrfOf(confirm.text) });
    expect(used.status).to.equal(303);
    expect(used.headers.location).to.equal('/dashboard/account');
    const account = await n.get('/dashboard/account');
    expect(account.text).to.contain('Set a password').and.contain('data-role="member"');
    // Used once: the same link again is refused.
    const again = dashboardClient(t.app, origin);
    expect((await again.get(path)).status).to.equal(404);
    // The audit log shows the invitation, who made it and from where.
    const audit = await c.get('/dashboard/audit');
    expect(audit.text).to.contain('member.invited').and.contain('new.hire@acme.test').and.contain(owner.email);
  });

  it('the last Owner cannot be removed or demoted, and an Admin cannot touch Owners', async () => {
    const solo = await createTestOrg('Solo');
    const only = await createDashboardUser(solo.organizationId, 'owner', 'only@solo.test');
    const admin = await createDashboardUser(solo.organizationId, 'admin', 'admin@solo.test');
    const a = dashboardClient(t.app, origin);
    await a.signIn(admin.email, admin.password);
    const adminCsrf = await a.csrf();
    expect((await a.post(`/dashboard/settings/members/${only.userId}/remove`, { _csrf: adminCsrf })).status).to.be.oneOf([403, 409]);
    expect((await a.post(`/dashboard/settings/members/${admin.userId}/role`, { _csrf: adminCsrf, role: 'owner' })).status).to.equal(403);
    const o = dashboardClient(t.app, origin);
    await o.signIn(only.email, only.password);
    const csrf = await o.csrf();
    expect((await o.post(`/dashboard/settings/members/${only.userId}/role`, { _csrf: csrf, role: 'admin' })).status).to.equal(409);
    expect((await o.post(`/dashboard/settings/members/${only.userId}/remove`, { _csrf: csrf })).status).to.equal(409);
    // With a second Owner, the first may step down.
    expect((await o.post(`/dashboard/settings/members/${admin.userId}/role`, { _csrf: csrf, role: 'owner' })).status).to.equal(200);
    expect((await o.post(`/dashboard/settings/members/${only.userId}/role`, { _csrf: csrf, role: 'admin' })).status).to.equal(200);
  });

  it('a sign-in link the operator issues works once', async () => {
    const token = await issueSignInLink(testDb(), owner.userId, 'sign-in', t.clock.now());
    const c = dashboardClient(t.app, origin);
    const page = await c.get(`/dashboard/link/${token}`);
    expect((await c.post(`/dashboard/link/${token}`, { _csrf: csrfOf(page.text) })).status).to.equal(303);
    expect((await c.get('/dashboard')).status).to.equal(200);
    const d = dashboardClient(t.app, origin);
    const page2 = await d.get('/dashboard/sign-in');
    expect((await d.post(`/dashboard/link/${token}`, { _csrf: csrfOf(page2.text) })).status).to.equal(404);
  });
  it('answers a NUL character in an id, a filter, a cursor or a form field with a 400; nothing changes', async () => {
    const c = dashboardClient(t.app, origin);
    await c.signIn(owner.email, owner.password);
    const csrf = await c.csrf();
    // Postgres stores neither in text: each reached a query and failed it with a 500 before.
    for (const path of ['/dashboard/orders?q=%00', '/dashboard/orders?before=ord_%00', '/dashboard/orders/ord_%00', '/dashboard/payment-links?q=a%00b', '/dashboard/settings/webhooks/whe_%00']) {
      const res = await c.get(path);
      expect(res.status, path).to.equal(400);
      expect(res.text, path).to.contain('must not contain NUL characters or unpaired surrogates');
    }
    const linksBefore = (await request(t.app).get('/api/v1/payment-links').set('X-API-Key', org.keys.viewer)).body.pagination.total;
    const posts = [
      c.post('/dashboard/payment-links/plk_%00/publish', { _csrf: csrf }),
      c.post('/dashboard/settings/webhooks/whe_%00/redeliver-failed', { _csrf: csrf, since: '2026-01-01T00:00' }),
      c.post('/dashboard/payment-links', { _csrf: csrf, title: 'Nul\u0000title', amount: '1', currencies: ['USDT@ethereum-local'] }),
      c.post('/dashboard/settings/api-keys', { _csrf: csrf, name: 'nul\u0000key', role: 'viewer' }),
    ];
    for (const res of await Promise.all(posts)) expect(res.status, res.text).to.equal(400);
    const signIn = dashboardClient(t.app, origin);
    const form = await signIn.get('/dashboard/sign-in');
    expect((await signIn.post('/dashboard/sign-in', { _csrf: csrfOf(form.text), email: 'owner@acme.test\u0000', password: 'x' })).status).to.equal(400);
    expect((await request(t.app).get('/api/v1/payment-links').set('X-API-Key', org.keys.viewer)).body.pagination.total).to.equal(linksBefore);
    const keys = await listApiKeys(testDb(), { organizationId: org.organizationId, keyId: 'x', role: 'owner' }, org.organizationId);
    expect(keys.map((k) => k.name)).not.to.include('nul\u0000key');
  });
  it('redelivers failed deliveries a bounded batch at a time, the oldest first; submitting again takes the rest, never one twice', async () => {
    const { endpoint } = await createWebhookEndpoint(t.deps, { organizationId: org.organizationId, keyId: 'setup', role: 'owner' }, { url: 'https://hooks.example/outage', events: ['order.completed'] });
    // A long outage: one failed delivery more than a request requeues, a second apart (the newest last).
    const start = Date.now() - 3 * 3600_000;
    const rows = Array.from({ length: REDELIVER_FAILED_AT_ONCE + 1 }, (_, i) => {
      const eventId = newId('evt');
      const at = new Date(start + i * 1000);
      return { eventId, deliveryId: newIdInTimeOf('whd', eventId), at };
    });
    await testDb().insert(events).values(rows.map((r) => ({ id: r.eventId, organizationId: org.organizationId, type: 'order.completed', data: { orderId: 'ord_x' }, createdAt: r.at, dispatchedAt: r.at })));
    await testDb().insert(webhookDeliveries).values(rows.map((r) => ({ id: r.deliveryId, organizationId: org.organizationId, eventId: r.eventId, endpointId: endpoint.id, status: 'failed' as const, attemptCount: 5, lastAttemptAt: r.at, createdAt: r.at })));
    const statuses = async () => new Map((await testDb().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpoint.id))).map((d) => [d.id, d.status]));
    const c = dashboardClient(t.app, origin);
    await c.signIn(owner.email, owner.password);
    const csrf = await c.csrf();
    const path = `/dashboard/settings/webhooks/${endpoint.id}/redeliver-failed`;
    const since = new Date(start - 60_000).toISOString().slice(0, 16);
    const first = await c.post(path, { _csrf: csrf, since });
    expect(first.status, first.text).to.equal(200);
    expect(first.text).to.contain(`${REDELIVER_FAILED_AT_ONCE} failed deliveries since`).and.contain('submit again for the next ones');
    const afterFirst = await statuses();
    expect([...afterFirst.values()].filter((s) => s === 'pending')).to.have.length(REDELIVER_FAILED_AT_ONCE);
    expect(afterFirst.get(rows[rows.length - 1].deliveryId), 'the newest waits').to.equal('failed');
    const second = await c.post(path, { _csrf: csrf, since });
    expect(second.status, second.text).to.equal(200);
    expect(second.text).to.contain('1 failed delivery since').and.not.contain('submit again');
    expect([...(await statuses()).values()].every((s) => s === 'pending')).to.equal(true);
    const third = await c.post(path, { _csrf: csrf, since });
    expect(third.text).to.contain('No delivery failed since');
  });
  it("holds a signed-in user's actions to the API's per-key limits: a loop of payment link creations stops at the limit", async () => {
    const limited = buildTestApp({ env: { ...tokenEnv(), RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PER_MINUTE: '3' } });
    const shop = await createTestOrg('Looping Co');
    const member = await createDashboardUser(shop.organizationId, 'member', 'member@looping.test');
    const c = dashboardClient(limited.app, limited.config.publicBaseUrl);
    await c.signIn(member.email, member.password);
    const csrf = await c.csrf('/dashboard/payment-links');
    const create = (i: number) => c.post('/dashboard/payment-links', { _csrf: csrf, title: `Loop ${i}`, amount: '1', currencies: ['USDT@ethereum-local'] });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await create(i)).status);
    expect(statuses).to.deep.equal([201, 201, 201, 429, 429]);
    const refused = await create(9);
    expect(refused.status).to.equal(429);
    expect(Number(refused.headers['retry-after'])).to.be.within(1, 60);
    expect(refused.text).to.contain('Rate limit exceeded');
    const links = await request(limited.app).get('/api/v1/payment-links').set('X-API-Key', shop.keys.viewer);
    expect(links.body.pagination.total).to.equal(3);
  });
});
