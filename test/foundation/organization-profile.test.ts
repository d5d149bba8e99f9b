import { expect } from 'chai';
import { and, eq } from 'drizzle-orm';
import request from 'supertest';
import { auditLog, organizations } from '../../db/schema';
import { buildTestApp, createTestOrg, knownSecrets, listenForPageChanges, STYLES, testDb, type TestOrg } from '../helpers/harness';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf, expectError, listOf } from '../helpers/wire';

/**
 * Issue 40 (a newcomer's trial): every payer page said "Payment to Local organization" and nothing
 * could rename it. An organization's display name and support contact, read and changed through
 * GET/PUT /organizations/:id (Admin and Owner) and Settings, Organization in the dashboard (one
 * operation), audit-logged, shown on the payment and checkout pages at their next load.
 */
const env = { ...tokenEnv(), PUBLIC_BASE_URL: 'https://pay.example.com', CHECKOUT_ORDERS_PER_IP: '100000', PAGE_RATE_LIMIT_PER_MINUTE: '1000000' };

async function auditOf(organizationId: string) {
  return testDb().select().from(auditLog).where(and(eq(auditLog.organizationId, organizationId), eq(auditLog.action, 'organization.updated')));
}

for (const style of STYLES) {
  describe(`organization profile API (style ${style.toUpperCase()})`, () => {
    const t = buildTestApp({ style, env });
    let org: TestOrg;
    let other: TestOrg;
    const put = (key: string, id: string, body: unknown) => request(t.app).put(`/api/v1/organizations/${id}`).set('X-API-Key', key).send(body as object);
    const get = (key: string, id: string) => request(t.app).get(`/api/v1/organizations/${id}`).set('Authorization', `Bearer ${key}`);

    before(async () => {
      org = await createTestOrg('Local organization');
      other = await createTestOrg('Someone else');
    });

    it('reads the name and support contact (GET /organizations/:id and the list)', async () => {
      const one = dataOf(style, await get(org.keys.admin, org.organizationId));
      expect(one).to.deep.include({ id: org.organizationId, name: 'Local organization', supportContact: null });
      const list = listOf(style, await request(t.app).get('/api/v1/organizations').set('X-API-Key', org.keys.owner), 'organizations');
      expect(list.items[0]).to.deep.include({ name: 'Local organization', supportContact: null });
    });

    it('Owner and Admin rename it and set a support contact; audit-logged with the values before and after', async () => {
      const renamed = await put(org.keys.owner, org.organizationId, { name: '  Café <Zürich> "GmbH"  ' });
      expect(dataOf(style, renamed)).to.deep.include({ name: 'Café <Zürich> "GmbH"', supportContact: null });
      const contact = await put(org.keys.admin, org.organizationId, { supportContact: 'help@cafe.example' });
      expect(dataOf(style, contact)).to.deep.include({ name: 'Café <Zürich> "GmbH"', supportContact: 'help@cafe.example' });
      expect(dataOf(style, await put(org.keys.admin, org.organizationId, { supportContact: 'https://cafe.example/help?q=1&x=2' }))).to.include({
        supportContact: 'https://cafe.example/help?q=1&x=2',
      });
      const audit = await auditOf(org.organizationId);
      expect(audit).to.have.length(3);
      const byDetail = audit.map((a) => a.detail);
      expect(byDetail).to.deep.include({ name: { from: 'Local organization', to: 'Café <Zürich> "GmbH"' } });
      expect(byDetail).to.deep.include({ supportContact: { from: null, to: 'help@cafe.example' } });
      expect(audit.every((a) => a.target === org.organizationId && /^API key key_/.test(a.actor))).to.equal(true);
    });

    it('Member and Viewer are refused (403), another organization is 404; nothing changes', async () => {
      const before = await testDb().select().from(organizations).where(eq(organizations.id, org.organizationId));
      expectError(style, await put(org.keys.member, org.organizationId, { name: 'Member says' }), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await put(org.keys.viewer, org.organizationId, { name: 'Viewer says' }), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expectError(style, await put(org.keys.admin, other.organizationId, { name: 'Hijack' }), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await get(org.keys.admin, other.organizationId), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expect(await testDb().select().from(organizations).where(eq(organizations.id, org.organizationId))).to.deep.equal(before);
      expect((await testDb().select().from(organizations).where(eq(organizations.id, other.organizationId)))[0].name).to.equal('Someone else');
    });

    it('bad input is a 400 naming the field, and changes nothing', async () => {
      const before = await testDb().select().from(organizations).where(eq(organizations.id, org.organizationId));
      const cases: [unknown, string][] = [
        [{}, ''],
        [{ name: '' }, 'name'],
        [{ name: '   ' }, 'name'],
        [{ name: 'x'.repeat(101) }, 'name'],
        [{ name: 'two\nlines' }, 'name'],
        [{ name: 42 }, 'name'],
        [{ supportContact: 'call us' }, 'supportContact'],
        [{ supportContact: 'javascript:alert(1)' }, 'supportContact'],
        [{ supportContact: 'ftp://cafe.example' }, 'supportContact'],
        [{ name: 'Fine', supportContact: 'not@an' }, 'supportContact'],
        [{ name: 'Fine', id: 'org_x' }, ''],
      ];
      for (const [body, field] of cases) {
        const res = await put(org.keys.owner, org.organizationId, body);
        expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
        if (field) expect(res.body.message, JSON.stringify(body)).to.include(field);
      }
      expect(await testDb().select().from(organizations).where(eq(organizations.id, org.organizationId))).to.deep.equal(before);
      // null and "" remove the contact.
      expect(dataOf(style, await put(org.keys.owner, org.organizationId, { supportContact: null }))).to.include({ supportContact: null });
      expect(dataOf(style, await put(org.keys.owner, org.organizationId, { supportContact: 'a@b.example' }))).to.include({ supportContact: 'a@b.example' });
      expect(dataOf(style, await put(org.keys.owner, org.organizationId, { supportContact: '' }))).to.include({ supportContact: null });
    });
  });
}

describe('organization profile on the payer pages and in the dashboard', function () {
  this.timeout(60_000);
  const t = buildTestApp({ env });
  const origin = t.config.publicBaseUrl;
  let org: TestOrg;

  before(async () => {
    org = await createTestOrg('Local organization');
    await seedPoolAddresses(org.organizationId, 'evm', 30);
    // The status endpoint's memory of open orders on, as in a running API.
    await listenForPageChanges(t);
  });

  async function newOrderPage() {
    const res = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', org.keys.member)
      .send({ orderReference: `prof-${Date.now()}-${Math.random()}`, amount: '3', currency: 'USDT', chainId: CHAIN });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const path = new URL(res.body.paymentUrl).pathname;
    knownSecrets.add(path.split('/')[2]);
    return path;
  }

  it('a rename shows on an open payment page at its next load, and the support contact is linked (escaped); the checkout page too', async () => {
    const path = await newOrderPage();
    const first = await request(t.app).get(path);
    expect(first.text).to.include('Payment to Local organization');
    expect(first.text).to.not.include('id="support"');
    // Polled once, so the status endpoint's memory holds the open order's facts.
    expect((await request(t.app).get(`${path}/status`)).status).to.equal(200);

    const put = await request(t.app)
      .put(`/api/v1/organizations/${org.organizationId}`)
      .set('X-API-Key', org.keys.admin)
      .send({ name: 'Bäckerei <Müller> & Co', supportContact: 'hilfe@baeckerei.example' });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    const page = await request(t.app).get(path);
    expect(page.text).to.include('Payment to Bäckerei &lt;Müller&gt; &amp; Co');
    expect(page.text).to.include('<p class="support" id="support">Questions about this payment? Contact <a href="mailto:hilfe@baeckerei.example" rel="noreferrer noopener">hilfe@baeckerei.example</a></p>');
    expect((await request(t.app).get(`${path}/status`)).status).to.equal(200);

    const link = await request(t.app)
      .post('/api/v1/payment-links')
      .set('X-API-Key', org.keys.member)
      .send({ title: 'Bread', amount: '4', currencies: [{ currency: 'USDT', chainId: CHAIN }] });
    expect((await request(t.app).post(`/api/v1/payment-links/${link.body.id}/publish`).set('X-API-Key', org.keys.member)).status).to.equal(200);
    const checkout = await request(t.app).get(new URL(link.body.checkoutUrl).pathname);
    expect(checkout.text).to.include('Bäckerei &lt;Müller&gt; &amp; Co');
    expect(checkout.text).to.include('href="mailto:hilfe@baeckerei.example"');
  });

  it('Settings, Organization: an Admin renames it (the same operation, audit-logged as the user); a bad value keeps the form; Member and Viewer cannot', async () => {
    const admin = await createDashboardUser(org.organizationId, 'admin', 'admin@profile.test');
    const member = await createDashboardUser(org.organizationId, 'member', 'member@profile.test');
    const viewer = await createDashboardUser(org.organizationId, 'viewer', 'viewer@profile.test');

    const a = dashboardClient(t.app, origin);
    await a.signIn(admin.email, admin.password);
    const shown = await a.get('/dashboard/settings/organization');
    expect(shown.status).to.equal(200);
    expect(shown.text).to.include('id="org-name"');
    expect(shown.text).to.include('href="/dashboard/settings/organization"');
    const csrf = await a.csrf('/dashboard/settings/organization');

    const bad = await a.post('/dashboard/settings/organization', { _csrf: csrf, name: 'Kept name', supportContact: 'phone 555' });
    expect(bad.status).to.equal(400);
    expect(bad.text).to.include('supportContact must be an e-mail address');
    expect(bad.text).to.include('value="Kept name"');
    expect(bad.text).to.include('value="phone 555"');
    expect((await testDb().select().from(organizations).where(eq(organizations.id, org.organizationId)))[0].name).to.not.equal('Kept name');

    const ok = await a.post('/dashboard/settings/organization', { _csrf: csrf, name: 'Dashboard Bakery', supportContact: 'https://bakery.example/help' });
    expect(ok.status).to.equal(200);
    expect(ok.text).to.include('Saved: payers now see &quot;Dashboard Bakery&quot;.');
    const [row] = await testDb().select().from(organizations).where(eq(organizations.id, org.organizationId));
    expect(row).to.include({ name: 'Dashboard Bakery', supportContact: 'https://bakery.example/help' });
    const audit = (await auditOf(org.organizationId)).find((e) => e.actor === 'admin@profile.test');
    expect(audit?.detail).to.deep.include({ name: { from: 'Bäckerei <Müller> & Co', to: 'Dashboard Bakery' } });
    expect(audit?.userId).to.equal(admin.userId);
    const path = await newOrderPage();
    expect((await request(t.app).get(path)).text).to.include('href="https://bakery.example/help"');

    for (const who of [member, viewer]) {
      const c = dashboardClient(t.app, origin);
      await c.signIn(who.email, who.password);
      const view = await c.get('/dashboard/settings/organization');
      expect(view.status).to.equal(200);
      expect(view.text).to.include('Dashboard Bakery');
      expect(view.text).to.not.include('id="org-name"');
      const refused = await c.post('/dashboard/settings/organization', { _csrf: await c.csrf(), name: 'Not allowed', supportContact: '' });
      expect(refused.status).to.equal(403);
    }
    expect((await testDb().select().from(organizations).where(eq(organizations.id, org.organizationId)))[0].name).to.equal('Dashboard Bakery');
  });
});
