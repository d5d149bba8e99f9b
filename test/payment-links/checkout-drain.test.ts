import { expect } from 'chai';
import { eq, sql } from 'drizzle-orm';
import request from 'supertest';
import { checkPoolLevel } from '../../core/pool/alerts';
import { poolStatus } from '../../core/pool/queries';
import { createCheckoutOrder } from '../../core/payment-links/checkout';
import { getPaymentLink } from '../../core/payment-links/links';
import { orders } from '../../db/schema';
import { waitForRedis } from '../../core/platform/redis';
import { buildTestApp, createTestOrg, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, testContext, testDb, type TestApp, type TestOrg } from '../helpers/harness';
import { CHAIN, eventsOf, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { dataOf } from '../helpers/wire';

/**
 * The public write surface cannot drain a merchant's address pool, and inventory holds under
 * concurrency (issue 28): scripted checkouts from many client IPs, and concurrent checkouts across
 * two API processes.
 */
describe('payment link checkout under load', function () {
  this.timeout(120_000);
  const tokens = tokenEnv();
  const PUBLIC = 'https://pay.example.com';

  async function linkOf(t: TestApp, org: TestOrg, body: Record<string, unknown> = {}) {
    const res = await request(t.app)
      .post('/api/v1/payment-links')
      .set('X-API-Key', org.keys.member)
      .send({ title: 'Drop', amount: '5', currencies: [{ currency: 'USDT', chainId: CHAIN }], ...body });
    const link = dataOf('b', res);
    await request(t.app).post(`/api/v1/payment-links/${link.id}/publish`).set('X-API-Key', org.keys.member).expect(200);
    return { id: link.id as string, path: new URL(link.checkoutUrl).pathname };
  }

  /** `total` form posts from `ips` client IPs (X-Forwarded-For through a trusted proxy), `parallel` at a time. */
  async function flood(t: TestApp, path: string, total: number, ips: number, parallel = 25) {
    // A served API has its Redis connections up (server start); the test's shared ones connect on first use.
    await Promise.all([waitForRedis(t.deps.redis), waitForRedis(t.deps.pageLimitRedis)]);
    const statuses: Record<number, number> = {};
    const pages = new Set<string>();
    let next = 0;
    const worker = async () => {
      while (next < total) {
        const i = next++;
        const res = await request(t.app)
          .post(`${path}/orders`)
          .set('X-Forwarded-For', `198.51.100.${i % ips}`)
          .set('Origin', PUBLIC)
          .type('form')
          .send('choice=USDT%40ethereum-local');
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status !== 303) {
          expect(res.headers['content-type']).to.match(/^text\/html/);
          pages.add(/<h1>([^<]*)<\/h1>/.exec(res.text)?.[1] ?? res.text.slice(0, 80));
          if (res.status === 429 || res.status === 503) expect(Number(res.headers['retry-after'])).to.be.greaterThan(0);
        }
      }
    };
    await Promise.all(Array.from({ length: parallel }, worker));
    return { statuses, pages };
  }

  it('1,000 checkout posts from 20 client IPs against a pool of 200: the budgets hold, the reserve stays free, the rest get a friendly 429/503 page', async () => {
    const t = buildTestApp({ env: { ...tokens, PUBLIC_BASE_URL: PUBLIC, TRUST_PROXY: 'loopback' } });
    const org = await createTestOrg('Drain (budgets)');
    await seedPoolAddresses(org.organizationId, 'evm', 200);
    const link = await linkOf(t, org);
    const { statuses, pages } = await flood(t, link.path, 1000, 20);
    const created = statuses[303] ?? 0;
    // Per link: CHECKOUT_ORDERS_PER_LINK_PER_MINUTE (60); per IP: CHECKOUT_ORDERS_PER_IP (10 an hour).
    // (A post that spent its budget may still be answered busy, 503, when the pool's lock stays
    // taken too long on a loaded machine: then fewer than 60 are made, never more.)
    expect(created).to.be.within(30, 60);
    expect(created + (statuses[429] ?? 0) + (statuses[503] ?? 0)).to.equal(1000);
    expect(statuses[429]).to.be.at.least(940);
    expect(pages.has('Too many attempts')).to.equal(true);
    for (const page of pages) expect(['Too many attempts', 'Please try again in a few minutes']).to.include(page);
    const pool = (await poolStatus(testDb(), org.organizationId)).evm;
    expect(pool.available).to.equal(200 - created);
    expect(pool.available).to.be.at.least(40);
  });

  it('with the budgets lifted the pool reserve holds exactly: 160 of 200 taken, the reserve (20%) free, and the pool-low alert fires as for API orders', async () => {
    const t = buildTestApp({
      env: { ...tokens, PUBLIC_BASE_URL: PUBLIC, TRUST_PROXY: 'loopback', CHECKOUT_ORDERS_PER_IP: '100000', CHECKOUT_ORDERS_PER_LINK_PER_MINUTE: '100000' },
    });
    const org = await createTestOrg('Drain (reserve)');
    await seedPoolAddresses(org.organizationId, 'evm', 200);
    await request(t.app).put('/api/v1/config/address_pool.low_threshold.evm').set('X-API-Key', org.keys.admin).send({ value: '25%' }).expect(200);
    const link = await linkOf(t, org);
    const { statuses, pages } = await flood(t, link.path, 1000, 20);
    // The reserve is the larger of CHECKOUT_POOL_RESERVE_PERCENT (20% of 200) and _MIN (5): 40.
    const created = statuses[303] ?? 0;
    expect(created + (statuses[503] ?? 0)).to.equal(1000);
    expect([...pages]).to.deep.equal(['Please try again in a few minutes']);
    const pool = (await poolStatus(testDb(), org.organizationId)).evm;
    expect(pool).to.include({ total: 200, available: 200 - created, allocated: created });
    expect(pool.available).to.be.at.least(40);
    // Posts keep coming long after the reserve is reached: every free address but the reserve is taken.
    expect(created).to.equal(160);
    // The merchant's own API orders still get addresses from the reserve.
    const own = await request(t.app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send({ orderReference: 'own-1', amount: '1', currency: 'USDT', chainId: CHAIN });
    expect(own.status).to.equal(201);
    const outcome = await checkPoolLevel(testDb(), org.organizationId, 'evm', t.clock.now());
    expect(outcome).to.include({ low: true, available: 39, total: 200 });
    expect(outcome.eventId).to.be.a('string');
    expect((await eventsOf(org.organizationId, 'alert.address_pool_low')).length).to.equal(1);
  });

  it('inventory race in the database: 50 concurrent checkouts of two service contexts on an inventory of 10 make exactly 10 orders', async () => {
    const t = buildTestApp({ env: tokens });
    const org = await createTestOrg('Race (domain)');
    await seedPoolAddresses(org.organizationId, 'evm', 60);
    const { id } = await linkOf(t, org, { inventoryTotal: 10 });
    const link = await getPaymentLink(testDb(), org.organizationId, id);
    const contexts = [testContext(t.config, t.clock), testContext(t.config, t.clock)];
    const outcomes = await Promise.allSettled(Array.from({ length: 50 }, (_, i) => createCheckoutOrder(contexts[i % 2], link, { currency: 'USDT', chainId: CHAIN })));
    const made = outcomes.filter((o) => o.status === 'fulfilled').length;
    const codes = outcomes.filter((o) => o.status === 'rejected').map((o) => ((o as PromiseRejectedResult).reason as { code: string }).code);
    expect(made).to.equal(10);
    expect(codes).to.deep.equal(Array(40).fill('PAYMENT_LINK_SOLD_OUT'));
    const [{ n }] = await testDb().execute<{ n: number }>(sql`select count(*)::int as n from orders where metadata->>'paymentLinkId' = ${id}`);
    expect(n).to.equal(10);
    const after = await getPaymentLink(testDb(), org.organizationId, id);
    expect({ reserved: after.inventoryReserved, sold: after.inventorySold }).to.deep.equal({ reserved: 10, sold: 0 });
    // Every refused checkout gave its address back (the statement failed whole).
    expect((await poolStatus(testDb(), org.organizationId)).evm).to.include({ allocated: 10, available: 50 });
  });

  describe('across two API processes', () => {
    const apis: Spawned[] = [];
    const urls: string[] = [];

    before(async function () {
      this.timeout(120_000);
      const env = {
        ...tokens,
        DATABASE_URL: TEST_DATABASE_URL,
        REDIS_URL: TEST_REDIS_URL,
        // Their own Redis keys: every request of these processes comes from 127.0.0.1, whose per-IP
        // page budget other test files (same run, same prefix) may have spent within the minute —
        // CI once met all 50 checkouts answered 429.
        REDIS_PREFIX: `${TEST_REDIS_PREFIX}drain`,
        NETWORK: 'local',
        START_LOCAL_CHAIN: 'false',
        PORT: '0',
        LOG_LEVEL: 'info',
        PUBLIC_BASE_URL: PUBLIC,
        CHECKOUT_ORDERS_PER_IP: '100000',
        CHECKOUT_ORDERS_PER_LINK_PER_MINUTE: '100000',
        CHAIN_STALL_ALERT_SECONDS: '86400',
      };
      for (let i = 0; i < 2; i++) apis.push(spawnEntry('api/main.ts', env));
      for (const api of apis) {
        const line = await api.waitFor(/API listening on/, 90_000).catch((err) => {
          throw new Error(`${(err as Error).message}: ${api.stderr().slice(-800)} ${api.stdout().slice(-800)}`);
        });
        urls.push(`http://127.0.0.1:${/localhost:(\d+)/.exec(line)![1]}`);
      }
    });

    after(async () => {
      for (const api of apis) api.killGroup('SIGTERM');
      await Promise.all(apis.map((a) => a.exited));
    });

    it('50 concurrent checkouts on an inventory of 10 → exactly 10 orders and 40 sold-out answers', async () => {
      const t = buildTestApp({ env: tokens });
      const org = await createTestOrg('Race (processes)');
      await seedPoolAddresses(org.organizationId, 'evm', 60);
      const link = await linkOf(t, org, { inventoryTotal: 10 });
      // A payer whose checkout is answered busy (503 with Retry-After: its statement waited too long
      // on the link's row under the rush) presses again after the wait, as the page asks.
      const checkout = async (i: number) => {
        for (let attempt = 1; ; attempt++) {
          const res = await request(urls[i % 2]).post(`${link.path}/orders`).set('Origin', PUBLIC).type('form').send('choice=USDT%40ethereum-local');
          const retryAfter = Number(res.headers['retry-after']);
          if (res.status !== 503 || !(retryAfter > 0) || attempt === 3) return res;
          await new Promise((r) => setTimeout(r, Math.min(retryAfter, 2) * 1000));
        }
      };
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => checkout(i)));
      const count = (status: number) => answers.filter((a) => a.status === status).length;
      const statuses = answers.reduce<Record<number, number>>((m, a) => ({ ...m, [a.status]: (m[a.status] ?? 0) + 1 }), {});
      expect({ created: count(303), soldOut: count(409) }, `answers by status: ${JSON.stringify(statuses)}`).to.deep.equal({ created: 10, soldOut: 40 });
      for (const a of answers.filter((x) => x.status === 409)) expect(a.text).to.include('Sold out');
      const made = await testDb().select({ id: orders.id }).from(orders).where(eq(sql`${orders.metadata}->>'paymentLinkId'`, link.id));
      expect(made).to.have.length(10);
      const view = dataOf('b', await request(urls[0]).get(`/api/v1/payment-links/${link.id}`).set('X-API-Key', org.keys.viewer));
      expect(view.counters.inventory).to.deep.equal({ total: 10, reserved: 10, sold: 0, left: 0 });
      expect(view.status).to.equal('sold_out');
    });
  });
});
