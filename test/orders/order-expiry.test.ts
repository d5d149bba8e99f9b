import { expect } from 'chai';
import { and, eq, inArray } from 'drizzle-orm';
import request from 'supertest';
import type { Worker } from 'bullmq';
import { expireDueOrders } from '../../core/orders/order-expiry';
import { createWorkerRedis } from '../../core/platform/redis';
import { addressAssignments, events, orders, poolAddresses } from '../../db/schema';
import { closeQueues, createQueues, repeatableSchedules, type Queues } from '../../core/jobs/catalog';
import { startWorkers } from '../../workers/worker-pool';
import { PROCESSORS } from '../../workers/processors';
import { buildTestApp, createTestOrg, STYLES, TEST_REDIS_PREFIX, TEST_REDIS_URL, testContext, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { dataOf } from '../helpers/wire';
import { CHAIN, checkpointAt, preserveCheckpoint, tokenEnv } from '../helpers/orders';
import { eventually } from '../helpers/wait';

const WINDOW_MS = 60_000;

const waitFor = (cond: () => Promise<boolean>, timeoutMs = 10_000) => eventually(cond, timeoutMs, 'the expiry job');

for (const style of STYLES) {
  describe(`order expiry job (style ${style.toUpperCase()})`, () => {
    preserveCheckpoint();
    const t = buildTestApp({ style, env: { ...tokenEnv(), ORDER_EXPIRY_INTERVAL_MS: '200' } });
    const ctx = testContext(t.config, t.clock);
    let org: TestOrg;

    before(async () => {
      org = await createTestOrg(`expiry ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 30);
    });

    /** Orders with a one-minute window and no grace, created through the API. */
    async function createShortOrders(n: number, extra: Record<string, unknown> = {}): Promise<any[]> {
      const made = [];
      for (let i = 0; i < n; i++) {
        const res = await request(t.app)
          .post('/api/v1/orders')
          .set('X-API-Key', org.keys.member)
          .send({ orderReference: `exp-${Date.now()}-${Math.random()}`, amount: '5', currency: 'USDT', chainId: CHAIN, paymentWindowMinutes: 1, graceMinutes: 0, metadata: { i }, ...extra });
        expect(res.status, JSON.stringify(res.body)).to.equal(201);
        made.push(dataOf(style, res));
      }
      return made;
    }

    async function stateOf(ids: string[]) {
      const rows = await testDb().select().from(orders).where(inArray(orders.id, ids));
      const evts = (await testDb().select().from(events).where(and(eq(events.organizationId, org.organizationId), eq(events.type, 'order.expired'))))
        .filter((e) => ids.includes((e.data as any).orderId));
      const pool = await testDb().select().from(poolAddresses).where(inArray(poolAddresses.id, rows.map((r) => r.poolAddressId!)));
      const open = await testDb().select().from(addressAssignments).where(inArray(addressAssignments.orderId, ids));
      return { rows, evts, pool, open };
    }

    it('is in the job catalog, scheduled every ORDER_EXPIRY_INTERVAL_MS', () => {
      const s = repeatableSchedules(t.config, ctx.registry).find((x) => x.queue === 'order-expiry');
      expect(s).to.deep.include({ schedulerId: 'order-expiry', everyMs: 200 });
      expect(PROCESSORS['order-expiry']).to.be.a('function');
    });

    it('a lagging checkpoint keeps orders pending; once it passes graceEndsAt, two BullMQ workers expire each order exactly once', async () => {
      const made = await createShortOrders(6);
      const ids = made.map((o) => o.orderId);
      const graceEnd = Math.max(...made.map((o) => Date.parse(o.graceEndsAt)));
      await checkpointAt(new Date(graceEnd - 5000));
      t.clock.advance(WINDOW_MS + 10_000);
      const connection = createWorkerRedis(TEST_REDIS_URL);
      const queues: Queues = createQueues(connection, TEST_REDIS_PREFIX);
      let workers: Worker[] = [];
      try {
        // The scanner is behind: the clock says expired, the job must not.
        const lagging = await Promise.all([expireDueOrders(ctx), expireDueOrders(ctx)]);
        expect(lagging.map((r) => r.expired)).to.deep.equal([0, 0]);
        expect((await stateOf(ids)).rows.map((r) => r.status)).to.deep.equal(Array(6).fill('pending'));

        await checkpointAt(new Date(graceEnd + 1000));
        const queue = queues['order-expiry'];
        // Only this test's jobs may run here: a scheduler left in the shared prefix by an earlier
        // suite's worker process would start a run of its own, holding the rows (skip locked) while
        // the jobs below complete with nothing examined. Removing the scheduler drops only its next
        // *delayed* run, so a run it already made waiting is drained too, before any worker starts.
        await queue.removeJobScheduler('order-expiry');
        await queue.drain(true);
        // Two workers (as two worker processes would), several overlapping runs queued at once.
        workers = [
          ...startWorkers(ctx, connection, ['order-expiry']),
          ...startWorkers(ctx, createWorkerRedis(TEST_REDIS_URL), ['order-expiry']),
        ];
        const jobs = await Promise.all(Array.from({ length: 6 }, (_, i) => queue.add('order-expiry', {}, { jobId: `order-expiry-test-${style}-${i}` })));
        // Wait for these jobs only: other tests' jobs may share the queue.
        await waitFor(async () => (await Promise.all(jobs.map((j) => j.getState()))).every((st) => st === 'completed' || st === 'failed'));
        expect(await Promise.all(jobs.map((j) => j.getState()))).to.deep.equal(Array(6).fill('completed'));
        const s = await stateOf(ids);
        expect(s.rows.map((r) => r.status)).to.deep.equal(Array(6).fill('expired'));
        expect(s.evts).to.have.length(6);
        expect(new Set(s.evts.map((e) => (e.data as any).orderId)).size).to.equal(6);
        expect(s.pool.map((p) => p.status)).to.deep.equal(Array(6).fill('cooldown'));
        for (const p of s.pool) expect(p.cooldownUntil!.getTime()).to.be.greaterThan(t.clock.now().getTime() + 29 * 60_000);
        expect(s.open.every((a) => a.endedAt !== null)).to.equal(true);
        const evt = s.evts.find((e) => (e.data as any).orderId === ids[0])!;
        expect(evt.data).to.deep.equal({
          orderId: ids[0],
          orderReference: made[0].orderReference,
          status: 'expired',
          amount: '5',
          amountReceived: '0',
          amountDue: '5',
          amountExcess: '0',
          paymentState: 'unpaid',
          currency: 'USDT',
          chainId: CHAIN,
          address: made[0].address,
          expiresAt: made[0].expiresAt,
          expiredAt: s.rows.find((r) => r.id === ids[0])!.expiredAt!.toISOString(),
          metadata: { i: 0 },
        });
      } finally {
        await Promise.all(workers.map((w) => w.close()));
        await queues['order-expiry'].obliterate({ force: true }).catch(() => {});
        await closeQueues(queues);
        connection.disconnect();
        t.clock.advance(-(WINDOW_MS + 10_000));
      }
    });

    it('concurrent overlapping runs emit one order.expired per order (direct processor calls)', async () => {
      const made = await createShortOrders(5);
      const ids = made.map((o) => o.orderId);
      await checkpointAt(new Date(Math.max(...made.map((o) => Date.parse(o.graceEndsAt))) + 1000));
      t.clock.advance(WINDOW_MS + 5000);
      try {
        const runs = await Promise.all(Array.from({ length: 4 }, () => expireDueOrders(ctx, { batchSize: 2 })));
        const s = await stateOf(ids);
        expect(s.rows.every((r) => r.status === 'expired')).to.equal(true);
        expect(s.evts).to.have.length(5);
        expect(runs.reduce((n, r) => n + r.failed, 0)).to.equal(0);
      } finally {
        t.clock.advance(-(WINDOW_MS + 5000));
      }
    });

    it('leaves alone orders still in their window and orders with a payment awaiting confirmations', async () => {
      const [inWindow] = await createShortOrders(1, { paymentWindowMinutes: 30 });
      const [paid] = await createShortOrders(1);
      await insertTestTransfer({
        chainId: CHAIN, currency: 'USDT', amount: 5_000_000n, toAddress: paid.address, orderId: paid.orderId,
        organizationId: org.organizationId, counted: true, status: 'pending', confirmations: 1,
        blockTimestamp: new Date(Date.parse(paid.createdAt) + 2000),
      });
      await checkpointAt(new Date(Date.parse(paid.graceEndsAt) + 60_000));
      t.clock.advance(WINDOW_MS + 60_000);
      try {
        await expireDueOrders(ctx);
        const s = await stateOf([inWindow.orderId, paid.orderId]);
        expect(s.rows.map((r) => r.status)).to.deep.equal(['pending', 'pending']);
        expect(s.evts).to.have.length(0);
        const [row] = s.rows.filter((r) => r.id === paid.orderId);
        expect(row.amountReceived).to.equal(5_000_000n);
      } finally {
        t.clock.advance(-(WINDOW_MS + 60_000));
      }
    });
  });
}
