import { expect } from 'chai';
import request from 'supertest';
import { buildTestApp, createTestOrg, STYLES, type TestOrg } from '../helpers/harness';
import { CHAIN, orgFootprint, preserveCheckpoint, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf, expectError } from '../helpers/wire';

/**
 * Issue 40 (a newcomer's trial): "amount": "10000000" (base units by mistake) made a 10,000,000 USDT
 * order. The organization's max_order_amount (token units, default 1,000,000) refuses it with
 * INVALID_AMOUNT, in POST /orders (lone and batched creations) and in a payment link's checkout,
 * and stores and allocates nothing.
 */
let seq = 0;
const ref = () => `max-${Date.now().toString(36)}-${++seq}`;

for (const style of STYLES) {
  describe(`max_order_amount (style ${style.toUpperCase()})`, () => {
    preserveCheckpoint();
    const t = buildTestApp({ style, env: { ...tokenEnv(), PUBLIC_BASE_URL: 'https://pay.example.com', CHECKOUT_ORDERS_PER_IP: '100000', PAGE_RATE_LIMIT_PER_MINUTE: '1000000' } });
    const AMOUNT = ['INVALID_AMOUNT', 'ValidationError'] as const;
    let org: TestOrg;
    const postOrder = (o: TestOrg, amount: string, currency = 'USDT') =>
      request(t.app).post('/api/v1/orders').set('X-API-Key', o.keys.member).send({ orderReference: ref(), amount, currency, chainId: CHAIN });
    const putConfig = (o: TestOrg, value: unknown, key = o.keys.admin) =>
      request(t.app).put('/api/v1/config/max_order_amount').set('Authorization', `Bearer ${key}`).send({ value });

    before(async () => {
      org = await createTestOrg(`Max amount ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 20);
    });

    it('refuses base units sent by mistake (default 1,000,000 token units) with a message about base units; stores and allocates nothing', async () => {
      const before = await orgFootprint(org.organizationId);
      const res = await postOrder(org, '10000000');
      expectError(style, res, 400, ...AMOUNT);
      expect(res.body.message).to.include('not base units').and.include('max_order_amount').and.include('1000000');
      if (style === 'b') expect(res.body.details).to.deep.equal([{ field: 'amount', message: 'is above the maximum order amount of 1000000 (token units, not base units)' }]);
      expect(await orgFootprint(org.organizationId)).to.deep.equal(before);
      // The maximum itself is allowed.
      const atMax = await postOrder(org, '1000000');
      expect(atMax.status, JSON.stringify(atMax.body)).to.equal(201);
    });

    it('the key is read and set like any other (Admin), as a decimal string in token units; bad values are 400 and change nothing', async () => {
      const o = await createTestOrg(`Max config ${style}`);
      const got = await request(t.app).get('/api/v1/config/max_order_amount').set('X-API-Key', o.keys.admin);
      expect(dataOf(style, got)).to.include({ key: 'max_order_amount', value: '1000000', default: '1000000', isDefault: true });
      for (const bad of ['0', '-5', 'abc', '1e6', '1.2.3', '10000000000000', `1.${'1'.repeat(19)}`, true]) {
        expectError(style, await putConfig(o, bad), 400, 'VALIDATION_ERROR', 'ValidationError');
      }
      expectError(style, await putConfig(o, '50', o.keys.member), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      expect(dataOf(style, await request(t.app).get('/api/v1/config/max_order_amount').set('X-API-Key', o.keys.admin))).to.include({ isDefault: true });
      expect(dataOf(style, await putConfig(o, 2500))).to.include({ value: '2500', isDefault: false });
      expect(dataOf(style, await putConfig(o, '99.5'))).to.include({ value: '99.5' });
    });

    it('a lowered maximum applies to every token at its own decimals (USDT 6, DAI 18), to the exact unit', async () => {
      const o = await createTestOrg(`Max lowered ${style}`);
      await seedPoolAddresses(o.organizationId, 'evm', 6);
      expect((await putConfig(o, '99.5')).status).to.equal(200);
      expectError(style, await postOrder(o, '99.500001'), 400, ...AMOUNT);
      expectError(style, await postOrder(o, '99.500000000000000001', 'DAI'), 400, ...AMOUNT);
      expect((await postOrder(o, '99.5')).status).to.equal(201);
      expect((await postOrder(o, '99.499999999999999999', 'DAI')).status).to.equal(201);
      expect((await orgFootprint(o.organizationId)).orderCount).to.equal(2);
    });

    it('creations that go together in one statement: the one above the maximum is refused, the others are created', async () => {
      const o = await createTestOrg(`Max batch ${style}`);
      await seedPoolAddresses(o.organizationId, 'evm', 10);
      const amounts = ['5', '6', '7000000', '8', '9', '10'];
      const answers = await Promise.all(amounts.map((a) => postOrder(o, a)));
      expect(answers.map((r) => r.status)).to.deep.equal([201, 201, 400, 201, 201, 201]);
      expect(answers[2].body.message).to.include('not base units');
      const footprint = await orgFootprint(o.organizationId);
      expect(footprint).to.include({ orderCount: 5, assignmentCount: 5, notAvailable: 5 });
    });

    it('with an empty pool an amount above the maximum is still INVALID_AMOUNT (the bad input, not a 503)', async () => {
      const o = await createTestOrg(`Max empty ${style}`);
      expectError(style, await postOrder(o, '10000000'), 400, ...AMOUNT);
      expectError(style, await postOrder(o, '10'), 503, 'NO_AVAILABLE_ADDRESSES', 'InsufficientAddresses');
    });

    it("a payment link's checkout refuses a payer's amount above the organization's maximum (JSON and form)", async () => {
      const o = await createTestOrg(`Max checkout ${style}`);
      // Above the checkout's pool reserve (anonymous visitors never take the last addresses).
      await seedPoolAddresses(o.organizationId, 'evm', 40);
      expect((await putConfig(o, '50')).status).to.equal(200);
      const created = await request(t.app)
        .post('/api/v1/payment-links')
        .set('X-API-Key', o.keys.member)
        .send({ title: 'Tip jar', amount: '0', currencies: [{ currency: 'USDT', chainId: CHAIN }] });
      const link = dataOf(style, created);
      expect((await request(t.app).post(`/api/v1/payment-links/${link.id}/publish`).set('X-API-Key', o.keys.member)).status).to.equal(200);
      const path = new URL(link.checkoutUrl).pathname;
      const json = await request(t.app).post(`${path}/orders`).send({ currency: 'USDT', chainId: CHAIN, amount: '60' });
      expect(json.status).to.equal(400);
      expect(json.body).to.include({ error: 'INVALID_AMOUNT' });
      const form = await request(t.app).post(`${path}/orders`).set('Origin', 'https://pay.example.com').type('form').send('choice=USDT%40ethereum-local&amount=60');
      expect(form.status).to.equal(400);
      expect(form.text).to.include('at most 50');
      expect((await orgFootprint(o.organizationId)).orderCount).to.equal(0);
      const ok = await request(t.app).post(`${path}/orders`).send({ currency: 'USDT', chainId: CHAIN, amount: '50' });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
    });
  });
}
