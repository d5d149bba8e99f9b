import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { refunds } from '../../db/schema';
import { claimRefund } from '../../core/refunds/refunds';
import { buildTestApp, createTestOrg, testDb, type TestOrg, TEST_REDIS_PREFIX } from '../helpers/harness';
import { tokenEnv } from '../helpers/orders';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { paidOrder } from '../helpers/refunds';
import { createDashboardUser, dashboardClient } from '../helpers/dashboard';

/**
 * Refunds in the dashboard, as a browser sends the forms: the order page's "Issue refund" (Member
 * requests, Admin issues), the refunds list, the refund page's claim link, approve and cancel
 * (Admin only), all through the API's domain operations.
 */
describe('dashboard: refunds', () => {
  const t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: 'http://127.0.0.1', REDIS_PREFIX: `${TEST_REDIS_PREFIX}rdash` } });
  let org: TestOrg;
  const users = {} as Record<'admin' | 'member' | 'viewer', { email: string; password: string }>;
  const as = async (who: 'admin' | 'member' | 'viewer') => {
    const c = dashboardClient(t.app, t.deps.config.publicBaseUrl);
    expect((await c.signIn(users[who].email, users[who].password)).status).to.equal(303);
    return c;
  };
  const stored = async (id: string) => (await testDb().select().from(refunds).where(eq(refunds.id, id)))[0];

  before(async () => {
    org = await createTestOrg('Dashboard refunds');
    await seedPoolAddresses(org.organizationId, 'evm', 10);
    for (const role of ['admin', 'member', 'viewer'] as const) users[role] = await createDashboardUser(org.organizationId, role, `${role}-refunds@example.com`);
  });

  it('issues a refund from the order page, lists it, approves a claimed one and shows its payment link', async () => {
    const order = await paidOrder(t, org, '10', 12_500_000n);
    const admin = await as('admin');
    const orderPage = await admin.get(`/dashboard/orders/${order.orderId}`);
    expect(orderPage.text).to.include('Issue refund');
    expect(orderPage.text).to.include('Refunded (not cancelled or expired): 0 USDT of 12.5 received');
    const issued = await admin.post(`/dashboard/orders/${order.orderId}/refunds`, { _csrf: await admin.csrf(), amount: '', reason: 'paid too much' });
    expect(issued.status).to.equal(201);
    expect(issued.text).to.include('Refund issued');
    const claimUrl = /id="claim-url" type="text" readonly value="([^"]+)"/.exec(issued.text)?.[1];
    expect(claimUrl).to.match(/\/refund\/[A-Za-z0-9_-]{22}$/);
    const [row] = await testDb().select().from(refunds).where(eq(refunds.orderId, order.orderId));
    expect(row).to.include({ status: 'awaiting_claim', amount: 2_500_000n, requestedBy: users.admin.email });

    const list = await admin.get('/dashboard/refunds?status=awaiting_claim');
    expect(list.status).to.equal(200);
    expect(list.text).to.include(`data-refund-id="${row.id}"`);

    const destination = randomEvmAddress();
    expect((await claimRefund(t.deps, claimUrl!.split('/').pop()!, destination, destination, null)).ok).to.equal(true);
    const approved = await admin.post(`/dashboard/refunds/${row.id}/approve`, { _csrf: await admin.csrf() });
    expect(approved.status).to.equal(200);
    expect(approved.text).to.include(`ethereum:${row.tokenAddress}@31337/transfer?address=${destination}&amp;uint256=2500000`);
    expect((await stored(row.id)).approvedBy).to.equal(users.admin.email);
  });

  it('a Member requests; only an Admin approves or cancels; a refused amount is answered on the order page and changes nothing', async () => {
    const order = await paidOrder(t, org, '10', 10_000_000n);
    const member = await as('member');
    const requested = await member.post(`/dashboard/orders/${order.orderId}/refunds`, { _csrf: await member.csrf(), amount: '3', reason: 'customer asked' });
    expect(requested.status).to.equal(201);
    expect(requested.text).to.include('Refund requested');
    const [row] = await testDb().select().from(refunds).where(eq(refunds.orderId, order.orderId));
    expect(row.status).to.equal('requested');
    expect((await member.post(`/dashboard/refunds/${row.id}/cancel`, { _csrf: await member.csrf() })).status).to.equal(403);
    expect((await stored(row.id)).status).to.equal('requested');

    const tooMuch = await member.post(`/dashboard/orders/${order.orderId}/refunds`, { _csrf: await member.csrf(), amount: '8', reason: 'again' });
    expect(tooMuch.status).to.equal(303);
    const back = await member.get(tooMuch.headers.location);
    expect(back.status).to.equal(400);
    expect(back.text).to.include('more than is left to refund');

    const admin = await as('admin');
    const cancelled = await admin.post(`/dashboard/refunds/${row.id}/cancel`, { _csrf: await admin.csrf() });
    expect(cancelled.status).to.equal(200);
    expect((await stored(row.id)).status).to.equal('cancelled');
    const viewer = await as('viewer');
    expect((await viewer.get(`/dashboard/refunds/${row.id}`)).status).to.equal(200);
    expect((await viewer.post(`/dashboard/orders/${order.orderId}/refunds`, { _csrf: await viewer.csrf(), reason: 'x' })).status).to.equal(403);
  });
});
