import { expect } from 'chai';
import request from 'supertest';
import { and, eq, isNull } from 'drizzle-orm';
import { addressAssignments, poolAddresses } from '../../db/schema';
import { AppError, isUniqueViolation } from '../../core/platform/errors';
import { ManualClock } from '../../core/platform/clock';
import { WireFormat } from '../../api/format';
import { AllocationHints, allocatePoolAddress, releasePoolAddress, releasePoolAddressFor, type Holder } from '../../core/pool/allocation';
import { newProcessMemory } from '../../core/service/process-memory';
import { createOrder } from '../../core/orders/orders';
import type { ServiceContext } from '../../core/service/context';
import { cooldownMinutesFor, releaseCooledDownAddresses } from '../../core/pool/cooldown';
import { Redis } from 'ioredis';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { closeQueues, createQueues } from '../../core/jobs/catalog';
import { addJobsAndWait } from '../helpers/run-job';
import { buildTestApp, createTestOrg, testConfig, testContext, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { CHAIN, tokenEnv } from '../helpers/orders';

const MINUTE = 60_000;

function allocate(organizationId: string, holder: Holder, now: Date, protocol: 'evm' | 'tron' | 'solana' = 'evm') {
  return testDb().transaction((tx) => allocatePoolAddress(tx, { organizationId, protocol, holder, now }));
}

async function addressRow(address: string) {
  const [row] = await testDb().select().from(poolAddresses).where(eq(poolAddresses.address, address));
  return row;
}

describe('pool allocation', () => {
  const { app, clock } = buildTestApp({ style: 'b' });
  let org: TestOrg;
  beforeEach(async () => {
    org = await createTestOrg('Allocation org');
  });
  const status = async (o: TestOrg = org) => {
    const res = await request(app).get('/api/v1/address-pool/status').set('X-API-Key', o.keys.admin);
    expect(res.status).to.equal(200);
    return res.body;
  };

  it('200 concurrent allocations against 50 addresses: exactly 50 distinct succeed, 150 get NO_AVAILABLE_ADDRESSES', async function () {
    this.timeout(60_000);
    const seeded = await seedPoolAddresses(org.organizationId, 'evm', 50);
    const now = clock.now();
    const results = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) =>
        allocate(org.organizationId, i % 2 === 0 ? { kind: 'order', orderId: `ord_c${i}` } : { kind: 'deposit', depositBindingId: `dr_c${i}` }, now),
      ),
    );
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [{ i, ...r.value }] : []));
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).to.have.length(50);
    expect(new Set(won.map((w) => w.address)).size).to.equal(50);
    expect(new Set(won.map((w) => w.address))).to.deep.equal(new Set(seeded));
    expect(lost).to.have.length(150);
    for (const l of lost) {
      expect(l.reason).to.be.instanceOf(AppError);
      expect((l.reason as AppError).code).to.equal('NO_AVAILABLE_ADDRESSES');
      expect((l.reason as AppError).status).to.equal(503);
    }
    const orders = won.filter((w) => w.i % 2 === 0).length;
    expect((await status()).evm).to.deep.equal({ total: 50, available: 0, allocated: orders, bound: 50 - orders, coolingDown: 0 });
    const open = await testDb()
      .select()
      .from(addressAssignments)
      .where(and(eq(addressAssignments.organizationId, org.organizationId), isNull(addressAssignments.endedAt)));
    expect(open).to.have.length(50);
    expect(new Set(open.map((a) => a.poolAddressId)).size).to.equal(50);
  });

  it('an allocation inside a transaction that fails afterwards is rolled back with it', async () => {
    const [only] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    const failure = new Error('the binding failed after the allocation');
    let taken = '';
    try {
      await testDb().transaction(async (tx) => {
        taken = (await allocatePoolAddress(tx, { organizationId: org.organizationId, protocol: 'evm', holder: { kind: 'deposit', depositBindingId: 'dr_rb' }, now: clock.now() })).address;
        throw failure;
      });
      expect.fail('the transaction committed');
    } catch (err) {
      expect(err).to.equal(failure);
    }
    expect(taken).to.equal(only);
    expect((await addressRow(only)).status).to.equal('available');
    const assignments = await testDb().select().from(addressAssignments).where(eq(addressAssignments.organizationId, org.organizationId));
    expect(assignments).to.deep.equal([]);
  });

  it('never takes another organization\'s or another protocol\'s address', async () => {
    const other = await createTestOrg('Allocation other');
    await seedPoolAddresses(other.organizationId, 'evm', 3);
    const [tron] = await seedPoolAddresses(org.organizationId, 'tron', 1);
    try {
      await allocate(org.organizationId, { kind: 'order', orderId: 'ord_x' }, clock.now());
      expect.fail('should have no evm address');
    } catch (err) {
      expect((err as AppError).code).to.equal('NO_AVAILABLE_ADDRESSES');
    }
    const got = await allocate(org.organizationId, { kind: 'order', orderId: 'ord_t' }, clock.now(), 'tron');
    expect(got.address).to.equal(tron);
    expect((await status(other)).evm).to.deep.include({ available: 3, allocated: 0 });
  });

  it('the database forbids an address being held twice at once', async () => {
    await seedPoolAddresses(org.organizationId, 'evm', 1);
    const a = await allocate(org.organizationId, { kind: 'order', orderId: 'ord_1' }, clock.now());
    try {
      await testDb().insert(addressAssignments).values({ poolAddressId: a.poolAddressId, organizationId: org.organizationId, kind: 'order', orderId: 'ord_2', startedAt: clock.now() });
      expect.fail('second open assignment was accepted');
    } catch (err) {
      expect(isUniqueViolation(err, 'address_assignments_one_open_uq'), String(err)).to.equal(true);
    }
  });

  it('follows the spec order: never-used by creation time, then recycled by recycled_at', async () => {
    const t0 = clock.now();
    const [a, b, c, d] = await seedPoolAddresses(org.organizationId, 'evm', 4, new Date(t0.getTime() - 10 * MINUTE));
    const first = await allocate(org.organizationId, { kind: 'order', orderId: 'ord_o1' }, t0);
    const second = await allocate(org.organizationId, { kind: 'deposit', depositBindingId: 'dr_o2' }, t0);
    expect([first.address, second.address]).to.deep.equal([a, b]);
    // Release b first, then a: recycled in that order.
    await testDb().transaction((tx) => releasePoolAddress(tx, { poolAddressId: second.poolAddressId, now: new Date(t0.getTime() + MINUTE), cooldownMinutes: 5 }));
    await testDb().transaction((tx) => releasePoolAddress(tx, { poolAddressId: first.poolAddressId, now: new Date(t0.getTime() + 2 * MINUTE), cooldownMinutes: 5 }));
    expect(await releaseCooledDownAddresses(testDb(), new Date(t0.getTime() + 10 * MINUTE))).to.be.at.least(2);
    expect((await addressRow(b)).recycledAt!.getTime()).to.equal(t0.getTime() + 6 * MINUTE);
    expect((await addressRow(a)).recycledAt!.getTime()).to.equal(t0.getTime() + 7 * MINUTE);
    const order: string[] = [];
    for (let i = 0; i < 4; i++) order.push((await allocate(org.organizationId, { kind: 'order', orderId: `ord_n${i}` }, new Date(t0.getTime() + 11 * MINUTE))).address);
    expect(order).to.deep.equal([c, d, b, a]);
  });

  it('a released address is allocatable only after the configured cooldown', async () => {
    const put = await request(app).put('/api/v1/config/address_pool.cooldown_minutes').set('X-API-Key', org.keys.admin).send({ value: 15 });
    expect(put.status).to.equal(200);
    expect(await cooldownMinutesFor(testDb(), org.organizationId, 'order')).to.equal(15);
    // The spec's one key covers unbinding too while the override is unset.
    expect(await cooldownMinutesFor(testDb(), org.organizationId, 'unbind')).to.equal(15);
    const [only] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    const t0 = clock.now();
    const held = await allocate(org.organizationId, { kind: 'order', orderId: 'ord_cd' }, t0);
    expect(await testDb().transaction((tx) => releasePoolAddressFor(tx, { poolAddressId: held.poolAddressId, organizationId: org.organizationId, reason: 'order', now: t0, minimumCooldownSeconds: 0 }))).to.equal(true);
    // Releasing again is a no-op (no open assignment).
    expect(await testDb().transaction((tx) => releasePoolAddressFor(tx, { poolAddressId: held.poolAddressId, organizationId: org.organizationId, reason: 'order', now: t0, minimumCooldownSeconds: 0 }))).to.equal(false);
    expect((await status()).evm).to.deep.equal({ total: 1, available: 0, allocated: 0, bound: 0, coolingDown: 1 });
    const row = await addressRow(only);
    expect(row.cooldownUntil!.getTime()).to.equal(t0.getTime() + 15 * MINUTE);
    const [assignment] = await testDb().select().from(addressAssignments).where(eq(addressAssignments.poolAddressId, held.poolAddressId));
    expect(assignment.endedAt!.getTime()).to.equal(t0.getTime());

    // 14 minutes 59 seconds later: still cooling down, for the job and for allocation.
    const almost = new Date(t0.getTime() + 15 * MINUTE - 1000);
    expect(await releaseCooledDownAddresses(testDb(), almost)).to.equal(0);
    try {
      await allocate(org.organizationId, { kind: 'order', orderId: 'ord_early' }, almost);
      expect.fail('allocated during cooldown');
    } catch (err) {
      expect((err as AppError).code).to.equal('NO_AVAILABLE_ADDRESSES');
    }
    expect((await status()).evm.coolingDown).to.equal(1);

    // At 15 minutes the job returns it, with recycled_at = end of cooldown.
    const done = new Date(t0.getTime() + 15 * MINUTE);
    expect(await releaseCooledDownAddresses(testDb(), done)).to.be.at.least(1);
    const back = await addressRow(only);
    expect(back.status).to.equal('available');
    expect(back.recycledAt!.getTime()).to.equal(done.getTime());
    expect(back.cooldownUntil).to.equal(null);
    expect((await status()).evm).to.deep.equal({ total: 1, available: 1, allocated: 0, bound: 0, coolingDown: 0 });
  });

  it('unbinding uses address_pool.unbind_cooldown_minutes when set (an override of cooldown_minutes); allocation returns due cooldowns itself if the job lags', async () => {
    const unset = await request(app).get('/api/v1/config/address_pool.unbind_cooldown_minutes').set('X-API-Key', org.keys.admin).expect(200);
    expect(JSON.stringify(unset.body)).to.include('"value":null');
    await request(app).put('/api/v1/config/address_pool.unbind_cooldown_minutes').set('X-API-Key', org.keys.admin).send({ value: 120 }).expect(200);
    expect(await cooldownMinutesFor(testDb(), org.organizationId, 'order')).to.not.equal(120);
    const [only] = await seedPoolAddresses(org.organizationId, 'tron', 1);
    const t0 = clock.now();
    const held = await allocate(org.organizationId, { kind: 'deposit', depositBindingId: 'dr_u' }, t0, 'tron');
    expect((await status()).tron.bound).to.equal(1);
    await testDb().transaction((tx) => releasePoolAddressFor(tx, { poolAddressId: held.poolAddressId, organizationId: org.organizationId, reason: 'unbind', now: t0, minimumCooldownSeconds: 0 }));
    expect((await addressRow(only)).cooldownUntil!.getTime()).to.equal(t0.getTime() + 120 * MINUTE);
    try {
      await allocate(org.organizationId, { kind: 'order', orderId: 'ord_u1' }, new Date(t0.getTime() + 119 * MINUTE), 'tron');
      expect.fail('allocated during unbind cooldown');
    } catch (err) {
      expect((err as AppError).code).to.equal('NO_AVAILABLE_ADDRESSES');
    }
    // No job has run; allocation after the cooldown still finds it.
    const again = await allocate(org.organizationId, { kind: 'order', orderId: 'ord_u2' }, new Date(t0.getTime() + 121 * MINUTE), 'tron');
    expect(again.address).to.equal(only);
    const row = await addressRow(only);
    expect(row.status).to.equal('allocated');
    expect(row.recycledAt!.getTime()).to.equal(t0.getTime() + 120 * MINUTE);
  });

  it('a cooldown of 0 makes the address available at once', async () => {
    await request(app).put('/api/v1/config/address_pool.cooldown_minutes').set('X-API-Key', org.keys.admin).send({ value: 0 }).expect(200);
    const [only] = await seedPoolAddresses(org.organizationId, 'solana', 1);
    const t0 = clock.now();
    const held = await allocate(org.organizationId, { kind: 'order', orderId: 'ord_z' }, t0, 'solana');
    await testDb().transaction((tx) => releasePoolAddressFor(tx, { poolAddressId: held.poolAddressId, organizationId: org.organizationId, reason: 'order', now: t0, minimumCooldownSeconds: 0 }));
    expect((await status()).solana).to.deep.equal({ total: 1, available: 1, allocated: 0, bound: 0, coolingDown: 0 });
    expect((await addressRow(only)).recycledAt!.getTime()).to.equal(t0.getTime());
  });

  it('the pool-cooldown job (BullMQ worker) returns cooled-down addresses', async function () {
    this.timeout(20_000);
    const workerClock = new ManualClock();
    const config = testConfig({ WORKER_QUEUES: 'pool-cooldown', POOL_COOLDOWN_INTERVAL_MS: '3600000' });
    const [only] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    const t0 = workerClock.now();
    const held = await allocate(org.organizationId, { kind: 'order', orderId: 'ord_w' }, t0);
    await testDb().transaction((tx) => releasePoolAddress(tx, { poolAddressId: held.poolAddressId, now: t0, cooldownMinutes: 30 }));
    let workers: RunningWorkers | null = null;
    const conn = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
    const queues = createQueues(conn, config.redisPrefix);
    try {
      workers = await startWorkerProcess(testContext(config, workerClock));
      await addJobsAndWait(queues['pool-cooldown']);
      expect((await addressRow(only)).status).to.equal('cooldown');
      workerClock.advance(30 * MINUTE);
      await addJobsAndWait(queues['pool-cooldown']);
      const back = await addressRow(only);
      expect(back.status).to.equal('available');
      expect(back.recycledAt!.getTime()).to.equal(t0.getTime() + 30 * MINUTE);
    } finally {
      await workers?.close();
      await closeQueues(queues);
      conn.disconnect();
    }
  });
});

describe('pool exhaustion on the wire', () => {
  it('maps NO_AVAILABLE_ADDRESSES to 503 (B) and InsufficientAddresses (A)', async () => {
    const org = await createTestOrg('Exhausted org');
    let error: AppError | null = null;
    try {
      await allocate(org.organizationId, { kind: 'order', orderId: 'ord_none' }, new Date());
    } catch (err) {
      error = err as AppError;
    }
    expect(error).to.be.instanceOf(AppError);
    expect(new WireFormat('b').errorBody(error!)).to.deep.include({ code: 'NO_AVAILABLE_ADDRESSES', statusCode: 503, error: 'Service Unavailable' });
    expect(new WireFormat('a').errorBody(error!)).to.deep.include({ success: false, error: 'InsufficientAddresses' });
    expect(error!.status).to.equal(503);
  });
});

describe('allocation point per service context', () => {
  it('two service contexts in one process do not share the allocation point: a point set by one is not used by the other', async () => {
    const config = testConfig(tokenEnv());
    // Hint lifetimes frozen, so each context keeps its point for the whole test however slow the machine.
    const frozenMemory = () => newProcessMemory(config, { allocationHints: new AllocationHints(() => 0) });
    const a: ServiceContext = { ...testContext(config), memory: frozenMemory() };
    const b: ServiceContext = { ...testContext(config), memory: frozenMemory() };
    const org = await createTestOrg('Two contexts org');
    const t0 = new Date('2026-01-01T00:00:00Z');
    const [first, second, third] = await seedPoolAddresses(org.organizationId, 'evm', 3, t0);
    const create = async (ctx: ServiceContext, ref: string) =>
      (await createOrder(ctx, org.organizationId, { orderReference: ref, amount: '1', currency: 'USDT', chainId: CHAIN })).address;

    expect(await create(a, 'a-1')).to.equal(first);
    // An address imported with an older creation time: at the head of the pool, before A's point.
    const [older] = await seedPoolAddresses(org.organizationId, 'evm', 1, new Date(t0.getTime() - MINUTE));
    // A allocates from its own point on (the older address waits until A's hint is dropped) ...
    expect(await create(a, 'a-2')).to.equal(second);
    // ... while B has no point: it starts at the head and takes the older address, then goes on from there.
    expect(await create(b, 'b-1')).to.equal(older);
    expect(await create(b, 'b-2')).to.equal(third);
  });
});
