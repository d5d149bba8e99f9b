import { expect } from 'chai';
import request from 'supertest';
import { randomBytes } from 'node:crypto';
import { getAddress, hexlify } from 'ethers';
import { sql } from 'drizzle-orm';
import { newId } from '../../core/platform/ids';
import { findPaymentPage } from '../../core/orders/payment-page';
import { transfers } from '../../db/schema';
import { buildTestApp, createTestOrg, knownSecrets, listenForPageChanges, TEST_DATABASE_URL, testDb, type TestApp, type TestOrg } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { eventually } from '../helpers/wait';
import { startTcpProxy } from '../helpers/tcp-proxy';

const randomAddress = () => getAddress(hexlify(randomBytes(20)));

/**
 * The status endpoint's memory of open orders (core/orders/payment-page-cache.ts): polls of an
 * unchanged order are answered from memory, and a committed change to the order or its transfers
 * shows at once in every API process, told by Postgres (migration 0007's NOTIFY), also after the
 * listening connection was lost.
 */
describe('payment status: open orders kept in memory until Postgres says they changed', () => {
  const tokens = tokenEnv();
  let org: TestOrg;

  before(async () => {
    org = await createTestOrg('Memory shop');
    await seedPoolAddresses(org.organizationId, 'evm', 10);
  });

  async function createOrder(t: TestApp) {
    const res = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', org.ownerKey)
      .send({ orderReference: `memory-${Date.now()}-${Math.random()}`, amount: '3', currency: 'USDT', chainId: CHAIN });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const path = new URL(res.body.paymentUrl).pathname;
    knownSecrets.add(path.split('/')[2]);
    return { id: res.body.orderId as string, address: res.body.address as string, status: `${path}/status` };
  }

  async function payInFull(orderId: string, to: string) {
    const [order] = await testDb().execute<{ pool_address_id: number }>(sql`select pool_address_id from orders where id = ${orderId}`);
    await testDb().insert(transfers).values({
      id: newId('trf'), chainId: CHAIN, protocol: 'evm', currency: 'USDT', tokenAddress: randomAddress(), amount: 3_000_000n, fromAddress: randomAddress(),
      toAddress: to, txHash: hexlify(randomBytes(32)), indexInTx: 0, logIndex: 0, blockNumber: 100, blockHash: hexlify(randomBytes(32)),
      blockTimestamp: new Date(), confirmations: 1, status: 'pending', organizationId: org.organizationId, poolAddressId: Number(order.pool_address_id),
      orderId, counted: true,
    });
  }

  it('answers polls of an unchanged order from memory, and shows a committed transfer or order change at once in every API process', async () => {
    const first = buildTestApp({ env: tokens });
    const second = buildTestApp({ env: tokens });
    await Promise.all([listenForPageChanges(first), listenForPageChanges(second)]);
    const order = await createOrder(first);
    for (const t of [first, second]) {
      expect((await request(t.app).get(order.status)).body.state).to.equal('awaiting');
      expect(t.deps.paymentPages.size, 'the open order is kept').to.equal(1);
      expect((await request(t.app).get(order.status)).body.state).to.equal('awaiting');
    }

    // A transfer bound to the order (what the scanner records): both processes forget the order.
    await payInFull(order.id, order.address);
    for (const t of [first, second]) {
      await eventually(async () => (await request(t.app).get(order.status)).body.state === 'confirming', 1000, 'the payment shown within 1 s');
    }
    // The order itself (what recompute and expiry write): the same.
    await testDb().execute(sql`update orders set status = 'expired' where id = ${order.id}`);
    for (const t of [first, second]) {
      await eventually(async () => (await request(t.app).get(order.status)).body.state === 'expired', 1000, 'the final status shown within 1 s');
      // A final order is not kept: its page stops polling, and its redirect reads the organization's settings.
      expect(t.deps.paymentPages.size).to.equal(0);
    }
  });

  it('forgets what it kept when its listening connection is lost, and keeps orders again once it listens again', async () => {
    const t = buildTestApp({ env: tokens });
    await listenForPageChanges(t);
    const order = await createOrder(t);
    expect((await request(t.app).get(order.status)).body.state).to.equal('awaiting');
    expect(t.deps.paymentPages.size).to.equal(1);

    // The listening session goes away, and the order changes before it is back: that notification
    // is never heard, and what was kept is forgotten when the connection closes and again when
    // the LISTEN is back.
    await testDb().execute(
      sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query = 'listen "stablegate_payment_pages"' and pid <> pg_backend_pid()`,
    );
    await payInFull(order.id, order.address);
    await eventually(async () => (await request(t.app).get(order.status)).body.state === 'confirming', 1000, 'the payment shown within 1 s');

    await eventually(() => t.deps.paymentPages.isListening, 10_000, 'the listener back');
    expect((await request(t.app).get(order.status)).body.state).to.equal('confirming');
    expect(t.deps.paymentPages.size, 'kept again').to.equal(1);
    await testDb().execute(sql`update orders set status = 'expired' where id = ${order.id}`);
    await eventually(async () => (await request(t.app).get(order.status)).body.state === 'expired', 1000, 'a change heard on the new connection');
  });

  it('is never stale beyond the listener\'s deadline when its connection is black-holed (no FIN, no RST), and keeps orders again once a new connection is proven', async function () {
    this.timeout(60_000);
    const DEADLINE_MS = 1000;
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(TEST_DATABASE_URL).port || 5432) });
    try {
      // Polled back to back for three deadlines: the per-IP page limit (300/min) would answer 429 first.
      const t = buildTestApp({ env: { ...tokens, PAGE_RATE_LIMIT_PER_MINUTE: '1000000' } });
      // Only the LISTEN connection goes through the proxy, as in the fault run: queries still reach Postgres.
      await listenForPageChanges(t, { databaseUrl: proxy.urlFor(TEST_DATABASE_URL), deadlineMs: DEADLINE_MS });
      const order = await createOrder(t);
      expect((await request(t.app).get(order.status)).body.state).to.equal('awaiting');
      expect(t.deps.paymentPages.size, 'kept').to.equal(1);

      proxy.blackHole();
      const changedAt = Date.now();
      await testDb().execute(sql`update orders set status = 'expired' where id = ${order.id}`);
      // Polls for three deadlines: any answered after the deadline shows the change.
      const answers: { startedAt: number; state: string }[] = [];
      while (Date.now() - changedAt < DEADLINE_MS * 3) {
        const startedAt = Date.now();
        const res = await request(t.app).get(order.status);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        answers.push({ startedAt, state: res.body.state });
      }
      const late = answers.filter((a) => a.startedAt > changedAt + DEADLINE_MS);
      expect(late.length).to.be.greaterThan(10);
      expect(late.filter((a) => a.state !== 'expired'), 'stale answers past the deadline').to.deep.equal([]);
      expect(t.deps.paymentPages.isListening, 'serving from Postgres').to.equal(false);
      expect(t.deps.paymentPages.size).to.equal(0);

      proxy.restore();
      await eventually(() => t.deps.paymentPages.isListening, 20_000, 'the listener proven again');
      const next = await createOrder(t);
      expect((await request(t.app).get(next.status)).body.state).to.equal('awaiting');
      expect(t.deps.paymentPages.size, 'kept again').to.equal(1);
      await testDb().execute(sql`update orders set status = 'expired' where id = ${next.id}`);
      await eventually(async () => (await request(t.app).get(next.status)).body.state === 'expired', 1000, 'a change heard on the new connection');
    } finally {
      await proxy.close();
    }
  });

  it('does not keep what it read when an invalidation of that order overtook the read', async () => {
    const t = buildTestApp({ env: tokens });
    await listenForPageChanges(t);
    const order = await createOrder(t);
    const cache = t.deps.paymentPages;
    const facts = await cache.find('some-token', async () => {
      const [row] = await testDb().execute<{ pay_token: string }>(sql`select pay_token from orders where id = ${order.id}`);
      const read = await findPaymentPage(t.deps, row.pay_token);
      cache.invalidate(order.id); // a change committed while the answer was on its way
      return read;
    });
    expect(facts?.order.id).to.equal(order.id);
    expect(cache.size).to.equal(0);
  });
});
