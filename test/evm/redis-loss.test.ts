import { expect } from 'chai';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { sql } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { createOrder } from '../../core/orders/orders';
import { createTestOrg, testContext, TEST_REDIS_PREFIX, TEST_REDIS_URL } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { startChainWorker, stopWorker } from '../helpers/page-service';
import type { Spawned } from '../helpers/processes';
import { orderRow } from '../helpers/evm';
import { eventually } from '../helpers/wait';

/**
 * Redis data lost without a reconnect (issue 37): the keys of the service's Redis prefix deleted
 * under a running worker process (what FLUSHDB, an eviction or a failover to a replica that lost
 * them does; only this test's prefix, with SCAN and DEL, on the shared Redis). The job schedulers
 * are gone and no reconnect tells the process: its own timer (workers/schedule-watch.ts, every
 * SCHEDULE_WATCH_INTERVAL_MS, 10 s by default, kept here) creates them again, scanning resumes
 * within a minute, and a payment made after the deletion is credited.
 */
describe('job schedulers lost with Redis keys under a running worker (anvil)', function () {
  this.timeout(180_000);
  const suffix = 'redisloss';
  const prefix = `${TEST_REDIS_PREFIX}${suffix}`;
  let chain: TestChain;
  let worker: Spawned | undefined;
  let redis: Redis;

  before(async () => {
    chain = await startTestChain();
    redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 3 });
  });
  after(async () => {
    await stopWorker(worker);
    redis?.disconnect();
    await chain?.stop();
  });

  /** When the worker last asked the chain for its head (a scan or a confirmation count). */
  async function lastLook(ctx: ReturnType<typeof testContext>): Promise<number> {
    const rows = (await ctx.db.execute(sql`select max(last_seen_at) as at from chain_head_observations where chain_id = ${LOCAL_CHAIN_ID}`)) as unknown as { at: string | Date | null }[];
    return rows[0]?.at ? new Date(rows[0].at).getTime() : 0;
  }

  /** Deletes every key of the prefix (SCAN + DEL, never FLUSHALL on the shared Redis); returns how many. */
  async function deletePrefixKeys(): Promise<number> {
    let cursor = '0';
    let deleted = 0;
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== '0');
    return deleted;
  }

  it('re-creates the schedulers by itself: scanning resumes within a minute and a payment made after the deletion is credited', async () => {
    const ctx = testContext();
    useTestChain(ctx.registry, chain);
    const orgId = (await createTestOrg('redis loss org')).organizationId;
    await seedPoolAddresses(orgId, 'evm', 5);
    await resetCheckpointToHead(ctx, chain);

    worker = await startChainWorker(chain, suffix);
    await eventually(async () => Date.now() - (await lastLook(ctx)) < 1000, 60_000, 'the worker looking at the chain');

    const scanQueue = new Queue('chain-scan', { connection: redis.duplicate(), prefix });
    try {
      expect(await scanQueue.getJobScheduler(`chain-scan-${LOCAL_CHAIN_ID}`), 'registered at start').to.not.equal(undefined);
      const deletedAt = Date.now();
      const deleted = await deletePrefixKeys();
      expect(deleted, 'keys of the prefix deleted').to.be.greaterThan(0);
      expect(await scanQueue.getJobScheduler(`chain-scan-${LOCAL_CHAIN_ID}`), 'gone with the keys').to.equal(undefined);

      // A payment made after the deletion, while the schedulers are gone.
      const order = await createOrder(ctx, orgId, { orderReference: `redis-loss-${Date.now()}`, amount: '3', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
      await chain.pay(order.address, 'USDT', 3_000_000n);

      // The worker's own timer notices and re-creates them (a warning naming them); scanning resumes.
      await eventually(() => /job schedulers missing from Redis re-created/.test(worker!.stdout()), 60_000, 'the schedulers re-created');
      const warning = worker.stdout().split('\n').find((l) => l.includes('job schedulers missing from Redis re-created'))!;
      expect(JSON.parse(warning).schedulers).to.include.members([`chain-scan-${LOCAL_CHAIN_ID}`, `chain-confirmations-${LOCAL_CHAIN_ID}`, 'order-expiry']);
      expect(await scanQueue.getJobScheduler(`chain-scan-${LOCAL_CHAIN_ID}`), 'back in Redis').to.not.equal(undefined);
      await eventually(async () => (await lastLook(ctx)) > deletedAt + 1000, 60_000, 'the worker scanning again');
      const resumedWithinMs = (await lastLook(ctx)) - deletedAt;
      expect(resumedWithinMs, 'scanning resumed within a minute').to.be.below(60_000);

      // The payment confirms as blocks come, and the order completes.
      await eventually(
        async () => {
          await chain.mine(1);
          return (await orderRow(ctx, order.id)).status === 'completed';
        },
        60_000,
        'the order paid after the deletion to complete',
        300,
      );
      expect(worker.stdout(), 'no process exit or error line').to.not.match(/"level":60/);
    } finally {
      await scanQueue.close();
    }
  });
});
