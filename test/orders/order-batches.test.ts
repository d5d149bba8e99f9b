import { expect } from 'chai';
import { and, eq, isNull } from 'drizzle-orm';
import request from 'supertest';
import { addressAssignments, poolAddresses } from '../../db/schema';
import { AppError } from '../../core/platform/errors';
import { processMetrics } from '../../core/platform/metrics';
import { createOrder, getOrder, type CreateOrderInput } from '../../core/orders/orders';
import { ORDER_BATCH_MAX } from '../../core/service/order-memory';
import { setConfigValue } from '../../core/organizations/org-config';
import type { ServiceContext } from '../../core/service/context';
import { buildTestApp, createTestOrg, testConfig, testContext, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { CHAIN, orgFootprint, preserveCheckpoint, tokenEnv } from '../helpers/orders';
import { dataOf } from '../helpers/wire';

/**
 * Order creation's group commit (core/orders/orders.ts): creations of one organization that
 * arrive while its creation statement is in flight go to Postgres together in the next. Creations
 * started in one tick make that deterministic: the first goes alone at once, the next
 * ORDER_BATCH_MAX wait and go as one statement when it finishes, the last alone after them.
 */

/** Statements that carried `orders` creations, by outcome, as /metrics counts them. */
async function statementsCounted(orders: number, outcome: 'committed' | 'failed'): Promise<number> {
  const metric = await processMetrics().orderCreationStatements.get();
  return metric.values.find((v) => v.labels.orders === String(orders) && v.labels.outcome === outcome)?.value ?? 0;
}

const settle = <T>(promises: Promise<T>[]) => Promise.allSettled(promises);

describe('order creation in batches', () => {
  preserveCheckpoint();
  const config = testConfig(tokenEnv());
  let org: TestOrg;
  let n = 0;
  const input = (overrides: Partial<CreateOrderInput> = {}): CreateOrderInput => ({
    orderReference: `batch-${++n}`,
    amount: '10.5',
    currency: 'USDT',
    chainId: CHAIN,
    ...overrides,
  });

  beforeEach(async () => {
    org = await createTestOrg('Batches org');
  });

  /**
   * A pool of `neverUsed` never-used addresses and `recycled` recycled ones (recycled in the
   * reverse of their creation order, older than the never-used), in allocation order.
   */
  async function seedPool(ctx: ServiceContext, neverUsedCount: number, recycledCount: number): Promise<string[]> {
    const t0 = ctx.clock.now();
    const neverUsed = await seedPoolAddresses(org.organizationId, 'evm', neverUsedCount, new Date(t0.getTime() - 3_600_000));
    const recycled = await seedPoolAddresses(org.organizationId, 'evm', recycledCount, new Date(t0.getTime() - 7_200_000));
    for (const [i, address] of recycled.entries()) {
      await testDb()
        .update(poolAddresses)
        .set({ recycledAt: new Date(t0.getTime() - 60_000 * (i + 1)) })
        .where(eq(poolAddresses.address, address));
    }
    return [...neverUsed, ...[...recycled].reverse()];
  }

  for (const [shape, neverUsedCount, recycledCount, batched] of [
    ['never-used addresses', 12, 0, ORDER_BATCH_MAX],
    ['recycled addresses, by recycled_at', 0, 12, ORDER_BATCH_MAX],
    // The batch takes the last three never-used; its other five then take alone, from the recycled.
    ['the last never-used addresses, then recycled ones', 4, 8, 3],
  ] as const) {
    it(`a batch over ${shape}: each order its own address, in allocation order, stored as answered`, async () => {
      const ctx = testContext(config);
      const allocationOrder = await seedPool(ctx, neverUsedCount, recycledCount);
      // The organization's own window and minimum confirmations, read inside the statement.
      await setConfigValue(testDb(), org.organizationId, 'payment_window_minutes', 17);
      await setConfigValue(testDb(), org.organizationId, 'confirmations.orders', 9);
      // Room for the 123456789.123456 below (the default maximum is 1,000,000 token units).
      await setConfigValue(testDb(), org.organizationId, 'max_order_amount', '1000000000');

      const before = await statementsCounted(ORDER_BATCH_MAX, 'committed');
      const inputs = Array.from({ length: 2 + ORDER_BATCH_MAX }, (_, i) =>
        input({
          currency: ['USDT', 'USDC', 'DAI'][i % 3],
          amount: ['10.5', '0.000001', '123456789.123456'][i % 3],
          metadata: i % 2 ? { i, note: `ü "quoted" \\ ${i}` } : undefined,
          paymentWindowMinutes: i % 4 === 0 ? 30 + i : undefined,
          graceMinutes: i % 5,
          successUrl: i === 3 ? 'https://shop.example/ok?x=1&y=ü' : undefined,
        }),
      );
      const created = await Promise.all(inputs.map((x) => createOrder(ctx, org.organizationId, x)));
      expect(await statementsCounted(ORDER_BATCH_MAX, 'committed')).to.equal(before + 1);

      const taken = created.map((o) => o.address);
      expect(new Set(taken).size).to.equal(taken.length);
      expect(allocationOrder.slice(0, taken.length)).to.have.members(taken);
      // What the batch served (it came after the first, lone creation) is in allocation order by arrival.
      const ranks = taken.slice(1, 1 + batched).map((a) => allocationOrder.indexOf(a));
      expect(ranks).to.deep.equal([...ranks].sort((a, b) => a - b));

      for (const [i, order] of created.entries()) {
        expect(await getOrder(testDb(), org.organizationId, order.id)).to.deep.equal(order);
        expect(order.paymentWindowMinutes).to.equal(inputs[i].paymentWindowMinutes ?? 17);
        expect(order.requiredConfirmations).to.equal(9);
        expect(order.metadata).to.deep.equal(inputs[i].metadata ?? {});
      }
      // One open assignment per order, for that order; the addresses not taken are still available.
      const open = await testDb()
        .select({ orderId: addressAssignments.orderId, poolAddressId: addressAssignments.poolAddressId })
        .from(addressAssignments)
        .where(and(eq(addressAssignments.organizationId, org.organizationId), isNull(addressAssignments.endedAt)));
      expect(open.map((a) => a.orderId)).to.have.members(created.map((o) => o.id));
      expect(open.map((a) => a.poolAddressId)).to.have.members(created.map((o) => o.poolAddressId));
      const left = await testDb().select({ address: poolAddresses.address, status: poolAddresses.status }).from(poolAddresses).where(eq(poolAddresses.organizationId, org.organizationId));
      expect(left.filter((r) => r.status === 'available').map((r) => r.address)).to.have.members(allocationOrder.slice(taken.length));
    });
  }

  it('a duplicate reference in a batch stores nothing of it: each creation runs alone, the duplicates get 409 naming the order they collide with', async () => {
    const ctx = testContext(config);
    await seedPoolAddresses(org.organizationId, 'evm', 20);
    const existing = await createOrder(ctx, org.organizationId, input({ orderReference: 'taken-before' }));
    const failedBefore = await statementsCounted(ORDER_BATCH_MAX, 'failed');
    const inputs = Array.from({ length: 2 + ORDER_BATCH_MAX }, () => input());
    inputs[5].orderReference = 'taken-before';
    inputs[8].orderReference = inputs[6].orderReference;
    const results = await settle(inputs.map((x) => createOrder(ctx, org.organizationId, x)));
    expect(await statementsCounted(ORDER_BATCH_MAX, 'failed')).to.equal(failedBefore + 1);

    const rejected = results.flatMap((r, i) => (r.status === 'rejected' ? [{ i, err: r.reason as AppError }] : []));
    expect(rejected.map((r) => r.i)).to.have.length(2);
    expect(rejected.map((r) => r.err.code)).to.deep.equal(['DUPLICATE_ORDER_REFERENCE', 'DUPLICATE_ORDER_REFERENCE']);
    const five = rejected.find((r) => r.i === 5)!;
    expect(five.err.extra).to.deep.equal({ existingOrderId: existing.id });
    // Of 6 and 8 (one reference) exactly one was created, and the other names it.
    const loser = rejected.find((r) => r.i !== 5)!;
    expect([6, 8]).to.include(loser.i);
    const winner = results[loser.i === 6 ? 8 : 6];
    expect(winner.status).to.equal('fulfilled');
    expect(loser.err.extra).to.deep.equal({ existingOrderId: (winner as PromiseFulfilledResult<{ id: string }>).value.id });
    // Nothing leaked: one taken address and one open assignment per stored order.
    expect(await orgFootprint(org.organizationId)).to.deep.include({ orderCount: 9, assignmentCount: 9, notAvailable: 9 });
  });

  it('a batch larger than what the pool has left: the first creations get the addresses, the rest 503 NO_AVAILABLE_ADDRESSES, nothing stored for them', async () => {
    const ctx = testContext(config);
    const pool = await seedPoolAddresses(org.organizationId, 'evm', 6);
    const results = await settle(Array.from({ length: 2 + ORDER_BATCH_MAX }, () => createOrder(ctx, org.organizationId, input())));
    const created = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const rejected = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as AppError] : []));
    expect(created.map((o) => o.address)).to.have.members(pool);
    expect(rejected.map((e) => e.code)).to.deep.equal(Array(4).fill('NO_AVAILABLE_ADDRESSES'));
    expect(await orgFootprint(org.organizationId)).to.deep.include({ orderCount: 6, assignmentCount: 6, notAvailable: 6 });
  });

  it('organizations never share a batch or an address', async () => {
    const ctx = testContext(config);
    const other = await createTestOrg('Batches other org');
    const mine = await seedPoolAddresses(org.organizationId, 'evm', 10);
    const theirs = await seedPoolAddresses(other.organizationId, 'evm', 10);
    const both = await Promise.all(
      Array.from({ length: 16 }, (_, i) => createOrder(ctx, i % 2 ? other.organizationId : org.organizationId, input())),
    );
    for (const [i, o] of both.entries()) {
      expect(o.organizationId).to.equal(i % 2 ? other.organizationId : org.organizationId);
      expect(i % 2 ? theirs : mine).to.include(o.address);
    }
    expect(new Set(both.map((o) => o.address)).size).to.equal(16);
  });

  it('over HTTP, a burst of creations answers each with the order as stored', async () => {
    const { app } = buildTestApp({ style: 'b', env: tokenEnv() });
    await seedPoolAddresses(org.organizationId, 'evm', 30);
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send(input({ metadata: { i } })),
      ),
    );
    expect(results.map((r) => r.status)).to.deep.equal(Array(24).fill(201));
    const bodies = results.map((r) => dataOf('b', r));
    expect(new Set(bodies.map((b) => b.address)).size).to.equal(24);
    for (const b of bodies) {
      const got = await request(app).get(`/api/v1/orders/${b.orderId}`).set('X-API-Key', org.keys.member);
      expect(dataOf('b', got)).to.deep.equal(b);
    }
    expect(await orgFootprint(org.organizationId)).to.deep.include({ orderCount: 24, assignmentCount: 24, notAvailable: 24 });
  });
});
