import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { recomputeOrder } from '../../core/orders/order-state';
import { artifactPath, launchBrowser } from '../helpers/browser';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { orderRow, settle } from '../helpers/evm';
import { insertTestTransfer } from '../helpers/transfers';
import { createDashboardUser } from '../helpers/dashboard';

/**
 * Issue 40's dashboard in headless Chromium: "Needs attention" lists a late payment (paid on anvil
 * after its order expired, inside the late-payment window) and an undecidable one, each with why
 * in words; the merchant opens the late payment's order and attributes it by clicking, and the
 * order completes by hand. The service on a real port with a manual clock; the scan runs in the
 * test (settle). Screenshots under test/artifacts/dashboard-attention-*.png.
 */
describe('dashboard "Needs attention" in a real browser (Chromium, anvil)', function () {
  this.timeout(180_000);
  let chain: TestChain;
  let t: TestApp;
  let api: http.Server;
  let base: string;
  let browser: Browser;
  let org: TestOrg;
  let admin: { email: string; password: string };
  const late: { orderId?: string; orderReference?: string; txHash?: string } = {};
  let undecidableTx: string;

  before(async () => {
    chain = await startTestChain();
    api = http.createServer();
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    t = buildTestApp({ env: { PUBLIC_BASE_URL: base, PAGE_RATE_LIMIT_PER_MINUTE: '10000' } });
    api.on('request', t.app);
    const ctx = t.deps;
    useTestChain(ctx.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    org = await createTestOrg('Attention Browser Co');
    await seedPoolAddresses(org.organizationId, 'evm', 4);
    admin = await createDashboardUser(org.organizationId, 'admin', `attn-browser-admin-${Date.now()}@example.com`);
    const key = org.keys.admin;
    expect((await request(t.app).put('/api/v1/config/late_payment_window_minutes').set('X-API-Key', key).send({ value: 60 })).status).to.equal(200);

    // Paid after its grace, inside the late window (as test/evm/reconciliation.test.ts makes one).
    const made = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', key)
      .send({ orderReference: `late-coffee-${Date.now()}`, amount: '12.5', currency: 'USDT', chainId: LOCAL_CHAIN_ID, paymentWindowMinutes: 1, graceMinutes: 0 });
    expect(made.status, JSON.stringify(made.body)).to.equal(201);
    const order = made.body as { orderId: string; orderReference: string; address: string };
    await settle(ctx);
    t.clock.advance(2 * 60_000);
    await chain.rpc('evm_increaseTime', [120]);
    await chain.mine(1);
    await settle(ctx);
    expect(await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, order.orderId))).to.equal('expired');
    t.clock.advance(5_000);
    await settle(ctx);
    t.clock.advance(5_000);
    const paid = await chain.pay(order.address, 'USDT', 12_500_000n);
    await chain.mine(3);
    await settle(ctx);
    Object.assign(late, { orderId: order.orderId, orderReference: order.orderReference, txHash: paid.txHash });

    // An undecidable one, as the recording stores it when the address changed hands unseen.
    undecidableTx = (
      await insertTestTransfer({
        chainId: LOCAL_CHAIN_ID,
        currency: 'USDT',
        amount: 4_000_000n,
        toAddress: randomEvmAddress(),
        organizationId: org.organizationId,
        unattributedReason: 'undecidable',
        unattributedCandidates: [],
      })
    ).txHash;
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await new Promise((r) => api?.close(r));
    await chain?.stop();
  });

  it('lists a late payment and an undecidable one, then attributes the late one from its order page by clicking', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/sign-in`);
    await page.getByLabel('E-mail').fill(admin.email);
    await page.getByLabel('Password').fill(admin.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/dashboard`);

    await page.getByRole('link', { name: 'Needs attention', exact: true }).click();
    const rows = page.locator('#attention-payments tbody tr');
    expect(await rows.count()).to.equal(2);
    const lateRow = page.locator('#attention-payments tr[data-reason="paid_late"]');
    expect(await lateRow.textContent()).to.contain(late.txHash!).and.contain("arrived after its order's grace, within the late-payment window");
    const undecidableRow = page.locator('#attention-payments tr[data-reason="undecidable"]');
    expect(await undecidableRow.textContent()).to.contain(undecidableTx).and.contain('arrived while the address changed hands; the service could not tell for whom');
    await page.screenshot({ path: artifactPath('dashboard-attention-1-payments'), fullPage: true });
    await page.getByRole('link', { name: 'Orders paid late', exact: true }).click();
    expect(await page.locator(`#attention-orders tr[data-order-id="${late.orderId}"]`).count()).to.equal(1);
    await page.screenshot({ path: artifactPath('dashboard-attention-2-paid-late-orders'), fullPage: true });

    // The order the evidence names, from the late payment's row.
    await page.getByRole('link', { name: 'Unattributed payments', exact: true }).click();
    await lateRow.getByRole('link', { name: late.orderId! }).click();
    await page.waitForURL(`${base}/dashboard/orders/${late.orderId}`);
    expect(await page.textContent('main')).to.contain('Paid late').and.contain('within the late-payment window');
    await page.screenshot({ path: artifactPath('dashboard-attention-3-order-before'), fullPage: true });
    const payment = page.locator(`table.payments tr:has-text("${late.txHash}")`);
    await payment.getByLabel('Reason').fill('customer paid after expiry; confirmed by e-mail');
    await payment.getByRole('button', { name: 'Attribute to this order' }).click();
    await page.waitForLoadState();

    expect(await page.textContent('[role="status"]')).to.contain('attributed to order');
    expect(await page.textContent('[data-status]')).to.equal('completed');
    expect(await page.textContent('main')).to.contain('by hand').and.contain(admin.email).and.contain('customer paid after expiry; confirmed by e-mail');
    expect(await page.getByRole('button', { name: 'Settle by hand' }).count()).to.equal(0);
    await page.screenshot({ path: artifactPath('dashboard-attention-4-order-attributed'), fullPage: true });
    expect(await orderRow(t.deps, late.orderId!)).to.include({ status: 'completed', resolution: 'manual', amountReceived: 12_500_000n });

    // The view now holds only the undecidable one.
    await page.getByRole('link', { name: 'Needs attention', exact: true }).click();
    expect(await rows.count()).to.equal(1);
    expect(await rows.first().getAttribute('data-reason')).to.equal('undecidable');
    await context.close();
  });
});
