import { expect } from 'chai';
import request from 'supertest';
import { and, eq } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import type { ManualClock } from '../../core/platform/clock';
import { eventsFor, settle as settleChain } from '../helpers/evm';
import { orders, poolAddresses, transfers } from '../../db/schema';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf, expectError } from '../helpers/wire';

/**
 * Issue 41: orders priced in USD whose payer picks the route, through the API on the local EVM
 * chain (anvil) in both wire formats: created with no address, a route chosen (address taken, window
 * started), switched (same family: same address), paid partly by each route, completed in USD with
 * the route of the completing payment in order.completed.
 */
for (const style of ['b', 'a'] as const) {
  describe(`USD orders and routes through the API (style ${style.toUpperCase()}, anvil)`, function () {
    this.timeout(90_000);
    let chain: TestChain;
    let t: TestApp;
    let ctx: ServiceContext;
    let clock: ManualClock;
    let org: TestOrg;
    let n = 0;
    const api = () => request(t.app);
    /** A look at the chain between an address changing hands and a payment: attribution's evidence. */
    const tick = async () => {
      clock.advance(5_000);
      await settle();
      clock.advance(5_000);
    };
    const settle = () => settleChain(ctx);
    const create = (body: Record<string, unknown>) =>
      api().post('/api/v1/orders').set('X-API-Key', org.keys.member).send({ orderReference: `usd-${style}-${++n}-${Date.now()}`, ...body });
    const choose = (orderId: string, route: { currency: string; chainId: string }) => api().post(`/api/v1/orders/${orderId}/route`).set('X-API-Key', org.keys.member).send(route);
    const USDT = { currency: 'USDT', chainId: LOCAL_CHAIN_ID };
    const USDC = { currency: 'USDC', chainId: LOCAL_CHAIN_ID };

    before(async () => {
      chain = await startTestChain();
      t = buildTestApp({ style });
      ctx = t.deps;
      clock = t.clock;
      useTestChain(ctx.registry, chain);
      await resetCheckpointToHead(ctx, chain);
      org = await createTestOrg(`usd orders ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 4);
    });
    after(async () => {
      await chain?.stop();
    });

    it('a USD order has no address until a route is chosen; switching keeps the family\'s address; payments by both routes add up in dollars and order.completed names the completing route', async () => {
      const created = await create({ amount: '12.34', currency: 'USD', routes: [USDT, USDC] });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const order = dataOf(style, created);
      expect(order).to.include({ currency: 'USD', amount: '12.34', address: null, chainId: null, route: null, status: 'pending', paymentState: 'unpaid' });
      expect(order.routes).to.deep.equal([
        { currency: 'USDT', chainId: LOCAL_CHAIN_ID, amount: '12.34' },
        { currency: 'USDC', chainId: LOCAL_CHAIN_ID, amount: '12.34' },
      ]);
      // Nothing is taken from the pool until a route is chosen.
      const allocated = async () =>
        (await ctx.db.select({ id: poolAddresses.id }).from(poolAddresses).where(and(eq(poolAddresses.organizationId, org.organizationId), eq(poolAddresses.status, 'allocated')))).length;
      const before = await allocated();

      clock.advance(60_000);
      const chosen = await choose(order.orderId, USDT);
      expect(chosen.status, JSON.stringify(chosen.body)).to.equal(200);
      const first = dataOf(style, chosen);
      expect(first.address).to.be.a('string');
      expect(first).to.include({ chainId: LOCAL_CHAIN_ID, protocol: 'evm' });
      expect(first.route).to.include({ currency: 'USDT', chainId: LOCAL_CHAIN_ID, amount: '12.34', amountDue: '12.34', address: first.address });
      // The choice starts the window.
      expect(Date.parse(first.expiresAt) - Date.parse(order.expiresAt)).to.be.within(60_000, 65_000);
      expect(await allocated()).to.equal(before + 1);
      // The same route again changes nothing.
      expect(dataOf(style, await choose(order.orderId, USDT))).to.include({ address: first.address, expiresAt: first.expiresAt });

      await tick();
      await chain.pay(first.address, 'USDT', 5_000_000n);
      await chain.mine(3);
      await settle();
      const switched = dataOf(style, await choose(order.orderId, USDC));
      // An EVM address is the same on every EVM chain: the order keeps its one address of the family.
      expect(switched.address).to.equal(first.address);
      expect(switched.route).to.include({ currency: 'USDC', amount: '12.34', amountDue: '7.34' });
      expect(switched.expiresAt).to.equal(first.expiresAt);
      expect(await allocated()).to.equal(before + 1);

      await chain.pay(first.address, 'USDC', 7_340_000n);
      await chain.mine(3);
      await settle();
      await settle();
      const done = dataOf(style, await api().get(`/api/v1/orders/${order.orderId}`).set('X-API-Key', org.keys.viewer));
      expect(done).to.include({ status: 'completed', currency: 'USD', amount: '12.34', amountReceived: '12.34', paymentState: 'paid' });
      expect(done.route).to.include({ currency: 'USDC', chainId: LOCAL_CHAIN_ID });
      expect(done.chosenRoutes.map((r: { currency: string; amountReceived: string }) => [r.currency, r.amountReceived])).to.deep.equal([
        ['USDT', '5'],
        ['USDC', '7.34'],
      ]);
      const [completed] = await eventsFor(ctx, 'order.completed', 'orderId', order.orderId);
      const data = completed.data as Record<string, any>;
      expect(data).to.include({ currency: 'USD', amount: '12.34', amountReceived: '12.34' });
      expect(data.route).to.include({ currency: 'USDC', chainId: LOCAL_CHAIN_ID, amount: '12.34' });
      // Its address went back to the pool (cooldown) once, with the order.
      const [row] = await ctx.db.select().from(orders).where(eq(orders.id, order.orderId));
      const [pool] = await ctx.db.select().from(poolAddresses).where(eq(poolAddresses.id, row.poolAddressId!));
      expect(pool.status).to.equal('cooldown');

      // A refund is paid by one of its routes: by default its current one, up to what that route received.
      const refundBy = (body: Record<string, unknown>) => api().post(`/api/v1/orders/${order.orderId}/refunds`).set('X-API-Key', org.keys.admin).send({ reason: 'returned', ...body });
      expectError(style, await refundBy({ currency: 'DAI', chainId: LOCAL_CHAIN_ID }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await refundBy({ ...USDT, amount: '5.01' }), 400, 'INVALID_AMOUNT', 'ValidationError');
      const byUsdt = await refundBy(USDT);
      expect(byUsdt.status, JSON.stringify(byUsdt.body)).to.equal(201);
      expect(dataOf(style, byUsdt)).to.include({ amount: '5', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
      const byCurrent = dataOf(style, await refundBy({ amount: '1.5' }));
      expect(byCurrent).to.include({ amount: '1.5', currency: 'USDC' });
      const refunded = dataOf(style, await api().get(`/api/v1/orders/${order.orderId}`).set('X-API-Key', org.keys.viewer));
      expect(refunded.amountRefunded).to.equal('6.5');
      // Nothing of USDT is left to refund.
      expectError(style, await refundBy(USDT), 400, 'INVALID_AMOUNT', 'ValidationError');

      // The orders export shows it in dollars.
      const csv = await api().get('/api/v1/exports/orders.csv').query({ currency: 'USD' }).set('X-API-Key', org.keys.viewer);
      expect(csv.status).to.equal(200);
      const line = csv.text.split('\n').find((l) => l.includes(order.orderId));
      expect(line).to.include('12.34');
      expect(line).to.include('USD');
    });

    it('a payment by an offered route that was not chosen is recorded against the order, not counted, and the merchant may attribute it by hand', async () => {
      const order = dataOf(style, await create({ amount: '3', currency: 'USD', routes: [USDT, USDC] }));
      const chosen = dataOf(style, await choose(order.orderId, USDT));
      await tick();
      await chain.pay(chosen.address, 'USDC', 3_000_000n);
      await chain.mine(3);
      await settle();
      await settle();
      const after = dataOf(style, await api().get(`/api/v1/orders/${order.orderId}`).set('X-API-Key', org.keys.viewer));
      expect(after).to.include({ status: 'pending', amountReceived: '0' });
      // Recorded against the order (its address, while it held it), not counted.
      const paid = await ctx.db.select().from(transfers).where(eq(transfers.orderId, order.orderId));
      expect(paid.map((p) => [p.currency, p.counted])).to.deep.equal([['USDC', false]]);
      // To an order none of whose routes is USDC on this chain: refused, nothing changes.
      const other = dataOf(style, await create({ amount: '3', currency: 'USD', routes: [USDT] }));
      const refused = await api().post(`/api/v1/transfers/${paid[0].id}/attribute`).set('X-API-Key', org.keys.admin).send({ orderId: other.orderId, reason: 'x' });
      expectError(style, refused, 400, 'VALIDATION_ERROR', 'ValidationError');
      // USDC is a route this order offers (not the one chosen): the merchant may attribute it by hand, which completes it.
      const attributed = await api().post(`/api/v1/transfers/${paid[0].id}/attribute`).set('X-API-Key', org.keys.admin).send({ orderId: order.orderId, reason: 'paid USDC instead of USDT' });
      expect(attributed.status, JSON.stringify(attributed.body)).to.equal(200);
      const settled = dataOf(style, await api().get(`/api/v1/orders/${order.orderId}`).set('X-API-Key', org.keys.viewer));
      expect(settled).to.include({ status: 'completed', amountReceived: '3', resolution: 'manual' });
    });

    it('refuses what does not fit, changing nothing', async () => {
      expectError(style, await create({ amount: '12.345', currency: 'USD' }), 400, 'INVALID_AMOUNT', 'ValidationError');
      expectError(style, await create({ amount: '10', currency: 'USD', chainId: LOCAL_CHAIN_ID }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create({ amount: '10', currency: 'USDT', chainId: LOCAL_CHAIN_ID, routes: [USDT] }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create({ amount: '10', currency: 'USDT' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await create({ amount: '10', currency: 'USD', routes: [{ currency: 'USDT', chainId: 'nowhere-1' }] }), 400, 'INVALID_CHAIN', 'ValidationError');
      const usd = dataOf(style, await create({ amount: '10', currency: 'USD', routes: [USDT] }));
      const again = await api().post('/api/v1/orders').set('X-API-Key', org.keys.member).send({ orderReference: usd.orderReference, amount: '10', currency: 'USD' });
      expectError(style, again, 409, 'DUPLICATE_ORDER_REFERENCE', 'Conflict');
      expectError(style, await choose(usd.orderId, USDC), 400, 'INVALID_CURRENCY', 'ValidationError');
      const token = dataOf(style, await create({ amount: '10', currency: 'USDT', chainId: LOCAL_CHAIN_ID }));
      expectError(style, await choose(token.orderId, USDT), 409, 'CONFLICT', 'Conflict');
      const other = await createTestOrg(`usd other ${style}`);
      const foreign = await api().post(`/api/v1/orders/${usd.orderId}/route`).set('X-API-Key', other.keys.member).send(USDT);
      expect(foreign.status).to.equal(404);
      const viewer = await api().post(`/api/v1/orders/${usd.orderId}/route`).set('X-API-Key', org.keys.viewer).send(USDT);
      expect(viewer.status).to.equal(403);
      // Past its window: ORDER_EXPIRED, no address taken.
      clock.advance(11 * 60_000);
      expectError(style, await choose(usd.orderId, USDT), 400, 'ORDER_EXPIRED', 'OrderExpired');
      const [row] = await ctx.db.select().from(orders).where(eq(orders.id, usd.orderId));
      expect(row.address).to.equal(null);
    });

    it('with no routes given, a USD order offers every USD stablecoin of the deployment, narrowed by the organization\'s usd_routes', async () => {
      const all = dataOf(style, await create({ amount: '1', currency: 'USD' }));
      const offered = all.routes.map((r: { currency: string; chainId: string }) => `${r.currency}@${r.chainId}`);
      expect(offered).to.include.members([`USDT@${LOCAL_CHAIN_ID}`, `USDC@${LOCAL_CHAIN_ID}`, `DAI@${LOCAL_CHAIN_ID}`]);
      const set = await api().put('/api/v1/config/usd_routes').set('X-API-Key', org.keys.owner).send({ value: `USDC@${LOCAL_CHAIN_ID},USDT@nowhere-1` });
      expect(set.status, JSON.stringify(set.body)).to.equal(200);
      const narrowed = dataOf(style, await create({ amount: '1', currency: 'USD' }));
      expect(narrowed.routes).to.deep.equal([{ currency: 'USDC', chainId: LOCAL_CHAIN_ID, amount: '1' }]);
      const bad = await api().put('/api/v1/config/usd_routes').set('X-API-Key', org.keys.owner).send({ value: 'USDC on ethereum' });
      expect(bad.status).to.equal(400);
      await api().put('/api/v1/config/usd_routes').set('X-API-Key', org.keys.owner).send({ value: null });
    });
  });
}
