import { expect } from 'chai';
import request from 'supertest';
import { and, asc, eq } from 'drizzle-orm';
import { events } from '../../db/schema';
import { ManualClock } from '../../core/platform/clock';
import { allocatePoolAddress, releasePoolAddress, type Allocation } from '../../core/pool/allocation';
import { checkPoolLevels, isLow, parseThreshold } from '../../core/pool/alerts';
import { Redis } from 'ioredis';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { closeQueues, createQueues } from '../../core/jobs/catalog';
import { addJobsAndWait } from '../helpers/run-job';
import { buildTestApp, createTestOrg, STYLES, testConfig, testContext, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf, expectError } from '../helpers/wire';

async function alertsOf(organizationId: string) {
  return testDb()
    .select()
    .from(events)
    .where(and(eq(events.organizationId, organizationId), eq(events.type, 'alert.address_pool_low')))
    .orderBy(asc(events.createdAt), asc(events.id));
}

async function take(organizationId: string, n: number, protocol: 'evm' | 'tron' = 'evm'): Promise<Allocation[]> {
  const out: Allocation[] = [];
  for (let i = 0; i < n; i++) {
    out.push(await testDb().transaction((tx) => allocatePoolAddress(tx, { organizationId, protocol, holder: { kind: 'order', orderId: `ord_a${i}` }, now: new Date() })));
  }
  return out;
}

async function giveBack(allocations: Allocation[]) {
  for (const a of allocations) {
    await testDb().transaction((tx) => releasePoolAddress(tx, { poolAddressId: a.poolAddressId, now: new Date(), cooldownMinutes: 0 }));
  }
}

describe('low-pool threshold rules', () => {
  it('counts and percentages, strictly below; 0 and empty pools never alert', () => {
    expect(isLow(4, 10, parseThreshold(5))).to.equal(true);
    expect(isLow(5, 10, parseThreshold(5))).to.equal(false);
    expect(isLow(1, 10, parseThreshold('10%'))).to.equal(false);
    expect(isLow(0, 10, parseThreshold('10%'))).to.equal(true);
    expect(isLow(9, 100, parseThreshold('9.5%'))).to.equal(true);
    expect(isLow(0, 10, parseThreshold(0))).to.equal(false);
    expect(isLow(0, 0, parseThreshold(5))).to.equal(false);
  });
});

for (const style of STYLES) {
  describe(`low-pool threshold configuration (style ${style.toUpperCase()})`, () => {
    const { app } = buildTestApp({ style });
    it('accepts a count or a percentage per protocol, rejects anything else', async () => {
      const org = await createTestOrg('Threshold org');
      const put = (key: string, value: unknown) => request(app).put(`/api/v1/config/${key}`).set('X-API-Key', org.keys.admin).send({ value });
      const defaults = await request(app).get('/api/v1/config/address_pool.low_threshold.tron').set('X-API-Key', org.keys.admin);
      expect(dataOf(style, defaults)).to.include({ value: '10%', isDefault: true });
      expect(dataOf(style, await put('address_pool.low_threshold.evm', 25))).to.include({ value: 25 });
      expect(dataOf(style, await put('address_pool.low_threshold.solana', '12.5%'))).to.include({ value: '12.5%' });
      for (const bad of [-1, 1.5, '101%', 'ten', '%', null]) {
        expectError(style, await put('address_pool.low_threshold.evm', bad), 400, 'VALIDATION_ERROR', 'ValidationError');
      }
      expectError(style, await put('address_pool.low_threshold.bitcoin', 5), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
    });
  });
}

describe('alert.address_pool_low', () => {
  const { app } = buildTestApp({ style: 'b' });
  let org: TestOrg;
  beforeEach(async () => {
    org = await createTestOrg('Alert org');
  });

  it('is emitted once per crossing even with many concurrent checks, and again only after recovery', async () => {
    await request(app).put('/api/v1/config/address_pool.low_threshold.evm').set('X-API-Key', org.keys.admin).send({ value: 5 }).expect(200);
    await seedPoolAddresses(org.organizationId, 'evm', 10);
    await Promise.all(Array.from({ length: 4 }, () => checkPoolLevels(testDb(), new Date())));
    expect(await alertsOf(org.organizationId)).to.have.length(0); // 10 available ≥ 5

    const held = await take(org.organizationId, 6); // 4 available < 5
    const outcomes = (await Promise.all(Array.from({ length: 8 }, () => checkPoolLevels(testDb(), new Date())))).flat();
    const mine = outcomes.filter((o) => o.organizationId === org.organizationId);
    expect(mine).to.have.length(8);
    expect(mine.filter((o) => o.eventId)).to.have.length(1);
    const first = await alertsOf(org.organizationId);
    expect(first).to.have.length(1);
    expect(first[0].data).to.deep.equal({ protocol: 'evm', available: 4, total: 10, percentage: 40, threshold: 5, thresholdType: 'count' });
    expect(first[0].id).to.match(/^evt_/);

    await take(org.organizationId, 2); // still low: no new event
    await checkPoolLevels(testDb(), new Date());
    expect(await alertsOf(org.organizationId)).to.have.length(1);

    await giveBack(held.slice(0, 4)); // 6 available: recovered
    await Promise.all(Array.from({ length: 3 }, () => checkPoolLevels(testDb(), new Date())));
    expect(await alertsOf(org.organizationId)).to.have.length(1);

    await take(org.organizationId, 3); // 3 available: low again
    await Promise.all(Array.from({ length: 3 }, () => checkPoolLevels(testDb(), new Date())));
    const second = await alertsOf(org.organizationId);
    expect(second).to.have.length(2);
    expect(second[1].data).to.deep.include({ available: 3, total: 10, percentage: 30 });
  });

  it('uses the percentage threshold, per protocol, and ignores protocols with no addresses', async () => {
    await request(app).put('/api/v1/config/address_pool.low_threshold.tron').set('X-API-Key', org.keys.admin).send({ value: '50%' }).expect(200);
    await seedPoolAddresses(org.organizationId, 'tron', 8);
    await seedPoolAddresses(org.organizationId, 'evm', 8);
    await take(org.organizationId, 5, 'tron'); // 3/8 = 37.5% < 50%
    await take(org.organizationId, 5, 'evm'); // 37.5% ≥ default 10%
    await checkPoolLevels(testDb(), new Date());
    const alerts = await alertsOf(org.organizationId);
    expect(alerts).to.have.length(1);
    expect(alerts[0].data).to.deep.equal({ protocol: 'tron', available: 3, total: 8, percentage: 37.5, threshold: 50, thresholdType: 'percentage' });
  });

  it('two worker processes running the pool-low-check queue emit it once', async function () {
    this.timeout(30_000);
    await request(app).put('/api/v1/config/address_pool.low_threshold.evm').set('X-API-Key', org.keys.admin).send({ value: 3 }).expect(200);
    await seedPoolAddresses(org.organizationId, 'evm', 5);
    await take(org.organizationId, 3); // 2 available < 3
    const config = testConfig({ WORKER_QUEUES: 'pool-low-check', POOL_LOW_CHECK_INTERVAL_MS: '3600000' });
    const running: RunningWorkers[] = [];
    try {
      running.push(await startWorkerProcess(testContext(config, new ManualClock())));
      running.push(await startWorkerProcess(testContext(config, new ManualClock())));
      expect(running.map((r) => r.workers.map((w) => w.name))).to.deep.equal([['pool-low-check'], ['pool-low-check']]);
      const conn = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
      const queues = createQueues(conn, config.redisPrefix);
      try {
        await addJobsAndWait(queues['pool-low-check'], 12);
        const alerts = await alertsOf(org.organizationId);
        expect(alerts).to.have.length(1);
        expect(alerts[0].data).to.deep.include({ protocol: 'evm', available: 2, total: 5, threshold: 3 });
      } finally {
        await closeQueues(queues);
        conn.disconnect();
      }
    } finally {
      for (const r of running) await r.close();
    }
  });
});
