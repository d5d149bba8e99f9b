import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import request from 'supertest';
import { buildTestApp, createTestOrg, testDb, testConfig, testContext, type TestOrg } from '../helpers/harness';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';
import { FAST_WEBHOOK_ENV, eventually, startReceiver, type Receiver } from '../helpers/webhooks';
import { tokenEnv } from '../helpers/orders';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { emitEvent } from '../../core/events/events';
import { ManualClock } from '../../core/platform/clock';
import { paymentLinks, webhookDeliveries } from '../../db/schema';

/**
 * The dashboard pages added for issue 29's remaining items, through HTTP as a browser sends them:
 * the order list's cursor paging and bounded count, an order's events and deliveries, redelivering
 * every failed delivery since a time, payment links, the chrome's languages. Each page's
 * permissions and another organization's ids are checked beside what it does.
 */
describe('dashboard: order paging, order events, bulk redelivery, payment links, languages', function () {
  this.timeout(60_000);
  const t = buildTestApp({ env: { ...FAST_WEBHOOK_ENV, ...tokenEnv() } });
  const origin = t.config.publicBaseUrl;
  let org: TestOrg;
  let other: TestOrg;
  let owner: { email: string; password: string };
  let member: { email: string; password: string };
  let viewer: { email: string; password: string };
  let otherOwner: { email: string; password: string };
  let workers: RunningWorkers;
  let receiver: Receiver;
  let receiverUp = false;

  /** Orders of an organization as a large shop's history (one statement; the list is what is tested). */
  async function insertOrders(organizationId: string, prefix: string, count: number): Promise<void> {
    await testDb().execute(sql`
      insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol, address,
        pool_address_id, status, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at, created_at, updated_at)
      select ${`ord_${prefix}`} || lpad(i::text, 26 - ${prefix.length}, '0'), ${organizationId}, ${`${prefix}-ref-`} || i, ${`tok${prefix}`} || md5(i::text), 1000000, 0,
        'USDT', 'ethereum-local', 'evm', '0x' || substr(md5(i::text), 1, 40), i, 'pending', 30, 5, 3,
        now() + interval '30 minutes', now() + interval '35 minutes', now() - make_interval(secs => i), now()
      from generate_series(1, ${count}) as i`);
  }

  const orderIdsOf = (page: string) => [...page.matchAll(/data-order-id="([^"]+)"/g)].map((m) => m[1]);
  const linkOf = (page: string, rel: 'next' | 'prev') => {
    const m = new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(page);
    return m ? m[1].replace(/&amp;/g, '&') : null;
  };

  const linksOfOrg = () => testDb().select().from(paymentLinks).where(eq(paymentLinks.organizationId, org.organizationId));

  before(async () => {
    org = await createTestOrg('Paging Co');
    other = await createTestOrg('Other Paging Co');
    owner = await createDashboardUser(org.organizationId, 'owner', 'owner@paging.test');
    member = await createDashboardUser(org.organizationId, 'member', 'member@paging.test');
    viewer = await createDashboardUser(org.organizationId, 'viewer', 'viewer@paging.test');
    otherOwner = await createDashboardUser(other.organizationId, 'owner', 'owner@other-paging.test');
    receiver = await startReceiver(() => (receiverUp ? { status: 200, body: 'ok' } : { status: 500, body: 'receiver down for maintenance' }));
    workers = await startWorkerProcess(testContext(testConfig(FAST_WEBHOOK_ENV), new ManualClock()));
  });
  after(async () => {
    await workers?.close();
    await receiver?.close();
  });

  describe('order list', () => {
    it('pages by cursor through every order once, newest first, and back', async () => {
      await insertOrders(org.organizationId, 'pg', 130);
      const c = dashboardClient(t.app, origin);
      await c.signIn(viewer.email, viewer.password);
      const first = await c.get('/dashboard/orders');
      expect(first.status).to.equal(200);
      expect(first.text).to.contain('130 in all');
      const p1 = orderIdsOf(first.text);
      expect(p1).to.have.length(50);
      expect(linkOf(first.text, 'prev')).to.equal(null);
      const second = await c.get(linkOf(first.text, 'next')!);
      const p2 = orderIdsOf(second.text);
      const third = await c.get(linkOf(second.text, 'next')!);
      const p3 = orderIdsOf(third.text);
      expect(p2).to.have.length(50);
      expect(p3).to.have.length(30);
      expect(linkOf(third.text, 'next'), 'the last page has no Next').to.equal(null);
      // Newest first (the fixture's i-th order is i seconds old), each once.
      const all = [...p1, ...p2, ...p3];
      expect(all).to.deep.equal(Array.from({ length: 130 }, (_, i) => `ord_pg${String(i + 1).padStart(24, '0')}`));
      // Previous from the third page is the second page again; from the second, the first.
      const back = await c.get(linkOf(third.text, 'prev')!);
      expect(orderIdsOf(back.text)).to.deep.equal(p2);
      const backAgain = await c.get(linkOf(back.text, 'prev')!);
      expect(orderIdsOf(backAgain.text)).to.deep.equal(p1);
      expect(linkOf(backAgain.text, 'prev'), 'the newest page has no Previous').to.equal(null);
      // Filters and the search ride along the cursor; the API's own list still counts exactly.
      const search = await c.get('/dashboard/orders?q=pg-ref-12');
      expect(orderIdsOf(search.text).sort()).to.deep.equal(['ord_pg000000000000000000000012', ...Array.from({ length: 10 }, (_, i) => `ord_pg00000000000000000000012${i}`)].sort());
      const api = await request(t.app).get('/api/v1/orders?limit=10').set('X-API-Key', org.keys.viewer);
      expect(api.body.pagination).to.include({ total: 130, totalPages: 13 });
    });

    it('says "more than 1,000" instead of counting a larger organization exactly', async () => {
      const big = await createTestOrg('Big Shop');
      const user = await createDashboardUser(big.organizationId, 'viewer', 'viewer@big.test');
      await insertOrders(big.organizationId, 'big', 1_050);
      const c = dashboardClient(t.app, origin);
      await c.signIn(user.email, user.password);
      const page = await c.get('/dashboard/orders');
      expect(page.text).to.contain('more than 1,000 in all');
      expect(orderIdsOf(page.text)).to.have.length(50);
      const api = await request(t.app).get('/api/v1/orders').set('X-API-Key', big.keys.viewer);
      expect(api.body.pagination.total).to.equal(1_050);
    });

    it("a cursor naming another organization's order shows nothing of theirs", async () => {
      await insertOrders(other.organizationId, 'oth', 3);
      const c = dashboardClient(t.app, origin);
      await c.signIn(owner.email, owner.password);
      for (const path of ['/dashboard/orders?after=ord_oth00000000000000000000001', '/dashboard/orders?before=ord_oth00000000000000000000003']) {
        const page = await c.get(path);
        expect(page.status).to.equal(200);
        expect(orderIdsOf(page.text)).to.deep.equal([]);
      }
      expect((await c.get('/dashboard/orders/ord_oth00000000000000000000001')).status).to.equal(404);
    });
  });

  describe('order events and webhook deliveries', () => {
    let endpointId: string;
    const orderId = 'ord_pg000000000000000000000007';

    it("shows an order's event with each attempt's status, duration and response excerpt", async () => {
      const res = await request(t.app)
        .post('/api/v1/webhooks/endpoints')
        .set('X-API-Key', org.keys.admin)
        .send({ url: `${receiver.url}/orders`, events: ['order.completed'] });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      endpointId = res.body.id;
      await testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { orderId, status: 'completed' } }));
      await testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { orderId: 'ord_pg000000000000000000000008' } }));
      // Five attempts (the compressed schedule), every one answered 500: the delivery fails.
      await eventually(async () => {
        const rows = await testDb().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId));
        return rows.length === 2 && rows.every((r) => r.status === 'failed');
      }, 20_000, 'both deliveries failed');

      const c = dashboardClient(t.app, origin);
      await c.signIn(viewer.email, viewer.password);
      const page = await c.get(`/dashboard/orders/${orderId}`);
      expect(page.status).to.equal(200);
      const events = page.text.slice(page.text.indexOf('id="order-events"'));
      expect(events).to.contain('order.completed').and.contain(`${receiver.url}/orders`).and.contain('receiver down for maintenance');
      expect([...events.matchAll(/<tr data-event-id=/g)], 'this order\'s event only').to.have.length(1);
      expect([...events.matchAll(/class="attempt"/g)]).to.have.length(5);
      expect([...events.matchAll(/HTTP <span class="status-code">500<\/span>/g)]).to.have.length(5);
      expect(events).to.match(/<span class="duration">\d+ ms<\/span>/);
      // A Viewer reads but gets no redeliver button; an Owner gets one per delivery.
      expect(events).not.to.contain('/redeliver');
      const o = dashboardClient(t.app, origin);
      await o.signIn(owner.email, owner.password);
      expect((await o.get(`/dashboard/orders/${orderId}`)).text).to.contain(`/dashboard/settings/webhooks/${endpointId}/events/`);
      // Another organization's user does not see the order, nor its deliveries.
      const x = dashboardClient(t.app, origin);
      await x.signIn(otherOwner.email, otherOwner.password);
      expect((await x.get(`/dashboard/orders/${orderId}`)).status).to.equal(404);
    });

    it('redelivers every delivery that failed since a time, through the same domain operation; roles and other organizations refused', async () => {
      const path = `/dashboard/settings/webhooks/${endpointId}/redeliver-failed`;
      const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
      // A Viewer and a Member are refused (Admin and up, as the API's redeliver); nothing changes.
      for (const who of [viewer, member]) {
        const c = dashboardClient(t.app, origin);
        await c.signIn(who.email, who.password);
        expect((await c.post(path, { _csrf: await c.csrf(), since })).status).to.equal(403);
      }
      // Another organization's Owner, editing the endpoint id into their own form: 404.
      const x = dashboardClient(t.app, origin);
      await x.signIn(otherOwner.email, otherOwner.password);
      expect((await x.post(path, { _csrf: await x.csrf(), since })).status).to.equal(404);
      const untouched = await testDb().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId));
      expect(untouched.map((r) => r.status)).to.deep.equal(['failed', 'failed']);

      const c = dashboardClient(t.app, origin);
      await c.signIn(owner.email, owner.password);
      const csrf = await c.csrf();
      expect((await c.post(path, { _csrf: csrf, since: 'yesterday' })).status).to.equal(400);
      const future = await c.post(path, { _csrf: csrf, since: new Date(Date.now() + 3600_000).toISOString().slice(0, 16) });
      expect(future.status).to.equal(200);
      expect(future.text).to.contain('No delivery failed since');
      receiverUp = true;
      const done = await c.post(path, { _csrf: csrf, since });
      expect(done.status).to.equal(200);
      expect(done.text).to.contain('2 failed deliveries since');
      await eventually(async () => {
        const rows = await testDb().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId));
        return rows.every((r) => r.status === 'succeeded');
      }, 15_000, 'both deliveries succeeded');
      const detail = await c.get(`/dashboard/orders/${orderId}`);
      expect(detail.text).to.contain('<span class="badge ok">succeeded</span>');
      expect([...detail.text.matchAll(/class="attempt"/g)]).to.have.length(6);
      const audit = await c.get('/dashboard/audit');
      expect(audit.text).to.contain('webhook_deliveries.redelivered');
    });
  });

  describe('payment links', () => {
    const form = (csrf: string, extra: Record<string, string | string[]> = {}) => ({
      _csrf: csrf,
      title: 'Coffee beans 1 kg',
      amount: '24.50',
      currencies: ['USDT@ethereum-local'],
      inventoryTotal: '5',
      description: '',
      slug: '',
      ...extra,
    });
    const linksOf = (organizationId: string) => testDb().select().from(paymentLinks).where(eq(paymentLinks.organizationId, organizationId));

    it('a Member creates a draft, publishes and archives it; the list shows its counters', async () => {
      const c = dashboardClient(t.app, origin);
      await c.signIn(member.email, member.password);
      const created = await c.post('/dashboard/payment-links', form(await c.csrf('/dashboard/payment-links')));
      expect(created.status, created.text).to.equal(201);
      const [link] = await linksOf(org.organizationId);
      expect(link).to.include({ title: 'Coffee beans 1 kg', amount: '24.50', status: 'draft', inventoryTotal: 5 });
      const row = () => c.get('/dashboard/payment-links').then((r) => r.text.slice(r.text.indexOf(`data-link-id="${link.id}"`)).split('</tr>')[0]);
      expect(await row()).to.contain('data-status="draft"').and.contain('<span data-counter="created">0</span>').and.contain('5 of 5');
      // The API sees the same link (one code path).
      const api = await request(t.app).get(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.viewer);
      expect(api.body.status).to.equal('draft');
      const csrf = await c.csrf('/dashboard/payment-links');
      expect((await c.post(`/dashboard/payment-links/${link.id}/publish`, { _csrf: csrf })).status).to.equal(200);
      expect(await row()).to.contain('data-status="active"').and.not.contain('>Publish<');
      expect((await request(t.app).get(`/l/${link.slug}`)).status).to.equal(200);
      expect((await c.post(`/dashboard/payment-links/${link.id}/archive`, { _csrf: csrf })).status).to.equal(200);
      expect(await row()).to.contain('data-status="archived"');
      // Archiving twice is the domain's 409, shown as a page.
      expect((await c.post(`/dashboard/payment-links/${link.id}/archive`, { _csrf: csrf })).status).to.equal(409);
    });

    it('refuses bad input with the domain\'s error and creates nothing', async () => {
      const c = dashboardClient(t.app, origin);
      await c.signIn(owner.email, owner.password);
      const csrf = await c.csrf('/dashboard/payment-links');
      const before = (await linksOf(org.organizationId)).length;
      for (const [extra, status] of [
        [{ currencies: [] }, 400],
        [{ amount: 'ten' }, 400],
        [{ title: '' }, 400],
        [{ inventoryTotal: '-1' }, 400],
        [{ currencies: ['USDT@no-such-chain'] }, 400],
        [{ slug: 'a/b' }, 400],
        // A value that is not CURRENCY@chain beside a good one: refused, not dropped.
        [{ currencies: ['USDT@ethereum-local', 'USDT on ethereum-local'] }, 400],
      ] as [Record<string, string | string[]>, number][]) {
        const res = await c.post('/dashboard/payment-links', form(csrf, extra));
        expect(res.status, JSON.stringify(extra)).to.equal(status);
      }
      expect(await linksOf(org.organizationId)).to.have.length(before);
    });

    it('a Viewer reads links without actions and is refused every post; another organization\'s link ids are 404', async () => {
      const [link] = await linksOf(org.organizationId);
      const v = dashboardClient(t.app, origin);
      await v.signIn(viewer.email, viewer.password);
      const page = await v.get('/dashboard/payment-links');
      expect(page.status).to.equal(200);
      expect(page.text).to.contain(link.title);
      expect([...page.text.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) => m[1])).to.deep.equal(['/dashboard/sign-out']);
      const csrf = await v.csrf();
      expect((await v.post('/dashboard/payment-links', form(csrf))).status).to.equal(403);
      const draft = await request(t.app).post('/api/v1/payment-links').set('X-API-Key', org.keys.member).send({ title: 'Draft', amount: '1', currencies: [{ currency: 'USDT', chainId: 'ethereum-local' }] });
      expect(draft.status).to.equal(201);
      expect((await v.post(`/dashboard/payment-links/${draft.body.id}/publish`, { _csrf: csrf })).status).to.equal(403);
      const x = dashboardClient(t.app, origin);
      await x.signIn(otherOwner.email, otherOwner.password);
      const xcsrf = await x.csrf();
      for (const verb of ['publish', 'archive']) {
        expect((await x.post(`/dashboard/payment-links/${draft.body.id}/${verb}`, { _csrf: xcsrf })).status, verb).to.equal(404);
      }
      expect((await x.get('/dashboard/payment-links')).text).not.to.contain(draft.body.id);
      const [still] = await testDb().select().from(paymentLinks).where(and(eq(paymentLinks.id, draft.body.id)));
      expect(still.status).to.equal('draft');
    });
  });

  describe('the new writes refuse what the old ones refuse', () => {
    it('payment link create/publish/archive and bulk redelivery: no session, no or a wrong CSRF token, another site; nothing changes', async () => {
      const draft = await request(t.app).post('/api/v1/payment-links').set('X-API-Key', org.keys.member).send({ title: 'Guarded', amount: '2', currencies: [{ currency: 'USDT', chainId: 'ethereum-local' }] });
      expect(draft.status).to.equal(201);
      const endpoint = await request(t.app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/guarded`, events: ['order.completed'] });
      expect(endpoint.status).to.equal(201);
      const c = dashboardClient(t.app, origin);
      await c.signIn(owner.email, owner.password);
      const csrf = await c.csrf();
      const since = new Date(Date.now() - 3600_000).toISOString().slice(0, 16);
      const writes: [string, Record<string, string | string[]>][] = [
        ['/dashboard/payment-links', { title: 'Forged', amount: '1', currencies: ['USDT@ethereum-local'] }],
        [`/dashboard/payment-links/${draft.body.id}/publish`, {}],
        [`/dashboard/payment-links/${draft.body.id}/archive`, {}],
        [`/dashboard/settings/webhooks/${endpoint.body.id}/redeliver-failed`, { since }],
      ];
      const linksBefore = (await linksOfOrg()).length;
      for (const [path, form] of writes) {
        // No session at all: to the sign-in page, nothing done.
        const anonymous = await request(t.app).post(path).set('Origin', origin).type('form').send({ ...form, _csrf: csrf });
        expect(anonymous.status, path).to.equal(303);
        expect(anonymous.headers.location, path).to.match(/^\/dashboard\/sign-in/);
        for (const res of [
          await c.post(path, form),
          await c.post(path, { ...form, _csrf: 'A'.repeat(43) }),
          await c.agent.post(path).set('Origin', 'https://evil.example').type('form').send({ ...form, _csrf: csrf }),
          await c.agent.post(path).set('Sec-Fetch-Site', 'cross-site').type('form').send({ ...form, _csrf: csrf }),
          await c.agent.post(path).type('form').send({ ...form, _csrf: csrf }),
        ]) {
          expect(res.status, `${path}: ${res.text}`).to.equal(403);
        }
      }
      expect(await linksOfOrg()).to.have.length(linksBefore);
      const [still] = await testDb().select().from(paymentLinks).where(eq(paymentLinks.id, draft.body.id));
      expect(still.status).to.equal('draft');
      const audit = await c.get('/dashboard/audit');
      expect(audit.text).not.to.contain(draft.body.id).and.not.to.contain(endpoint.body.id);
    });
  });

  describe('languages of the chrome', () => {
    it('negotiates the payment page\'s languages: Accept-Language, then ?lang=, English otherwise', async () => {
      const c = dashboardClient(t.app, origin);
      await c.signIn(owner.email, owner.password);
      const english = await c.get('/dashboard/orders');
      expect(english.headers['content-language']).to.equal('en');
      expect(english.text).to.contain('<html lang="en">').and.contain('<h1>Orders</h1>').and.contain('>Sign out</button>');
      const spanish = await c.get('/dashboard/orders').set('Accept-Language', 'es-ES,es;q=0.9,en;q=0.5');
      expect(spanish.headers['content-language']).to.equal('es');
      expect(spanish.text).to.contain('<html lang="es">').and.contain('<h1>Pedidos</h1>').and.contain('>Cerrar sesión</button>').and.contain('>Enlaces de pago</a>');
      expect(spanish.text).to.contain('>Siguiente</a>').and.contain('>Filtrar</button>').and.contain('>Exportar CSV</a>');
      const webhooks = await c.get('/dashboard/settings/webhooks').set('Accept-Language', 'es');
      expect(webhooks.text).to.contain('<h1>Webhooks</h1>').and.contain('>Añadir un endpoint</h2>').and.contain('>Añadir endpoint</button>');
      // ?lang= wins over the header, and the navigation keeps it.
      const asked = await c.get('/dashboard?lang=es').set('Accept-Language', 'en');
      expect(asked.text).to.contain('<h1>Resumen</h1>').and.contain('href="/dashboard/orders?lang=es"');
      const unknown = await c.get('/dashboard').set('Accept-Language', 'de');
      expect(unknown.text).to.contain('<h1>Overview</h1>');
    });
  });
});
