import { expect } from 'chai';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import type { ManualClock } from '../../core/platform/clock';
import { recomputeOrder } from '../../core/orders/order-state';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, settle } from '../helpers/evm';
import { insertTestTransfer } from '../helpers/transfers';
import { randomEvmAddress } from '../helpers/pool';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';

/**
 * Issue 40 in the dashboard, through HTTP as a browser sends the forms, on anvil: "Needs
 * attention" lists what was not credited with the reason in words; the order page lists a late
 * payment and attributes it to the order (the expired order completes by hand, audit-logged
 * once, by the API's own operation); Member is refused (403) and nothing changes; a second
 * attribute and bad input are answered on the page, changing nothing; an order is settled by hand.
 */
describe('dashboard: needs attention, attribute and settle by hand (anvil)', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let t: TestApp;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let org: TestOrg;
  let n = 0;
  const users = {} as Record<'admin' | 'member' | 'viewer', { email: string; password: string }>;
  const late: { orderId?: string; transferId?: string; txHash?: string } = {};
  const undecidable: { transferId?: string; txHash?: string } = {};

  const api = (key: string) => ({
    post: (path: string, body: object) => request(t.app).post(`/api/v1${path}`).set('X-API-Key', key).send(body),
    put: (path: string, body: object) => request(t.app).put(`/api/v1${path}`).set('X-API-Key', key).send(body),
  });
  const createOrder = async (amount: string, extra: Record<string, unknown> = {}) => {
    const res = await api(org.keys.member).post('/orders', { orderReference: `attn-${++n}-${Date.now()}`, amount, currency: 'USDT', chainId: LOCAL_CHAIN_ID, ...extra });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { orderId: string; address: string; orderReference: string };
  };
  const as = async (who: 'admin' | 'member' | 'viewer') => {
    const c = dashboardClient(t.app, t.deps.config.publicBaseUrl);
    const signed = await c.signIn(users[who].email, users[who].password);
    expect(signed.status).to.equal(303);
    return c;
  };

  before(async () => {
    chain = await startTestChain();
    t = buildTestApp({ style: 'b' });
    ctx = t.deps;
    clock = t.clock;
    useTestChain(ctx.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    org = await createTestOrg('Attention Co');
    await seedPoolAddresses(org.organizationId, 'evm', 8);
    for (const role of ['admin', 'member', 'viewer'] as const) users[role] = await createDashboardUser(org.organizationId, role, `attn-${role}-${Date.now()}@example.com`);
    expect((await api(org.keys.admin).put('/config/late_payment_window_minutes', { value: 60 })).status).to.equal(200);

    // An order paid after its grace, inside the late window (as test/evm/reconciliation.test.ts makes one).
    const order = await createOrder('10', { paymentWindowMinutes: 1, graceMinutes: 0 });
    await settle(ctx);
    clock.advance(2 * 60_000);
    await chain.rpc('evm_increaseTime', [120]);
    await chain.mine(1);
    await settle(ctx);
    expect(await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, order.orderId))).to.equal('expired');
    clock.advance(5_000);
    await settle(ctx);
    clock.advance(5_000);
    const paid = await chain.pay(order.address, 'USDT', 10_000_000n);
    await chain.mine(3);
    await settle(ctx);
    const [row] = (await request(t.app).get(`/api/v1/transfers?txHash=${paid.txHash}`).set('X-API-Key', org.keys.viewer)).body.data;
    expect(row).to.include({ unattributedReason: 'paid_late', orderId: null });
    Object.assign(late, { orderId: order.orderId, transferId: row.id, txHash: paid.txHash });

    // An undecidable one naming a pending order as possible (the evidence as the recording keeps it).
    const named = await createOrder('3');
    const u = await insertTestTransfer({
      chainId: LOCAL_CHAIN_ID,
      currency: 'USDT',
      amount: 3_000_000n,
      toAddress: randomEvmAddress(),
      organizationId: org.organizationId,
      unattributedReason: 'undecidable',
      unattributedCandidates: [
        { kind: 'order', relation: 'possible', assignmentId: 1, orderId: named.orderId, depositBindingId: null, depositReference: null, heldFrom: new Date().toISOString(), heldUntil: null },
      ],
    });
    Object.assign(undecidable, { transferId: u.id, txHash: u.txHash });
  });
  after(async () => {
    await chain?.stop();
  });

  it('"Needs attention" lists the late and the undecidable payment with their reasons in words, and the orders by exception', async () => {
    const c = await as('viewer');
    const view = await c.get('/dashboard/attention');
    expect(view.status).to.equal(200);
    expect(view.text).to.contain('href="/dashboard/attention"').and.contain('Needs attention');
    expect(view.text).to.contain(late.txHash).and.contain(undecidable.txHash);
    expect(view.text).to.contain("arrived after its order&#39;s grace, within the late-payment window");
    expect(view.text).to.contain('arrived while the address changed hands; the service could not tell for whom');
    expect(view.text).to.contain(`/dashboard/orders/${late.orderId}`);
    const paidLate = await c.get('/dashboard/attention?show=paidLate');
    expect(paidLate.text).to.contain(`data-order-id="${late.orderId}"`).and.contain('paid late');
    expect((await c.get('/dashboard/attention?show=manual')).text).to.not.contain(`data-order-id="${late.orderId}"`);
    // The inbox says why each one was not credited: undecidable is not "no order or deposit held the address".
    const inbox = await c.get('/dashboard/transfers?view=unattributed');
    const undecidableRow = new RegExp(`data-transfer-id="${undecidable.transferId}"[\\s\\S]*?</tr>`).exec(inbox.text)![0];
    expect(undecidableRow).to.contain('could not tell for whom').and.not.contain('no order or deposit held the address');
  });

  it('the order page lists the late payment with its reason and its exceptions; a Viewer sees no forms', async () => {
    const viewerPage = (await (await as('viewer')).get(`/dashboard/orders/${late.orderId}`)).text;
    expect(viewerPage).to.contain(`data-transfer-id="${late.transferId}"`).and.contain('within the late-payment window');
    expect(viewerPage).to.contain('Paid late').and.contain('Payments to decide');
    expect(viewerPage).to.not.contain('Attribute to this order').and.not.contain('Settle by hand');
    const adminPage = (await (await as('admin')).get(`/dashboard/orders/${late.orderId}`)).text;
    expect(adminPage).to.contain(`action="/dashboard/transfers/${late.transferId}/attribute"`).and.contain(`value="order:${late.orderId}"`);
    expect(adminPage).to.contain(`action="/dashboard/orders/${late.orderId}/resolve"`);
  });

  it('a Member\'s attribute and settle are 403 and change nothing', async () => {
    const c = await as('member');
    const csrf = await c.csrf();
    const attribute = await c.post(`/dashboard/transfers/${late.transferId}/attribute`, { _csrf: csrf, target: `order:${late.orderId}`, returnTo: 'order', reason: 'member tries' });
    expect(attribute.status).to.equal(403);
    const resolve = await c.post(`/dashboard/orders/${late.orderId}/resolve`, { _csrf: csrf, status: 'completed', reason: 'member tries' });
    expect(resolve.status).to.equal(403);
    expect(await orderRow(ctx, late.orderId!)).to.include({ status: 'expired', amountReceived: 0n, resolution: null });
    // Not even the form is shown to a Member.
    expect((await c.get(`/dashboard/transfers/${late.transferId}`)).text).to.not.contain('name="reason"');
  });

  it('bad input is answered on the page and changes nothing: no reason, another token', async () => {
    const c = await as('admin');
    const csrf = await c.csrf();
    const noReason = await c.post(`/dashboard/transfers/${late.transferId}/attribute`, { _csrf: csrf, target: `order:${late.orderId}`, returnTo: 'order', reason: '  ' });
    expect(noReason.status).to.equal(400);
    expect(noReason.text).to.contain('role="alert"').and.contain('reason must say why');
    const usdc = await createOrder('10', { currency: 'USDC' });
    const wrong = await c.post(`/dashboard/transfers/${late.transferId}/attribute`, { _csrf: csrf, target: 'other', orderId: usdc.orderId, depositReference: '', reason: 'wrong token' });
    expect(wrong.status).to.equal(400);
    expect(wrong.text).to.contain('role="alert"').and.contain('USDC');
    const none = await c.post(`/dashboard/transfers/${late.transferId}/attribute`, { _csrf: csrf, target: 'other', orderId: 'ord_nosuchorder', depositReference: '', reason: 'typo' });
    expect(none.status).to.equal(404);
    expect(await orderRow(ctx, late.orderId!)).to.include({ status: 'expired', amountReceived: 0n });
    expect(await orderRow(ctx, usdc.orderId)).to.include({ status: 'pending', amountReceived: 0n });
  });

  it('attributing from the order page completes the expired order by hand, audit-logged once; a second attribute shows the 409 and changes nothing', async () => {
    const c = await as('admin');
    const csrf = await c.csrf();
    const res = await c.post(`/dashboard/transfers/${late.transferId}/attribute`, { _csrf: csrf, target: `order:${late.orderId}`, returnTo: 'order', reason: 'customer paid late, confirmed by e-mail' });
    expect(res.status).to.equal(200);
    expect(res.text).to.contain('role="status"').and.contain('attributed to order');
    // Back on the order page: completed by hand, who and why.
    expect(res.text).to.contain('data-status="completed"').and.contain(users.admin.email).and.contain('customer paid late, confirmed by e-mail');
    expect(res.text).to.not.contain('Settle by hand');
    expect(await orderRow(ctx, late.orderId!)).to.include({ status: 'completed', amountReceived: 10_000_000n, resolution: 'manual', resolvedBy: users.admin.email });

    const again = await c.post(`/dashboard/transfers/${late.transferId}/attribute`, { _csrf: csrf, target: `order:${late.orderId}`, returnTo: 'order', reason: 'again' });
    expect(again.status).to.equal(409);
    expect(again.text).to.contain('role="alert"').and.contain('already attributed by hand');
    expect(await orderRow(ctx, late.orderId!)).to.include({ resolutionReason: 'customer paid late, confirmed by e-mail' });

    const owner = await createDashboardUser(org.organizationId, 'owner', `attn-owner-${Date.now()}@example.com`);
    const o = dashboardClient(t.app, t.deps.config.publicBaseUrl);
    await o.signIn(owner.email, owner.password);
    const audit = (await o.get('/dashboard/audit')).text;
    expect(audit.split('transfer.attributed').length - 1).to.equal(1);
    expect(audit).to.contain('customer paid late, confirmed by e-mail');
  });

  it('the transfer page pre-selects the evidence\'s candidate', async () => {
    const page = (await (await as('admin')).get(`/dashboard/transfers/${undecidable.transferId}`)).text;
    expect(page).to.contain('could not tell for whom');
    expect(page).to.match(/<input type="radio" name="target" value="order:ord_[^"]+" checked>/);
  });

  it('settles an unpaid order by hand; settling again shows the 409', async () => {
    const order = await createOrder('25');
    const c = await as('admin');
    const csrf = await c.csrf();
    const empty = await c.post(`/dashboard/orders/${order.orderId}/resolve`, { _csrf: csrf, status: 'completed', reason: '' });
    expect(empty.status).to.equal(400);
    expect(await orderRow(ctx, order.orderId)).to.include({ status: 'pending', resolution: null });
    const res = await c.post(`/dashboard/orders/${order.orderId}/resolve`, { _csrf: csrf, status: 'completed', reason: 'paid by bank transfer' });
    expect(res.status).to.equal(200);
    expect(res.text).to.contain('settled by hand').and.contain('paid by bank transfer').and.contain('data-status="completed"');
    expect(await orderRow(ctx, order.orderId)).to.include({ status: 'completed', resolution: 'manual', resolvedBy: users.admin.email, resolutionReason: 'paid by bank transfer' });
    const again = await c.post(`/dashboard/orders/${order.orderId}/resolve`, { _csrf: csrf, status: 'completed', reason: 'again' });
    expect(again.status).to.equal(409);
    expect(again.text).to.contain('role="alert"').and.contain('already completed by hand');
  });
});
