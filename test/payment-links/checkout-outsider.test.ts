import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import request from 'supertest';
import { buildTestApp, createTestOrg, testDb, type TestApp, type TestOrg } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf } from '../helpers/wire';

/**
 * The checkout's post as an outsider sends it (issue 37's admission with refunds): from other
 * sites, and in loops of posts that make no order. Whatever the post, a client IP makes at most
 * CHECKOUT_ORDERS_PER_IP orders an hour, a refund follows only a post that made none, and posts
 * that make nothing leave the merchant's pool and the link's counters untouched.
 */
describe('payment link checkout as an outsider', function () {
  this.timeout(180_000);
  const PUBLIC = 'https://pay.example.com';
  const env = { ...tokenEnv(), PUBLIC_BASE_URL: PUBLIC, TRUST_PROXY: 'loopback' };
  const t = buildTestApp({ env });
  let org: TestOrg;

  before(async () => {
    org = await createTestOrg('Outsider Co');
    await seedPoolAddresses(org.organizationId, 'evm', 120);
  });

  async function publishedLink(app: TestApp, body: Record<string, unknown> = {}): Promise<{ id: string; path: string }> {
    const res = await request(app.app)
      .post('/api/v1/payment-links')
      .set('X-API-Key', org.keys.member)
      .send({ title: 'Drop', amount: '5', currencies: [{ currency: 'USDT', chainId: CHAIN }], ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const link = dataOf('b', res);
    await request(app.app).post(`/api/v1/payment-links/${link.id}/publish`).set('X-API-Key', org.keys.member).expect(200);
    return { id: link.id, path: new URL(link.checkoutUrl).pathname };
  }
  const post = (app: TestApp, path: string, ip: string, form = `choice=USDT%40${CHAIN}`) =>
    request(app.app).post(`${path}/orders`).set('X-Forwarded-For', ip).set('Origin', PUBLIC).type('form').send(form);
  const ordersOf = async (linkId: string) =>
    (await testDb().execute<{ n: number }>(sql`select count(*)::int as n from orders where payment_link_id = ${linkId}`))[0].n;
  const allocated = async () =>
    (await testDb().execute<{ n: number }>(sql`select count(*)::int as n from orders where organization_id = ${org.organizationId}`))[0].n;

  /** The orders this IP can still make now (each a 303), then the refusal that ends them (429). */
  async function ordersLeft(app: TestApp, ip: string): Promise<number> {
    const link = await publishedLink(app);
    for (let made = 0; made <= 10; made++) {
      const res = await post(app, link.path, ip);
      if (res.status === 429) return made;
      expect(res.status, res.text.slice(0, 200)).to.equal(303);
    }
    throw new Error(`${ip} made more than 10 orders`);
  }

  it('posts from another site (Sec-Fetch-Site, Origin, a null Origin, Referer, none at all) are 403, make nothing and spend none of the budget', async () => {
    const link = await publishedLink(t);
    const ip = '198.51.100.31';
    const base = () => request(t.app).post(`${link.path}/orders`).set('X-Forwarded-For', ip);
    const form = `choice=USDT%40${CHAIN}`;
    const attempts = [
      () => base().set('Sec-Fetch-Site', 'cross-site').set('Origin', PUBLIC).type('form').send(form),
      () => base().set('Sec-Fetch-Site', 'same-site').type('form').send(form),
      () => base().set('Origin', 'https://evil.example').type('form').send(form),
      () => base().set('Origin', 'null').type('form').send(form),
      () => base().set('Origin', 'https://pay.example.com.evil.example').type('form').send(form),
      () => base().set('Referer', 'https://evil.example/shop').type('form').send(form),
      () => base().set('Referer', 'not a url').type('form').send(form),
      () => base().type('form').send(form),
      () => base().set('Origin', 'https://evil.example').type('json').send({ currency: 'USDT', chainId: CHAIN }),
    ];
    // Two rounds of nine: more than the hour's budget of 10, had any of them spent it.
    for (let round = 0; round < 2; round++) {
      for (const attempt of attempts) {
        const res = await attempt();
        expect(res.status, res.text.slice(0, 200)).to.equal(403);
      }
    }
    expect(await ordersOf(link.id)).to.equal(0);
    expect(await ordersLeft(t, ip)).to.equal(10);
  });

  it('a loop of posts that make no order (a choice not offered, a bad amount, a link at its open-order cap, a sold-out link) neither makes orders nor lifts the hourly budget', async () => {
    const ip = '198.51.100.32';
    const offered = await publishedLink(t);
    const chooses = await publishedLink(t, { amount: '0', minAmount: '1', maxAmount: '10' });
    const capped = await publishedLink(t, { maxOpenOrders: 1 });
    const soldOut = await publishedLink(t, { inventoryTotal: 1 });
    expect((await post(t, capped.path, '198.51.100.132')).status).to.equal(303);
    expect((await post(t, soldOut.path, '198.51.100.133')).status).to.equal(303);
    const before = await allocated();

    const statuses = new Map<number, number>();
    for (let i = 0; i < 12; i++) {
      for (const [path, form] of [
        [offered.path, 'choice=DAI%40ethereum-local'],
        [offered.path, 'choice=USDT%40tron-local'],
        [offered.path, `choice=${'%40'.repeat(40)}`],
        [chooses.path, `choice=USDT%40${CHAIN}&amount=0.5`],
        [chooses.path, `choice=USDT%40${CHAIN}&amount=1e3`],
        [capped.path, `choice=USDT%40${CHAIN}`],
        [soldOut.path, `choice=USDT%40${CHAIN}`],
      ]) {
        const res = await post(t, path, ip, form);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }
    // 12 rounds × 7 posts, each refused for what it is: never a 429, never an order.
    expect(Object.fromEntries(statuses)).to.deep.equal({ 400: 60, 503: 12, 409: 12 });
    expect(await allocated()).to.equal(before);
    expect(await ordersOf(capped.id)).to.equal(1);
    expect(await ordersOf(soldOut.id)).to.equal(1);
    expect(await ordersLeft(t, ip)).to.equal(10);
  });

  it('concurrent posts on an inventory of 1 (from one IP and from others) make exactly one order, and the post that made it is not refunded', async () => {
    const link = await publishedLink(t, { inventoryTotal: 1 });
    const one = '198.51.100.40';
    const others = Array.from({ length: 6 }, (_, i) => `198.51.100.${41 + i}`);
    const posts = [...Array(6).fill(one), ...others].map((ip: string) => post(t, link.path, ip).then((res) => ({ ip, status: res.status })));
    const answers = await Promise.all(posts);
    const made = answers.filter((a) => a.status === 303);
    expect(made, JSON.stringify(answers)).to.have.length(1);
    expect(answers.filter((a) => a.status !== 303).map((a) => a.status)).to.satisfy((s: number[]) => s.every((x) => x === 409));
    expect(await ordersOf(link.id)).to.equal(1);
    const counters = dataOf('b', await request(t.app).get(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.viewer)).counters;
    expect(counters.inventory).to.deep.equal({ total: 1, reserved: 1, sold: 0, left: 0 });
    // The winner's IP paid for its order; every other IP got its point back.
    expect(await ordersLeft(t, made[0].ip)).to.equal(9);
    const loser = made[0].ip === one ? others[0] : one;
    expect(await ordersLeft(t, loser)).to.equal(10);
  });

  it("a post refused by the link's per-minute budget (the link busy, no order made) costs the visitor none of its hourly budget", async () => {
    const busy = buildTestApp({ env: { ...env, CHECKOUT_ORDERS_PER_LINK_PER_MINUTE: '2' } });
    const link = await publishedLink(busy);
    expect((await post(busy, link.path, '198.51.100.51')).status).to.equal(303);
    expect((await post(busy, link.path, '198.51.100.52')).status).to.equal(303);
    const ip = '198.51.100.53';
    for (let i = 0; i < 12; i++) {
      const res = await post(busy, link.path, ip);
      expect(res.status).to.equal(429);
      expect(res.text).to.not.match(/\d+\s*(seconds?|minutes?)/);
    }
    expect(await ordersOf(link.id)).to.equal(2);
    // Elsewhere (another link; the same budgets in Redis) the visitor still has its 10 orders of the hour.
    expect(await ordersLeft(t, ip)).to.equal(10);
  });

  it('an IPv6 client is one client across its /64: walking its addresses does not lift the hourly budget; another /64 has its own', async () => {
    const link = await publishedLink(t);
    const statuses: number[] = [];
    for (let i = 1; i <= 11; i++) statuses.push((await post(t, link.path, `2001:db8:77:1::${i.toString(16)}`)).status);
    expect(statuses).to.deep.equal([...Array(10).fill(303), 429]);
    // Written otherwise (leading zeros, full form), the same /64.
    expect((await post(t, link.path, '2001:0db8:0077:0001:ffff:ffff:ffff:fffe')).status).to.equal(429);
    expect(await ordersLeft(t, '2001:db8:77:2::1')).to.equal(10);
  });
});
