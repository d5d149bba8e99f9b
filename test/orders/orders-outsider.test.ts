import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { encodeBase58, hexlify } from 'ethers';
import request from 'supertest';
import { buildTestApp, createTestOrg, testDb, type TestOrg } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf, expectError, listOf } from '../helpers/wire';

/**
 * POST /orders' refusal of metadata.paymentLinkId and the lists' search box, as a caller of another
 * organization or a careless one uses them: nothing of another organization shows (not found /
 * empty), and every odd text is a 200 or a 400, never a 500 (list-search.test.ts has the finds).
 */
describe('orders and transfers as an outsider', function () {
  this.timeout(120_000);
  const PUBLIC = 'https://pay.example.com';
  const t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: PUBLIC } });
  let mine: TestOrg;
  let theirs: TestOrg;
  let theirLink: { id: string; path: string };
  let theirOrder: { id: string; address: string; reference: string };
  const theirTx = hexlify(randomBytes(32));
  const suffix = hexlify(randomBytes(4)).slice(2);

  before(async () => {
    mine = await createTestOrg('Outsider orders');
    theirs = await createTestOrg('Victim orders');
    await seedPoolAddresses(mine.organizationId, 'evm', 20);
    await seedPoolAddresses(theirs.organizationId, 'evm', 20);
    const created = await request(t.app)
      .post('/api/v1/payment-links')
      .set('X-API-Key', theirs.keys.member)
      .send({ title: 'Theirs', amount: '5', currencies: [{ currency: 'USDT', chainId: CHAIN }], inventoryTotal: 1 });
    const link = dataOf('b', created);
    await request(t.app).post(`/api/v1/payment-links/${link.id}/publish`).set('X-API-Key', theirs.keys.member).expect(200);
    theirLink = { id: link.id, path: new URL(link.checkoutUrl).pathname };
    const order = dataOf('b', await request(t.app).post('/api/v1/orders').set('X-API-Key', theirs.keys.member).send({ orderReference: `victim_100%-${suffix}`, amount: '1', currency: 'USDT', chainId: CHAIN }));
    theirOrder = { id: order.orderId, address: order.address, reference: `victim_100%-${suffix}` };
    await insertTestTransfer({ chainId: CHAIN, currency: 'USDT', amount: 1_000_000n, toAddress: order.address, txHash: theirTx, orderId: order.orderId, organizationId: theirs.organizationId });
  });

  const create = (metadata: unknown, reference = `mine-${hexlify(randomBytes(6)).slice(2)}`) =>
    request(t.app).post('/api/v1/orders').set('X-API-Key', mine.keys.member).send({ orderReference: reference, amount: '1', currency: 'USDT', chainId: CHAIN, metadata });
  const linkOrders = async (linkId: string) =>
    (await testDb().execute<{ n: number }>(sql`select count(*)::int as n from orders where payment_link_id = ${linkId}`))[0].n;

  it("POST /orders with metadata.paymentLinkId is 400 whatever its value (another organization's link, a number, null, an object), and stores nothing", async () => {
    for (const value of [theirLink.id, 123, null, true, '', { id: theirLink.id }, [theirLink.id]]) {
      const reference = `claim-${hexlify(randomBytes(6)).slice(2)}`;
      const res = await create({ paymentLinkId: value, sku: 'x' }, reference);
      expectError('b', res, 400, 'VALIDATION_ERROR', 'ValidationError');
      const [{ n }] = await testDb().execute<{ n: number }>(sql`select count(*)::int as n from orders where order_reference = ${reference}`);
      expect(n, JSON.stringify(value)).to.equal(0);
    }
    expect(await linkOrders(theirLink.id)).to.equal(0);
    // Their link's one unit is still theirs to sell.
    const counters = dataOf('b', await request(t.app).get(`/api/v1/payment-links/${theirLink.id}`).set('X-API-Key', theirs.keys.viewer)).counters;
    expect(counters.inventory).to.deep.equal({ total: 1, reserved: 0, sold: 0, left: 1 });
  });

  it('other metadata keys still work, near-misses of the key included, and never link the order', async () => {
    for (const metadata of [{ sku: 'tee', qty: 2, gift: false, note: null }, { PaymentLinkId: theirLink.id }, { paymentlinkid: theirLink.id }, { 'paymentLinkId ': theirLink.id }, {}]) {
      const res = await create(metadata);
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      expect(res.body.metadata).to.deep.equal(metadata);
      const [{ link }] = await testDb().execute<{ link: string | null }>(sql`select payment_link_id as link from orders where id = ${res.body.orderId}`);
      expect(link).to.equal(null);
    }
    // Nested objects are not metadata values at all.
    expectError('b', await create({ extra: { paymentLinkId: theirLink.id } }), 400, 'VALIDATION_ERROR', 'ValidationError');
    expect(await linkOrders(theirLink.id)).to.equal(0);
  });

  const search = (path: string, text: string) => request(t.app).get(`/api/v1${path}`).query({ search: text }).set('X-API-Key', mine.keys.viewer);

  it("another organization's order id, tx hash, address or reference finds nothing in either list", async () => {
    for (const text of [theirOrder.id, theirTx, theirTx.slice(2), theirOrder.address, theirOrder.address.toLowerCase(), theirOrder.reference, `victim_100%`]) {
      for (const path of ['/orders', '/transfers']) {
        const res = await search(path, text);
        expect(res.status, `${path} ${text} ${JSON.stringify(res.body)}`).to.equal(200);
        expect(listOf('b', res, path.slice(1)).items, `${path} ${text}`).to.deep.equal([]);
      }
    }
    // The owner does find them (the texts are right).
    const own = await request(t.app).get('/api/v1/orders').query({ search: theirTx }).set('X-API-Key', theirs.keys.viewer);
    expect(listOf('b', own, 'orders').items.map((o: { orderId: string }) => o.orderId)).to.deep.equal([theirOrder.id]);
    expectError('b', await request(t.app).get(`/api/v1/orders/${theirOrder.id}`).set('X-API-Key', mine.keys.viewer), 404, 'RESOURCE_NOT_FOUND', 'NotFoundError');
  });

  it('SQL wildcards match only themselves: %, _ and \\ in the box are literal', async () => {
    const reference = `lit_%\\-${suffix}`;
    const res = await create({}, reference);
    expect(res.status).to.equal(201);
    const plain = await create({}, `litX%\\-${suffix}`);
    expect(plain.status).to.equal(201);
    const found = async (text: string) => listOf('b', await search('/orders', text), 'orders').items.map((o: { orderId: string }) => o.orderId);
    expect(await found('%')).to.satisfy((ids: string[]) => ids.every((id) => id !== theirOrder.id));
    expect(await found(`lit_%\\-${suffix}`)).to.deep.equal([res.body.orderId]);
    expect(await found(`_%\\-${suffix}`)).to.deep.equal([res.body.orderId]);
    expect(await found(`lit%${suffix}`)).to.deep.equal([]);
    expect(await found('____________')).to.satisfy((ids: string[]) => !ids.includes(res.body.orderId));
  });

  it('odd texts are a 200 or a clear 400 on both lists, never a 500: malformed addresses of each family, long, unicode, control characters', async () => {
    const texts = [
      '0x' + 'g'.repeat(40), // EVM-shaped but not hex: a reference
      '0x' + 'a'.repeat(39), // short
      '0x' + 'a'.repeat(41),
      '0X' + 'A'.repeat(40),
      'T' + '1'.repeat(33),
      'T' + '0'.repeat(33), // 0 is not base58
      'TXYZ',
      encodeBase58(randomBytes(31)),
      encodeBase58(randomBytes(33)),
      encodeBase58(randomBytes(63)),
      '1'.repeat(44),
      '1'.repeat(88),
      'ord_',
      'ord_' + 'z'.repeat(60),
      'x'.repeat(255),
      'é'.repeat(255),
      '🙂'.repeat(100),
      '\u202etxet',
      "'; drop table orders; --",
      'a\u0000b',
      '\u0000',
      'a\u0001b',
      '\\',
      '%_%',
      ' padded ',
    ];
    for (const text of texts) {
      for (const path of ['/orders', '/transfers']) {
        const res = await search(path, text);
        expect(res.status, `${path} ${JSON.stringify(text)} ${JSON.stringify(res.body)}`).to.be.oneOf([200, 400]);
        if (res.status === 400) expect(res.body.error ?? res.body.code, JSON.stringify(res.body)).to.be.a('string');
      }
    }
  });
});
