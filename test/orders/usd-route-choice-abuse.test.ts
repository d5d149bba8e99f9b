import { expect } from 'chai';
import request from 'supertest';
import { and, eq } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { orders, poolAddresses } from '../../db/schema';
import { buildTestApp, createTestOrg, TEST_REDIS_PREFIX, type TestApp, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { tokenEnv } from '../helpers/orders';

const PUBLIC = 'https://pay.example';

/**
 * POST /pay/<token>/route (issue 41) is a public write: a payer of a USD order picks its route. From
 * another site, for an unknown token, for a token order, and in a loop, it changes nothing and takes
 * nothing from the pool, and a loop is held by its budgets with a friendly answer.
 */
describe('USD order route choice as an outsider', function () {
  this.timeout(60_000);
  let t: TestApp;
  let org: TestOrg;
  let n = 0;
  const USDT = `USDT@${LOCAL_CHAIN_ID}`;
  const USDC = `USDC@${LOCAL_CHAIN_ID}`;
  const choose = (path: string, route: string, ip = '203.0.113.7', origin = PUBLIC) =>
    request(t.app).post(`${path}/route`).set('X-Forwarded-For', ip).set('Origin', origin).type('form').send(`route=${encodeURIComponent(route)}`);
  const newOrder = async (body: Record<string, unknown> = { currency: 'USD', routes: [{ currency: 'USDT', chainId: LOCAL_CHAIN_ID }, { currency: 'USDC', chainId: LOCAL_CHAIN_ID }] }) => {
    const res = await request(t.app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send({ orderReference: `abuse-${++n}`, amount: '5', ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return { id: res.body.orderId as string, path: new URL(res.body.paymentUrl).pathname };
  };
  const row = async (id: string) => (await t.deps.db.select().from(orders).where(eq(orders.id, id)))[0];
  const allocated = async () =>
    (await t.deps.db.select({ id: poolAddresses.id }).from(poolAddresses).where(and(eq(poolAddresses.organizationId, org.organizationId), eq(poolAddresses.status, 'allocated')))).length;

  before(async () => {
    t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: PUBLIC, TRUST_PROXY: 'loopback', PAGE_RATE_LIMIT_PER_MINUTE: '1000000', REDIS_PREFIX: `${TEST_REDIS_PREFIX}routeabuse` } });
    org = await createTestOrg('route choice outsider');
    await seedPoolAddresses(org.organizationId, 'evm', 20);
  });

  it('from another site (or with no origin at all) is 403 and changes nothing; from the page\'s own origin it chooses', async () => {
    const order = await newOrder();
    expect((await choose(order.path, USDT, '203.0.113.1', 'https://evil.example')).status).to.equal(403);
    const bare = await request(t.app).post(`${order.path}/route`).set('X-Forwarded-For', '203.0.113.1').type('form').send(`route=${USDT}`);
    expect(bare.status).to.equal(403);
    expect((await row(order.id)).address).to.equal(null);
    const own = await choose(order.path, USDT, '203.0.113.1');
    expect(own.status).to.equal(303);
    expect(own.headers.location).to.equal(order.path);
    expect((await row(order.id)).address).to.be.a('string');
  });

  it('an unknown token is 404; a token order\'s page goes back to it unchanged; a route the order does not offer is 400 and changes nothing', async () => {
    expect((await choose('/pay/AAAAAAAAAAAAAAAAAAAAAA', USDT, '203.0.113.2')).status).to.equal(404);
    const token = await newOrder({ currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    const before = await row(token.id);
    expect((await choose(token.path, USDC, '203.0.113.2')).status).to.equal(303);
    expect(await row(token.id)).to.deep.include({ address: before.address, currency: 'USDT', routes: null, chosenRoutes: null });
    const usd = await newOrder({ currency: 'USD', routes: [{ currency: 'USDT', chainId: LOCAL_CHAIN_ID }] });
    const notOffered = await choose(usd.path, `DAI@${LOCAL_CHAIN_ID}`, '203.0.113.2');
    expect(notOffered.status).to.equal(400);
    expect(notOffered.text).to.include('not one this order can be paid with');
    expect((await choose(usd.path, 'not a route', '203.0.113.2')).status).to.equal(400);
    expect((await row(usd.id)).address).to.equal(null);
  });

  it('a loop switching one order back and forth takes one address and is held by the per-order budget (429)', async () => {
    const order = await newOrder();
    const before = await allocated();
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push((await choose(order.path, i % 2 ? USDC : USDT, `198.51.100.${i}`)).status);
    // Twenty choices an hour per order; the rest are refused without a change.
    expect(statuses.filter((s) => s === 303)).to.have.length(20);
    expect(statuses.slice(20)).to.deep.equal([429, 429, 429, 429, 429]);
    // One EVM address whatever the switching.
    expect(await allocated()).to.equal(before + 1);
    const chosen = (await row(order.id)).chosenRoutes!;
    expect(chosen.map((r) => r.currency)).to.deep.equal(['USDT', 'USDC']);
    expect(new Set(chosen.map((r) => r.address)).size).to.equal(1);
  });
});
