import { expect } from 'chai';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import type { ManualClock } from '../../core/platform/clock';
import { recomputeOrder } from '../../core/orders/order-state';
import { bindDepositReference } from '../../core/deposits/bindings';
import type { RunningWorkers } from '../../workers/runtime';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { eventsFor, orderRow, settle } from '../helpers/evm';
import { startReceiver, startTestWorkers, type Receiver } from '../helpers/webhooks';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';
import { dataOf, expectError, listOf } from '../helpers/wire';

/**
 * Issue 40's acceptance through the API on anvil, in both wire formats: a payment after expiry,
 * inside the organization's late-payment window, is recorded against the order (paidLate,
 * transfer.unattributed with reason paid_late); the merchant attributes it and the expired order
 * completes by hand (resolution manual, order.completed), audit-logged with actor and reason.
 * Attributing twice is 409; across tokens refused; Member and Viewer 403; another organization's
 * ids 404. The underpayment tolerance completes within it and not outside. A hand resolution of an
 * unpaid order. A stray into an idle pool address attributed to a deposit reference.
 */
describe('reconciliation: late payments, attribute and resolve by hand, tolerances (anvil)', function () {
  this.timeout(180_000);
  let chain: TestChain;
  const apps: Record<'a' | 'b', TestApp> = {} as Record<'a' | 'b', TestApp>;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let org: TestOrg;
  let other: TestOrg;
  let receiver: Receiver;
  let workers: RunningWorkers | null = null;
  let n = 0;
  const late: { orderId?: string; transferId?: string } = {};

  const call = (style: 'a' | 'b', key: string) => {
    const app = apps[style].app;
    return {
      get: (path: string) => request(app).get(`/api/v1${path}`).set('X-API-Key', key),
      post: (path: string, body: unknown, idempotencyKey?: string) => {
        const r = request(app).post(`/api/v1${path}`).set('X-API-Key', key);
        return (idempotencyKey ? r.set('Idempotency-Key', idempotencyKey) : r).send(body as object);
      },
      put: (path: string, body: unknown) => request(app).put(`/api/v1${path}`).set('X-API-Key', key).send(body as object),
    };
  };
  const createOrder = async (o: TestOrg, amount: string, extra: Record<string, unknown> = {}) => {
    const res = await call('b', o.keys.member).post('/orders', { orderReference: `rec-${++n}-${Date.now()}`, amount, currency: 'USDT', chainId: LOCAL_CHAIN_ID, ...extra });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { orderId: string; address: string; orderReference: string };
  };
  /** The clock and the chain move past an order's grace; the scanner follows; the expiry job asks the order. */
  const passGrace = async (minutes: number) => {
    clock.advance(minutes * 60_000);
    await chain.rpc('evm_increaseTime', [minutes * 60]);
    await chain.mine(1);
    await settle(ctx);
  };
  const expire = async (orderId: string) => {
    expect(await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, orderId))).to.equal('expired');
  };

  before(async () => {
    chain = await startTestChain();
    apps.b = buildTestApp({ style: 'b' });
    apps.a = buildTestApp({ style: 'a', clock: apps.b.clock });
    ctx = apps.b.deps;
    clock = apps.b.clock;
    useTestChain(ctx.registry, chain);
    useTestChain(apps.a.deps.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    org = await createTestOrg('reconciliation');
    other = await createTestOrg('reconciliation other');
    await seedPoolAddresses(org.organizationId, 'evm', 12);
    await seedPoolAddresses(other.organizationId, 'evm', 2);
    receiver = await startReceiver();
    const endpoint = await call('b', org.keys.admin).post('/webhooks/endpoints', {
      url: `${receiver.url}/hooks`,
      events: ['transfer.unattributed', 'order.completed', 'deposit.confirmed'],
    });
    expect(endpoint.status, JSON.stringify(endpoint.body)).to.equal(201);
    const set = await call('b', org.keys.admin).put('/config/late_payment_window_minutes', { value: 60 });
    expect(set.status, JSON.stringify(set.body)).to.equal(200);
  });
  after(async () => {
    await workers?.close();
    await receiver?.close();
    await chain?.stop();
  });

  it('a payment after expiry, inside the late window, is recorded against the order: paidLate, reason paid_late, the address kept out of the pool', async () => {
    const order = await createOrder(org, '10', { paymentWindowMinutes: 1, graceMinutes: 0 });
    await settle(ctx);
    await passGrace(2);
    await expire(order.orderId);
    const expired = dataOf('a', await call('a', org.keys.viewer).get(`/orders/${order.orderId}`));
    expect(expired).to.include({ status: 'expired', resolution: null });
    expect(expired.lateWindowEndsAt).to.be.a('string');
    expect(new Date(expired.lateWindowEndsAt).getTime()).to.equal(new Date(expired.graceEndsAt).getTime() + 60 * 60_000);

    // The address is not handed out again while the window runs: every other order gets another one.
    const others = await Promise.all([1, 2, 3].map(() => createOrder(org, '1')));
    expect(others.map((o) => o.address)).to.not.include(order.address);

    clock.advance(5_000);
    await settle(ctx);
    clock.advance(5_000);
    const paid = await chain.pay(order.address, 'USDT', 10_000_000n);
    await chain.mine(3);
    await settle(ctx);

    for (const style of ['a', 'b'] as const) {
      const { items } = listOf(style, await call(style, org.keys.viewer).get(`/transfers?txHash=${paid.txHash}`), 'transfers');
      expect(items).to.have.length(1);
      expect(items[0]).to.include({ attribution: null, unattributedReason: 'paid_late', orderId: null, counted: false, credited: false, amount: '10', attributedBy: null });
      expect(items[0].candidates[0]).to.include({ kind: 'order', relation: 'previous', orderId: order.orderId });
      late.transferId = items[0].id;
    }
    late.orderId = order.orderId;
    const view = (await call('b', org.keys.viewer).get(`/orders/${order.orderId}`)).body;
    expect(view).to.include({ status: 'expired', amountReceived: '0' });
    expect(view.exceptions).to.have.members(['paidLate', 'unattributedPayments']);
    expect(view.unattributedPayments).to.have.length(1);
    expect(view.unattributedPayments[0]).to.include({ transferId: late.transferId, reason: 'paid_late', relation: 'previous', amount: '10', txHash: paid.txHash });
    // Lists carry the exceptions (not the payments) and filter by them.
    const listed = (await call('b', org.keys.viewer).get('/orders?exception=paidLate')).body.data;
    expect(listed.map((o: { orderId: string }) => o.orderId)).to.deep.equal([order.orderId]);
    expect(listed[0].unattributedPayments).to.deep.equal(view.unattributedPayments);
    expect((await call('b', org.keys.viewer).get('/orders?exception=manual')).body.data).to.deep.equal([]);
    expect((await call('b', org.keys.viewer).get('/transfers?unattributedReason=paid_late')).body.data).to.have.length(1);
    // Nothing is credited automatically.
    expect(await orderRow(ctx, order.orderId)).to.include({ status: 'expired', amountReceived: 0n });
  });

  it('Member and Viewer keys are 403; another organization\'s ids are 404; a body naming both or neither target is 400', async () => {
    for (const style of ['a', 'b'] as const) {
      for (const role of ['member', 'viewer'] as const) {
        expectError(style, await call(style, org.keys[role]).post(`/transfers/${late.transferId}/attribute`, { orderId: late.orderId, reason: 'x' }), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
        expectError(style, await call(style, org.keys[role]).post(`/orders/${late.orderId}/resolve`, { status: 'completed', reason: 'x' }), 403, 'INSUFFICIENT_PERMISSIONS', 'Forbidden');
      }
      // The other organization's admin sees neither the transfer nor the order.
      expectError(style, await call(style, other.keys.admin).post(`/transfers/${late.transferId}/attribute`, { orderId: late.orderId, reason: 'x' }), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await call(style, other.keys.admin).post(`/orders/${late.orderId}/resolve`, { status: 'completed', reason: 'x' }), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      // Its own transfer to another organization's order: 404 too, nothing changes.
      const foreign = await createOrder(other, '10');
      expectError(style, await call(style, org.keys.admin).post(`/transfers/${late.transferId}/attribute`, { orderId: foreign.orderId, reason: 'x' }), 404, 'RESOURCE_NOT_FOUND', 'NotFound');
      expectError(style, await call(style, org.keys.admin).post(`/transfers/${late.transferId}/attribute`, { orderId: late.orderId, depositReference: 'r', reason: 'x' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await call(style, org.keys.admin).post(`/transfers/${late.transferId}/attribute`, { reason: 'x' }), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await call(style, org.keys.admin).post(`/transfers/${late.transferId}/attribute`, { orderId: late.orderId }), 400, 'VALIDATION_ERROR', 'ValidationError');
    }
    expect((await call('b', org.keys.viewer).get(`/transfers/${late.transferId}`)).body).to.include({ attribution: null, attributedBy: null });
  });

  it('across tokens is refused and changes nothing', async () => {
    const usdc = await createOrder(org, '10', { currency: 'USDC' });
    for (const style of ['a', 'b'] as const) {
      const res = await call(style, org.keys.admin).post(`/transfers/${late.transferId}/attribute`, { orderId: usdc.orderId, reason: 'wrong token' });
      expectError(style, res, 400, 'VALIDATION_ERROR', 'ValidationError');
      expect(style === 'a' ? res.body.message : res.body.message).to.contain('USDC');
    }
    expect(await orderRow(ctx, usdc.orderId)).to.include({ status: 'pending', amountReceived: 0n });
  });

  it('the merchant attributes the late payment: the expired order completes by hand, webhooks transfer.unattributed then order.completed, the audit log names actor and reason; twice is 409', async () => {
    const res = await call('b', org.keys.admin).post(`/transfers/${late.transferId}/attribute`, { orderId: late.orderId, reason: 'customer paid 3 minutes late' }, 'attr-late-1');
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ attribution: 'order', orderId: late.orderId, counted: true, credited: true, attributionReason: 'customer paid 3 minutes late' });
    expect(res.body.attributedBy).to.match(/^api key /);
    // The evidence stays on record.
    expect(res.body.candidates[0]).to.include({ relation: 'previous', orderId: late.orderId });
    expect(res.body.minedBy).to.be.a('string');

    // The same key and body replay the answer; a new key is 409.
    const replay = await call('b', org.keys.admin).post(`/transfers/${late.transferId}/attribute`, { orderId: late.orderId, reason: 'customer paid 3 minutes late' }, 'attr-late-1');
    expect(replay.status).to.equal(200);
    expect(replay.headers['idempotent-replayed']).to.equal('true');
    expect(replay.body).to.deep.equal(res.body);
    for (const style of ['a', 'b'] as const) {
      expectError(style, await call(style, org.keys.admin).post(`/transfers/${late.transferId}/attribute`, { orderId: late.orderId, reason: 'again' }), 409, 'CONFLICT', 'Conflict');
    }

    const order = dataOf('a', await call('a', org.keys.viewer).get(`/orders/${late.orderId}`));
    expect(order).to.include({ status: 'completed', resolution: 'manual', resolutionReason: 'customer paid 3 minutes late', amountReceived: '10', paymentState: 'paid' });
    expect(order.resolvedBy).to.equal(res.body.attributedBy);
    expect(order.exceptions).to.have.members(['paidLate', 'manual']);
    expect(order.unattributedPayments).to.deep.equal([]);
    expectError('b', await call('b', org.keys.admin).post(`/orders/${late.orderId}/resolve`, { status: 'completed', reason: 'again' }), 409, 'CONFLICT', 'Conflict');
    expect(await eventsFor(ctx, 'order.completed', 'orderId', late.orderId!)).to.have.length(1);

    ({ workers } = await startTestWorkers());
    const [unattributed] = await receiver.waitFor(1, { path: '/hooks', timeoutMs: 30_000 });
    await receiver.waitFor(2, { path: '/hooks', timeoutMs: 30_000 });
    const bodies = receiver.on('/hooks').map((r) => JSON.parse(r.body.toString('utf8')));
    const mine = bodies.filter((b) => b.data.transferId === late.transferId || b.data.orderId === late.orderId);
    expect(mine.map((b) => b.type)).to.deep.equal(['transfer.unattributed', 'order.completed']);
    expect(JSON.parse(unattributed.body.toString('utf8')).data).to.include({ reason: 'paid_late' });
    expect(mine[1].data).to.include({ orderId: late.orderId, status: 'completed', resolution: 'manual', resolutionReason: 'customer paid 3 minutes late' });

    const owner = await createDashboardUser(org.organizationId, 'owner', `rec-owner-${Date.now()}@example.com`);
    const c = dashboardClient(apps.b.app, apps.b.deps.config.publicBaseUrl);
    await c.signIn(owner.email, owner.password);
    const audit = (await c.get('/dashboard/audit')).text;
    expect(audit).to.contain('transfer.attributed').and.contain('customer paid 3 minutes late').and.contain(res.body.attributedBy);
  });

  it('an underpayment inside the tolerance completes, marked underpaid; outside it the order waits', async () => {
    expect((await call('a', org.keys.admin).put('/config/underpayment_tolerance.amount', { value: '0.05' })).status).to.equal(200);
    expectError('b', await call('b', org.keys.admin).put('/config/underpayment_tolerance.percent', { value: '101' }), 400, 'VALIDATION_ERROR', 'ValidationError');
    const inside = await createOrder(org, '10');
    const outside = await createOrder(org, '10');
    await chain.pay(inside.address, 'USDT', 9_960_000n);
    await chain.pay(outside.address, 'USDT', 9_900_000n);
    await chain.mine(3);
    await settle(ctx);
    const a = (await call('b', org.keys.viewer).get(`/orders/${inside.orderId}`)).body;
    expect(a).to.include({ status: 'completed', resolution: 'automatic', amountReceived: '9.96', paymentState: 'partial' });
    expect(a.exceptions).to.deep.equal(['underpaid']);
    const b = (await call('b', org.keys.viewer).get(`/orders/${outside.orderId}`)).body;
    expect(b).to.include({ status: 'pending', amountReceived: '9.9' });
    expect(b.exceptions).to.deep.equal([]);
    const underpaid = (await call('b', org.keys.viewer).get('/orders?exception=underpaid')).body.data.map((o: { orderId: string }) => o.orderId);
    expect(underpaid).to.deep.equal([inside.orderId]);
    // A percentage allows more: 1% of 10 is 0.1, so the second one completes too on its next decision.
    expect((await call('b', org.keys.admin).put('/config/underpayment_tolerance.percent', { value: '1' })).status).to.equal(200);
    await chain.mine(1);
    await settle(ctx);
    expect(await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, outside.orderId))).to.equal('completed');
    await call('b', org.keys.admin).put('/config/underpayment_tolerance.amount', { value: null });
    await call('b', org.keys.admin).put('/config/underpayment_tolerance.percent', { value: null });
  });

  it('a hand resolution of an unpaid order: completed, resolution manual, order.completed; again is 409', async () => {
    const order = await createOrder(org, '25');
    const res = await call('a', org.keys.admin).post(`/orders/${order.orderId}/resolve`, { status: 'completed', reason: 'paid by bank transfer' });
    const settled = dataOf('a', res);
    expect(settled).to.include({ status: 'completed', resolution: 'manual', resolutionReason: 'paid by bank transfer', amountReceived: '0', paymentState: 'unpaid' });
    expect(settled.resolvedBy).to.match(/^api key /);
    expect(settled.exceptions).to.deep.equal(['manual']);
    const [event] = await eventsFor(ctx, 'order.completed', 'orderId', order.orderId);
    expect(event.data).to.include({ resolution: 'manual', resolutionReason: 'paid by bank transfer' });
    expectError('a', await call('a', org.keys.admin).post(`/orders/${order.orderId}/resolve`, { status: 'completed', reason: 'again' }), 409, 'CONFLICT', 'Conflict');
    expectError('b', await call('b', org.keys.admin).post(`/orders/${order.orderId}/resolve`, { status: 'expired', reason: 'x' }), 400, 'VALIDATION_ERROR', 'ValidationError');
    // The address went back to the pool's cooldown like any finished order's.
    const again = await createOrder(org, '1');
    expect(again.address).to.not.equal(order.address);
  });

  it('a stray into an idle pool address is attributed to a deposit reference: deposit recorded and confirmed', async () => {
    const solo = await createTestOrg('reconciliation deposits');
    const [, idle] = await seedPoolAddresses(solo.organizationId, 'evm', 2);
    const reference = `user-${Date.now()}`;
    const { binding } = await bindDepositReference(ctx, solo.organizationId, { depositReference: reference, protocol: 'evm' });
    expect(binding.address).to.not.equal(idle);
    await settle(ctx);
    clock.advance(5_000);
    await settle(ctx);
    const stray = await chain.pay(idle, 'USDT', 4_000_000n);
    await chain.mine(3);
    await settle(ctx);
    const [t] = (await call('b', solo.keys.viewer).get(`/transfers?txHash=${stray.txHash}`)).body.data;
    expect(t).to.include({ attribution: null, unattributedReason: 'no_holder', status: 'confirmed' });
    expectError('b', await call('b', solo.keys.admin).post(`/transfers/${t.id}/attribute`, { depositReference: 'nobody-has-this', reason: 'x' }), 404, 'DEPOSIT_REFERENCE_NOT_FOUND', 'NotFound');
    const res = dataOf('a', await call('a', solo.keys.owner).post(`/transfers/${t.id}/attribute`, { depositReference: reference, reason: 'user sent to an old address' }));
    expect(res).to.include({ attribution: 'deposit', depositReference: reference, attributionReason: 'user sent to an old address' });
    expect(res.depositId).to.match(/^dep_/);
    const deposits = (await call('b', solo.keys.viewer).get(`/deposits?depositReference=${reference}`)).body;
    const list = deposits.data ?? deposits.deposits ?? deposits;
    expect(JSON.stringify(list)).to.contain(res.depositId);
    expect(await eventsFor(ctx, 'deposit.confirmed', 'depositId', res.depositId)).to.have.length(1);
    expectError('b', await call('b', solo.keys.admin).post(`/transfers/${t.id}/attribute`, { depositReference: reference, reason: 'again' }), 409, 'CONFLICT', 'Conflict');
  });

  it('the OpenAPI document describes the actions and the exception filter', async () => {
    const doc = (await request(apps.b.app).get('/api/v1/openapi.json')).body;
    expect(doc.paths).to.have.property('/api/v1/transfers/{id}/attribute');
    expect(doc.paths).to.have.property('/api/v1/orders/{orderId}/resolve');
    const params = doc.paths['/api/v1/orders'].get.parameters.map((p: { name: string }) => p.name);
    expect(params).to.include('exception');
  });
});
