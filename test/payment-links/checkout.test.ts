import { expect } from 'chai';
import { eq, sql } from 'drizzle-orm';
import request from 'supertest';
import { expireDueOrders } from '../../core/orders/order-expiry';
import { recomputeOrder } from '../../core/orders/order-state';
import { orders } from '../../db/schema';
import { buildTestApp, createTestOrg, STYLES, testContext, testDb, type TestApp, type TestOrg } from '../helpers/harness';
import { CHAIN, checkpointAt, eventsOf, preserveCheckpoint, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf, expectError } from '../helpers/wire';

/** The public checkout /l/<slug> over HTTP: page, order per visit, returning visitor, cross-site posts, inventory. */
describe('payment link checkout', () => {
  preserveCheckpoint();
  const tokens = tokenEnv();
  const PUBLIC = 'https://pay.example.com';
  // Every request here comes from 127.0.0.1: the per-IP budget is the drain test's (checkout-drain).
  // The per-IP page limit (300/min) is shared through the run's Redis with the files before this one
  // (the checkout's browser test loads pages from 127.0.0.1): raised, it is not what these tests are about.
  const env = { ...tokens, PUBLIC_BASE_URL: PUBLIC, CHECKOUT_ORDERS_PER_IP: '100000', PAGE_RATE_LIMIT_PER_MINUTE: '1000000' };
  let org: TestOrg;

  before(async () => {
    org = await createTestOrg('Checkout <Shop>');
    await seedPoolAddresses(org.organizationId, 'evm', 60);
  });

  const choices = [{ currency: 'USDT', chainId: CHAIN }, { currency: 'USDC', chainId: CHAIN }];

  async function publishedLink(t: TestApp, body: Record<string, unknown> = {}, publish = true) {
    const res = await request(t.app)
      .post('/api/v1/payment-links')
      .set('X-API-Key', org.keys.member)
      .send({ title: 'T-shirt', description: 'Size M', amount: '12.5', currencies: choices, metadata: { sku: 'tee-m' }, ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const link = dataOf(t.config.apiStyle, res);
    if (publish) expect((await request(t.app).post(`/api/v1/payment-links/${link.id}/publish`).set('X-API-Key', org.keys.member)).status).to.equal(200);
    return { ...link, path: new URL(link.checkoutUrl).pathname as string };
  }
  const getLink = async (t: TestApp, id: string) => dataOf(t.config.apiStyle, await request(t.app).get(`/api/v1/payment-links/${id}`).set('X-API-Key', org.keys.viewer));
  const formPost = (t: TestApp, path: string, form: string) => request(t.app).post(`${path}/orders`).set('Origin', PUBLIC).type('form').send(form);

  it('GET: a draft is 404; a published link shows title, price, choices and a QR of its checkoutUrl, with the public headers', async () => {
    const t = buildTestApp({ env });
    const draft = await publishedLink(t, {}, false);
    expect((await request(t.app).get(draft.path)).status).to.equal(404);
    const link = await publishedLink(t);
    const page = await request(t.app).get(link.path);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('Sold by Checkout &lt;Shop&gt;');
    expect(page.text).to.include('<h1 id="title">T-shirt</h1>');
    expect(page.text).to.include('12.5 USDT / USDC');
    expect(page.text).to.match(/<input type="radio" id="choice-0" name="choice" value="USDT@ethereum-local" checked>/);
    expect(page.text).to.include('value="USDC@ethereum-local"');
    expect(page.text).to.include(`<form method="post" action="${link.path}/orders?lang=en"`);
    expect(page.text).to.include(`data-uri="${PUBLIC}${link.path}"`);
    expect(page.headers['content-security-policy']).to.include("script-src 'self'").and.include("form-action 'self'");
    expect(page.headers['cache-control']).to.equal('no-store');
    expect(page.text).to.not.match(/<script>|<script [^>]*>[^<]/);
    expect(page.text).to.not.match(/(src|href)="(https?:)?\/\//);
    const es = await request(t.app).get(`${link.path}?lang=es`);
    expect(es.text).to.include('Continuar al pago');
    expect((await request(t.app).get('/l/nope-nope-nope')).status).to.equal(404);
  });

  for (const style of STYLES) {
    it(`POST (form, style ${style.toUpperCase()}): a fresh order per visit through POST /orders' operation, 303 to its payment page`, async () => {
      const t = buildTestApp({ style, env });
      const link = await publishedLink(t, { successUrl: 'https://shop.example/thanks' });
      const res = await formPost(t, link.path, 'choice=USDC%40ethereum-local');
      expect(res.status, res.text).to.equal(303);
      expect(res.headers.location).to.match(/^\/pay\/[A-Za-z0-9_-]{22}$/);
      const cookie = res.headers['set-cookie'][0] as string;
      expect(cookie).to.match(new RegExp(`^sg_checkout=[A-Za-z0-9_-]{22}; Path=${link.path}; Max-Age=\\d+; HttpOnly; SameSite=Lax; Secure$`));
      const pay = await request(t.app).get(res.headers.location);
      expect(pay.status).to.equal(200);
      expect(pay.text).to.include('12.5 USDC');

      // The order is an ordinary order of the organization, with the link's metadata and id.
      const list = await request(t.app).get('/api/v1/orders?limit=100').set('X-API-Key', org.keys.viewer);
      const all = style === 'a' ? list.body.data.orders : list.body.data;
      const order = all.find((o: { paymentUrl: string }) => o.paymentUrl === `${PUBLIC}${res.headers.location}`);
      expect(order).to.include({ amount: '12.5', currency: 'USDC', chainId: CHAIN, status: 'pending', successUrl: 'https://shop.example/thanks' });
      expect(order.metadata).to.deep.equal({ sku: 'tee-m', paymentLinkId: link.id });
      expect(order.orderReference.startsWith(`${link.id}/`)).to.equal(true);

      // A second visitor (no cookie) gets a second order and address.
      const second = await formPost(t, link.path, 'choice=USDT%40ethereum-local');
      expect(second.status).to.equal(303);
      expect(second.headers.location).to.not.equal(res.headers.location);
      const counters = (await getLink(t, link.id)).counters;
      expect(counters).to.deep.include({ ordersCreated: 2, openOrders: 2, ordersCompleted: 0 });
    });
  }

  for (const style of STYLES) {
    it(`POST /orders naming a link in metadata.paymentLinkId (style ${style.toUpperCase()}): 400 VALIDATION_ERROR, the link's inventory and counters unchanged`, async () => {
      const t = buildTestApp({ style, env });
      const link = await publishedLink(t, { inventoryTotal: 1 });
      const before = await getLink(t, link.id);
      const res = await request(t.app)
        .post('/api/v1/orders')
        .set('X-API-Key', org.keys.member)
        .send({ orderReference: `claims-${link.id}-${style}`, amount: '12.5', currency: 'USDT', chainId: CHAIN, metadata: { paymentLinkId: link.id } });
      expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(res.body.message).to.include('metadata.paymentLinkId');
      const [{ n }] = await testDb().execute<{ n: number }>(sql`select count(*)::int as n from orders where order_reference = ${`claims-${link.id}-${style}`}`);
      expect(n).to.equal(0);
      const after = await getLink(t, link.id);
      expect(after.counters).to.deep.equal(before.counters);
      expect(after.counters.inventory).to.deep.equal({ total: 1, reserved: 0, sold: 0, left: 1 });
      expect(after.status).to.equal('active');
      // The link's one unit is still there for a payer.
      expect((await formPost(t, link.path, 'choice=USDT%40ethereum-local')).status).to.equal(303);
      expect((await getLink(t, link.id)).counters.inventory).to.deep.equal({ total: 1, reserved: 1, sold: 0, left: 0 });
    });
  }

  it('the same visitor returning within the window gets the same order back (cookie); none after it', async () => {
    const t = buildTestApp({ env });
    const link = await publishedLink(t);
    const first = await formPost(t, link.path, 'choice=USDT%40ethereum-local');
    const cookie = (first.headers['set-cookie'][0] as string).split(';')[0];
    const again = await formPost(t, link.path, 'choice=USDC%40ethereum-local').set('Cookie', cookie);
    expect(again.status).to.equal(303);
    expect(again.headers.location).to.equal(first.headers.location);
    const page = await request(t.app).get(link.path).set('Cookie', cookie);
    expect(page.text).to.include(`href="${first.headers.location}"`);
    expect(page.text).to.include('You have an open payment');
    expect((await getLink(t, link.id)).counters.ordersCreated).to.equal(1);
    const json = await request(t.app).post(`${link.path}/orders`).set('Cookie', cookie).send({ currency: 'USDT', chainId: CHAIN });
    expect(json.status).to.equal(200);
    expect(json.body).to.deep.equal({ paymentUrl: `${PUBLIC}${first.headers.location}`, reused: true });
    // Past the payment window the cookie's order is no longer open: a new visit makes a new order.
    t.clock.advance(11 * 60_000);
    const later = await formPost(t, link.path, 'choice=USDT%40ethereum-local').set('Cookie', cookie);
    expect(later.status).to.equal(303);
    expect(later.headers.location).to.not.equal(first.headers.location);
  });

  it('refuses a cross-site form post (403 page) and creates nothing', async () => {
    const t = buildTestApp({ env });
    const link = await publishedLink(t);
    for (const req of [
      request(t.app).post(`${link.path}/orders`).set('Origin', 'https://evil.example').type('form').send('choice=USDT%40ethereum-local'),
      request(t.app).post(`${link.path}/orders`).set('Sec-Fetch-Site', 'cross-site').type('form').send('choice=USDT%40ethereum-local'),
      request(t.app).post(`${link.path}/orders`).type('form').send('choice=USDT%40ethereum-local'),
    ]) {
      const res = await req;
      expect(res.status).to.equal(403);
      expect(res.text).to.include('Please start from the checkout page');
      expect(res.headers['set-cookie']).to.equal(undefined);
    }
    const big = await formPost(t, link.path, `choice=${'x'.repeat(10_000)}`);
    expect(big.status).to.equal(413);
    expect((await getLink(t, link.id)).counters.ordersCreated).to.equal(0);
  });

  it('a payer-chosen amount: within min and max; below min is a readable 400 (form) or INVALID_AMOUNT (JSON)', async () => {
    const t = buildTestApp({ env });
    const link = await publishedLink(t, { title: 'Tip jar', amount: '0', minAmount: '2', maxAmount: '100' });
    const page = await request(t.app).get(link.path);
    expect(page.text).to.include('id="amount" name="amount"');
    expect(page.text).to.include('From 2 to 100.');
    const low = await formPost(t, link.path, 'choice=USDT%40ethereum-local&amount=1.5');
    expect(low.status).to.equal(400);
    expect(low.text).to.include('The amount must be at least 2.');
    expect(low.text).to.include('value="1.5"');
    expect(low.text).to.include('role="alert"');
    const bad = await formPost(t, link.path, 'choice=USDT%40ethereum-local&amount=abc');
    expect(bad.text).to.include('Enter an amount such as 10 or 10.50.');
    const high = await request(t.app).post(`${link.path}/orders`).send({ currency: 'USDT', chainId: CHAIN, amount: '101' });
    expect(high.status).to.equal(400);
    expect(high.body).to.include({ error: 'INVALID_AMOUNT' });
    const wrongChoice = await formPost(t, link.path, 'choice=DAI%40ethereum-local&amount=5');
    expect(wrongChoice.status).to.equal(400);
    expect(wrongChoice.text).to.include('Choose one of the offered tokens and networks.');
    expect((await getLink(t, link.id)).counters.ordersCreated).to.equal(0);
    const ok = await request(t.app).post(`${link.path}/orders`).send({ currency: 'USDT', chainId: CHAIN, amount: '7.25' });
    expect(ok.status).to.equal(201);
    expect(ok.body.paymentUrl).to.match(/^https:\/\/pay\.example\.com\/pay\//);
    const pay = await request(t.app).get(new URL(ok.body.paymentUrl).pathname);
    expect(pay.text).to.include('7.25 USDT');
  });

  it('archived and expired links answer 410 with a friendly page; posts too', async () => {
    const t = buildTestApp({ env });
    const link = await publishedLink(t);
    await request(t.app).post(`/api/v1/payment-links/${link.id}/archive`).set('X-API-Key', org.keys.member);
    const page = await request(t.app).get(link.path);
    expect(page.status).to.equal(410);
    expect(page.text).to.include('This payment link is no longer available');
    expect((await formPost(t, link.path, 'choice=USDT%40ethereum-local')).status).to.equal(410);
    const expiring = await publishedLink(t, { expiresAt: new Date(t.clock.now().getTime() + 60_000).toISOString() });
    t.clock.advance(61_000);
    expect((await request(t.app).get(expiring.path)).status).to.equal(410);
  });

  it('inventory: an order reserves a unit, expiry (after grace) returns it, completion sells it; sold out says so', async () => {
    const t = buildTestApp({ env });
    const ctx = testContext(t.config, t.clock);
    const link = await publishedLink(t, { inventoryTotal: 2 });
    const first = await formPost(t, link.path, 'choice=USDT%40ethereum-local');
    const second = await formPost(t, link.path, 'choice=USDT%40ethereum-local');
    expect([first.status, second.status]).to.deep.equal([303, 303]);
    expect((await getLink(t, link.id)).counters.inventory).to.deep.equal({ total: 2, reserved: 2, sold: 0, left: 0 });
    expect((await getLink(t, link.id)).status).to.equal('sold_out');
    const page = await request(t.app).get(link.path);
    expect(page.status).to.equal(200);
    expect(page.text).to.include('id="sold-out"');
    expect(page.text).to.not.include('<form');
    const third = await formPost(t, link.path, 'choice=USDT%40ethereum-local');
    expect(third.status).to.equal(409);
    expect(third.text).to.include('Sold out');

    // Completion sells one unit: a confirmed payment to the first order's address.
    const token = (loc: string) => loc.split('/')[2];
    const [paid] = await testDb().select().from(orders).where(eq(orders.payToken, token(first.headers.location)));
    await insertTestTransfer({ chainId: CHAIN, currency: 'USDT', amount: 12_500_000n, toAddress: paid.address!, orderId: paid.id, organizationId: org.organizationId, counted: true, status: 'confirmed', confirmations: 3, blockTimestamp: new Date(paid.createdAt.getTime() + 1000) });
    expect(await testDb().transaction((tx) => recomputeOrder(tx, ctx, paid.id))).to.equal('completed');
    const sold = await getLink(t, link.id);
    expect(sold.counters).to.deep.include({ ordersCompleted: 1, openOrders: 1 });
    expect(sold.counters.inventory).to.deep.equal({ total: 2, reserved: 1, sold: 1, left: 0 });
    expect(sold.counters.amountCollected).to.deep.equal([{ currency: 'USDT', chainId: CHAIN, amount: '12.5' }]);
    const completed = (await eventsOf(org.organizationId, 'order.completed')).find((e) => (e.data as { orderId: string }).orderId === paid.id)!;
    expect((completed.data as { metadata: Record<string, unknown> }).metadata).to.deep.equal({ sku: 'tee-m', paymentLinkId: link.id });

    // Expiry after the grace period returns the other unit.
    const [open] = await testDb().select().from(orders).where(eq(orders.payToken, token(second.headers.location)));
    await checkpointAt(new Date(open.graceEndsAt.getTime() + 1000));
    t.clock.advance(open.graceEndsAt.getTime() + 1000 - t.clock.now().getTime());
    await expireDueOrders(testContext(t.config, t.clock));
    const returned = await getLink(t, link.id);
    expect(returned.counters.inventory).to.deep.equal({ total: 2, reserved: 0, sold: 1, left: 1 });
    expect(returned.status).to.equal('active');
    const fourth = await formPost(t, link.path, 'choice=USDT%40ethereum-local');
    expect(fourth.status).to.equal(303);
  });

  it('DELETE on a link with orders archives it instead and says so', async () => {
    const t = buildTestApp({ env });
    const link = await publishedLink(t);
    expect((await formPost(t, link.path, 'choice=USDT%40ethereum-local')).status).to.equal(303);
    const res = await request(t.app).delete(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.member);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.include({ id: link.id, deleted: false, status: 'archived' });
    expect(res.body.paymentLink.status).to.equal('archived');
    expect((await request(t.app).get(link.path)).status).to.equal(410);
  });

  it('a maxOpenOrders cap: the link holds at most that many unpaid orders (503 page), others get theirs after expiry', async () => {
    const t = buildTestApp({ env });
    const link = await publishedLink(t, { maxOpenOrders: 1 });
    expect((await formPost(t, link.path, 'choice=USDT%40ethereum-local')).status).to.equal(303);
    const capped = await formPost(t, link.path, 'choice=USDT%40ethereum-local');
    expect(capped.status).to.equal(503);
    expect(capped.headers['retry-after']).to.equal('60');
    expect(capped.text).to.include('Please try again in a few minutes');
    const [{ n }] = await testDb().execute<{ n: number }>(sql`select count(*)::int as n from orders where metadata->>'paymentLinkId' = ${link.id}`);
    expect(n).to.equal(1);
  });
});
