import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { SOLANA_LOCAL_CHAIN_ID } from '../../core/chains/solana/solana-local-state';
import { TRON_LOCAL_CHAIN_ID } from '../../core/chains/tron/tron-local-state';
import { recomputeOrder } from '../../core/orders/order-state';
import { orders, paymentLinks } from '../../db/schema';
import { buildTestApp, createTestOrg, STYLES, testContext, testDb, type TestApp, type TestOrg } from '../helpers/harness';
import { tokenEnv } from '../helpers/orders';
import { randomEvmAddress, randomSolanaAddress, randomTronAddress, seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf, expectError } from '../helpers/wire';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';

/** A chains file adding EURC (a euro stablecoin: no USD route) to ethereum-local. */
function eurcChainsFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-usd-links-'));
  const file = path.join(dir, 'chains.yaml');
  fs.writeFileSync(file, `tokens:\n  - chainId: ${LOCAL_CHAIN_ID}\n    currency: EURC\n    address: "${randomEvmAddress()}"\n    decimals: 6\n`);
  return file;
}

/**
 * Payment links priced in USD (issue 41, "a payment link priced in USD offers the routes"), over
 * HTTP in both wire formats: the link's currencies are the routes of the USD order each checkout
 * makes; its page shows the price in USD and the routes as text (no token radio buttons); its post
 * makes a USD order (no address) and sends the payer to the payment page, where the route is picked.
 */
describe('payment links priced in USD', function () {
  this.timeout(60_000);
  const PUBLIC = 'https://pay.example.com';
  const env = {
    ...tokenEnv(),
    TOKEN_TRON_LOCAL_USDT: randomTronAddress(),
    TOKEN_SOLANA_LOCAL_USDC: randomSolanaAddress(),
    CHAINS_FILE: eurcChainsFile(),
    PUBLIC_BASE_URL: PUBLIC,
    CHECKOUT_ORDERS_PER_IP: '100000',
    PAGE_RATE_LIMIT_PER_MINUTE: '1000000',
  };
  const routes = [
    { currency: 'USDT', chainId: LOCAL_CHAIN_ID },
    { currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID },
    { currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID },
  ];
  let org: TestOrg;

  before(async () => {
    org = await createTestOrg('USD Links Shop');
    await seedPoolAddresses(org.organizationId, 'evm', 10);
    await seedPoolAddresses(org.organizationId, 'tron', 10);
    await seedPoolAddresses(org.organizationId, 'solana', 10);
  });

  const createLink = (t: TestApp, body: Record<string, unknown>, key = org.keys.member) =>
    request(t.app).post('/api/v1/payment-links').set('X-API-Key', key).send({ title: 'Concert ticket', amount: '12.5', currencies: routes, priceCurrency: 'USD', ...body });
  async function publishedLink(t: TestApp, body: Record<string, unknown> = {}, o: TestOrg = org) {
    const res = await createLink(t, body, o.keys.member);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const link = dataOf(t.config.apiStyle, res);
    const published = await request(t.app).post(`/api/v1/payment-links/${link.id}/publish`).set('X-API-Key', o.keys.member);
    expect(published.status, JSON.stringify(published.body)).to.equal(200);
    return { ...dataOf(t.config.apiStyle, published), path: new URL(link.checkoutUrl).pathname as string };
  }
  const getLink = async (t: TestApp, id: string) => dataOf(t.config.apiStyle, await request(t.app).get(`/api/v1/payment-links/${id}`).set('X-API-Key', org.keys.viewer));
  const formPost = (t: TestApp, linkPath: string, form: string) => request(t.app).post(`${linkPath}/orders`).set('Origin', PUBLIC).type('form').send(form);
  const payTokenOf = (location: string) => location.split('/')[2];
  async function orderOfPage(t: TestApp, location: string, key = org.keys.viewer) {
    const [row] = await testDb().select({ id: orders.id }).from(orders).where(eq(orders.payToken, payTokenOf(location)));
    const res = await request(t.app).get(`/api/v1/orders/${row.id}`).set('X-API-Key', key);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return dataOf(t.config.apiStyle, res);
  }

  for (const style of STYLES) {
    describe(`style ${style.toUpperCase()}`, () => {
      const t = buildTestApp({ style, env });

      it('creates a link priced in USD with three routes; its view says priceCurrency USD; a token link says null', async () => {
        const res = await createLink(t, { metadata: { sku: 'ticket' } });
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        const link = dataOf(style, res);
        expect(link).to.include({ amount: '12.5', priceCurrency: 'USD', status: 'draft' });
        expect(link.currencies).to.deep.equal(routes);
        expect((await getLink(t, link.id)).priceCurrency).to.equal('USD');
        const token = dataOf(style, await createLink(t, { currencies: [routes[0]], priceCurrency: undefined }));
        expect(token.priceCurrency).to.equal(null);
        const explicitNull = dataOf(style, await createLink(t, { currencies: [routes[0]], priceCurrency: null, amount: '1.125' }));
        expect(explicitNull).to.include({ priceCurrency: null, amount: '1.125' });
      });

      it('checkout: the page shows the USD price and the routes as text, no token radio; the post makes a USD order (no address) and 303s to its payment page, which lists the routes', async () => {
        const link = await publishedLink(t, { metadata: { sku: 'ticket' } });
        const page = await request(t.app).get(link.path);
        expect(page.status).to.equal(200);
        expect(page.text).to.include('<span class="value amount" id="price">12.5 USD</span>');
        expect(page.text).to.include(
          '<p class="routes" id="routes">Pay with USDT on Local EVM (anvil), USDT on Local Tron (tron-local), USDC on Local Solana (solana-local).</p>',
        );
        expect(page.text).to.include('there you choose the token and network you pay with');
        expect(page.text).to.not.include('name="choice"');
        expect(page.text).to.not.include('name="amount"');
        expect(page.text).to.include(`<form method="post" action="${link.path}/orders?lang=en"`);
        expect(page.text).to.include('id="pay-button"');
        const es = await request(t.app).get(`${link.path}?lang=es`);
        expect(es.text).to.include('Pague con USDT en Local EVM (anvil), USDT en Local Tron (tron-local), USDC en Local Solana (solana-local).');
        expect(es.text).to.include('12.5 USD');

        // The form has nothing but its button: a browser posts an empty body.
        const res = await formPost(t, link.path, '');
        expect(res.status, res.text).to.equal(303);
        expect(res.headers.location).to.match(/^\/pay\/[A-Za-z0-9_-]{22}$/);
        expect(res.headers['set-cookie'][0]).to.match(new RegExp(`^sg_checkout=[A-Za-z0-9_-]{22}; Path=${link.path}; Max-Age=\\d+; HttpOnly; SameSite=Lax; Secure$`));

        const order = await orderOfPage(t, res.headers.location);
        expect(order).to.include({ currency: 'USD', amount: '12.5', status: 'pending', route: null, address: null, chainId: null });
        expect(order.routes).to.deep.equal([
          { currency: 'USDT', chainId: LOCAL_CHAIN_ID, amount: '12.5' },
          { currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID, amount: '12.5' },
          { currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID, amount: '12.5' },
        ]);
        expect(order.metadata).to.deep.equal({ sku: 'ticket', paymentLinkId: link.id });
        expect(order.orderReference.startsWith(`${link.id}/`)).to.equal(true);
        expect(order.paymentUrl).to.equal(`${PUBLIC}${res.headers.location}`);

        const pay = await request(t.app).get(res.headers.location);
        expect(pay.status).to.equal(200);
        const buttons = [...pay.text.matchAll(/<button type="submit" name="route" value="([^"]+)"/g)].map((m) => m[1]);
        expect(buttons).to.deep.equal([`USDT@${LOCAL_CHAIN_ID}`, `USDT@${TRON_LOCAL_CHAIN_ID}`, `USDC@${SOLANA_LOCAL_CHAIN_ID}`]);
        expect((await getLink(t, link.id)).counters).to.deep.include({ ordersCreated: 1, openOrders: 1, ordersCompleted: 0 });

        // The payer picks Tron on the payment page: the order gets a Tron address and that route.
        const chose = await request(t.app).post(`${res.headers.location}/route`).set('Origin', PUBLIC).type('form').send(`route=USDT%40${TRON_LOCAL_CHAIN_ID}`);
        expect(chose.status, chose.text).to.equal(303);
        const routed = await orderOfPage(t, res.headers.location);
        expect(routed.address).to.match(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
        expect(routed).to.include({ chainId: TRON_LOCAL_CHAIN_ID, currency: 'USD' });
        expect(routed.route).to.include({ currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID, amount: '12.5' });

        // The same visitor coming back gets the same order (cookie), chosen route and all.
        const cookie = (res.headers['set-cookie'][0] as string).split(';')[0];
        const again = await formPost(t, link.path, '').set('Cookie', cookie);
        expect(again.headers.location).to.equal(res.headers.location);
        expect((await getLink(t, link.id)).counters.ordersCreated).to.equal(1);

        // Paid by that route: the link counts the order's dollars, with no chain.
        const [row] = await testDb().select().from(orders).where(eq(orders.payToken, payTokenOf(res.headers.location)));
        await insertTestTransfer({
          chainId: TRON_LOCAL_CHAIN_ID, currency: 'USDT', amount: 12_500_000n, toAddress: row.address!, orderId: row.id, organizationId: org.organizationId,
          counted: true, status: 'confirmed', confirmations: 30, blockTimestamp: new Date(t.clock.now().getTime() + 1000),
        });
        const ctx = testContext(t.config, t.clock);
        expect(await testDb().transaction((tx) => recomputeOrder(tx, ctx, row.id))).to.equal('completed');
        const sold = await getLink(t, link.id);
        expect(sold.counters).to.deep.include({ ordersCompleted: 1, openOrders: 0 });
        expect(sold.counters.amountCollected).to.deep.equal([{ currency: 'USD', chainId: null, amount: '12.5' }]);
      });

      it('a payer-chosen USD amount: the amount field in USD within min/max; cents at most; JSON too', async () => {
        const link = await publishedLink(t, { title: 'Donation', amount: '0', minAmount: '5', maxAmount: '100' });
        const page = await request(t.app).get(link.path);
        expect(page.text).to.include('<label for="amount">Amount to pay (USD)</label>');
        expect(page.text).to.include('From 5 to 100.');
        expect(page.text).to.not.include('name="choice"');
        const low = await formPost(t, link.path, 'amount=4.99');
        expect(low.status).to.equal(400);
        expect(low.text).to.include('The amount must be at least 5.');
        expect(low.text).to.include('value="4.99"');
        const mills = await formPost(t, link.path, 'amount=7.255');
        expect(mills.status).to.equal(400);
        expect(mills.text).to.include('Enter an amount such as 10 or 10.50.');
        const high = await request(t.app).post(`${link.path}/orders`).send({ amount: '100.01' });
        expect(high.status).to.equal(400);
        expect(high.body).to.include({ error: 'INVALID_AMOUNT' });
        expect(high.body.message).to.include('at most 100 USD');
        expect((await getLink(t, link.id)).counters.ordersCreated).to.equal(0);
        const ok = await request(t.app).post(`${link.path}/orders`).send({ amount: '7.25' });
        expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
        const order = await orderOfPage(t, new URL(ok.body.paymentUrl).pathname);
        expect(order).to.include({ currency: 'USD', amount: '7.25', address: null, route: null });
        expect(order.routes.map((r: { amount: string }) => r.amount)).to.deep.equal(['7.25', '7.25', '7.25']);
      });

      it('refuses a route that is not a USD stablecoin, a 3-decimal amount or bound, and an unknown priceCurrency (400, nothing stored)', async () => {
        const linkCount = async () => (await testDb().select({ id: paymentLinks.id }).from(paymentLinks).where(eq(paymentLinks.organizationId, org.organizationId))).length;
        const before = await linkCount();
        const eurc = await createLink(t, { currencies: [routes[0], { currency: 'EURC', chainId: LOCAL_CHAIN_ID }] });
        expectError(style, eurc, 400, 'INVALID_CURRENCY', 'ValidationError');
        expect(eurc.body.message).to.include(`currencies[1]: EURC on ${LOCAL_CHAIN_ID} is not a USD stablecoin`);
        expectError(style, await createLink(t, { currencies: [{ currency: 'USDT', chainId: 'moon-mainnet' }] }), 400, 'INVALID_CHAIN', 'ValidationError');
        const mills = await createLink(t, { amount: '12.345' });
        expectError(style, mills, 400, 'INVALID_AMOUNT', 'ValidationError');
        expect(mills.body.message).to.include('more than 2 decimal places');
        expectError(style, await createLink(t, { amount: '0', minAmount: '1.001' }), 400, 'INVALID_AMOUNT', 'ValidationError');
        expectError(style, await createLink(t, { amount: '0', maxAmount: '9.999' }), 400, 'INVALID_AMOUNT', 'ValidationError');
        expectError(style, await createLink(t, { priceCurrency: 'EUR' }), 400, 'VALIDATION_ERROR', 'ValidationError');
        expect(await linkCount()).to.equal(before);
        // The same EURC and 3 decimals in a token link are fine: only a USD price needs USD routes and cents.
        expect((await createLink(t, { currencies: [{ currency: 'EURC', chainId: LOCAL_CHAIN_ID }], priceCurrency: null, amount: '12.345' })).status).to.equal(201);
        // A change to a draft is checked the same way.
        const draft = dataOf(style, await createLink(t, { currencies: [{ currency: 'EURC', chainId: LOCAL_CHAIN_ID }], priceCurrency: null, amount: '1.125' }));
        const toUsd = await request(t.app).put(`/api/v1/payment-links/${draft.id}`).set('X-API-Key', org.keys.member).send({ priceCurrency: 'USD' });
        expectError(style, toUsd, 400, 'INVALID_CURRENCY', 'ValidationError');
        const fixed = await request(t.app).put(`/api/v1/payment-links/${draft.id}`).set('X-API-Key', org.keys.member).send({ priceCurrency: 'USD', currencies: routes, amount: '1.13' });
        expect(fixed.status, JSON.stringify(fixed.body)).to.equal(200);
        expect(dataOf(style, fixed)).to.include({ priceCurrency: 'USD', amount: '1.13' });
      });

      it('priceCurrency is frozen once published (409 PAYMENT_LINK_FROZEN); sending the same value is fine', async () => {
        const usd = await publishedLink(t);
        const put = (id: string, body: Record<string, unknown>) => request(t.app).put(`/api/v1/payment-links/${id}`).set('X-API-Key', org.keys.member).send(body);
        expectError(style, await put(usd.id, { priceCurrency: null }), 409, 'PAYMENT_LINK_FROZEN', 'Conflict');
        const same = await put(usd.id, { priceCurrency: 'USD', title: 'Renamed' });
        expect(same.status, JSON.stringify(same.body)).to.equal(200);
        expect(dataOf(style, same)).to.include({ priceCurrency: 'USD', title: 'Renamed' });
        const token = await publishedLink(t, { priceCurrency: null });
        expect(token.priceCurrency).to.equal(null);
        expectError(style, await put(token.id, { priceCurrency: 'USD' }), 409, 'PAYMENT_LINK_FROZEN', 'Conflict');
        expect((await put(token.id, { priceCurrency: null })).status).to.equal(200);
        expect((await getLink(t, token.id)).priceCurrency).to.equal(null);
      });
    });
  }

  it('a USD checkout takes no address, so an organization with an empty pool still gets its order (the route choice is guarded on the payment page)', async () => {
    const t = buildTestApp({ env });
    const empty = await createTestOrg('No pool yet');
    const link = await publishedLink(t, {}, empty);
    const res = await formPost(t, link.path, '');
    expect(res.status, res.text).to.equal(303);
    const order = await orderOfPage(t, res.headers.location, empty.keys.viewer);
    expect(order).to.include({ currency: 'USD', address: null });
    // A token link of the same organization is refused by the pool reserve, as before.
    const token = await publishedLink(t, { priceCurrency: null, currencies: [routes[0]] }, empty);
    expect((await formPost(t, token.path, `choice=USDT%40${LOCAL_CHAIN_ID}`)).status).to.equal(503);
  });

  it('the dashboard form\'s "Priced in USD" box makes a USD link (checked routes), refused with 3 decimals; the list says USD', async () => {
    const t = buildTestApp({ env });
    const shop = await createTestOrg('Dashboard USD Shop');
    const member = await createDashboardUser(shop.organizationId, 'member', `member-${Date.now()}@usd-links.test`);
    const c = dashboardClient(t.app, t.config.publicBaseUrl);
    await c.signIn(member.email, member.password);
    const page = await c.get('/dashboard/payment-links');
    expect(page.text).to.include('<input type="checkbox" id="pl-usd" name="priceCurrency" value="USD">');
    const form = (extra: Record<string, string | string[]>) => ({ title: 'Gift card', amount: '20', currencies: routes.map((r) => `${r.currency}@${r.chainId}`), priceCurrency: 'USD', description: '', slug: '', inventoryTotal: '', ...extra });
    const linksOf = () => testDb().select().from(paymentLinks).where(eq(paymentLinks.organizationId, shop.organizationId));
    expect((await c.post('/dashboard/payment-links', { _csrf: await c.csrf('/dashboard/payment-links'), ...form({ amount: '20.001' }) })).status).to.equal(400);
    expect(await linksOf()).to.have.length(0);
    const created = await c.post('/dashboard/payment-links', { _csrf: await c.csrf('/dashboard/payment-links'), ...form({}) });
    expect(created.status, created.text).to.equal(201);
    const [link] = await linksOf();
    expect(link).to.include({ priceCurrency: 'USD', amount: '20' });
    expect(link.currencies).to.deep.equal(routes);
    const row = created.text.slice(created.text.indexOf(`data-link-id="${link.id}"`)).split('</tr>')[0];
    expect(row).to.include(`20 USD by USDT/${LOCAL_CHAIN_ID}`);
    // Unchecked: a token link, as before.
    const { priceCurrency: _unchecked, ...tokenForm } = form({ currencies: [`USDT@${LOCAL_CHAIN_ID}`] });
    expect((await c.post('/dashboard/payment-links', { _csrf: await c.csrf('/dashboard/payment-links'), ...tokenForm })).status).to.equal(201);
    expect((await linksOf()).map((l) => l.priceCurrency).sort()).to.deep.equal(['USD', null]);
  });
});
