import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { parse } from 'csv-parse/sync';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { artifactPath, launchBrowser } from '../helpers/browser';
import { buildTestApp, createTestOrg, testConfig, testContext, testDb, type TestApp, type TestOrg } from '../helpers/harness';
import { createDashboardUser } from '../helpers/dashboard';
import { FAST_WEBHOOK_ENV, eventually, startReceiver, type Receiver } from '../helpers/webhooks';
import { tokenEnv } from '../helpers/orders';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { emitEvent } from '../../core/events/events';
import { ManualClock } from '../../core/platform/clock';
import { depositBindings, webhookDeliveries } from '../../db/schema';
import { recordDeposit } from '../../core/deposits/lifecycle';
import { ORDER_EXPORT_COLUMNS } from '../../core/exports/orders-export';
import { TRANSFER_EXPORT_COLUMNS } from '../../core/exports/transfers-export';
import { DEPOSIT_EXPORT_COLUMNS } from '../../core/exports/deposits-export';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';

/**
 * The dashboard's order paging, an order's events and deliveries, redelivering what failed, the
 * payment links page and the Spanish chrome in headless Chromium against the service on a real
 * port, with the webhook workers running. Screenshots under test/artifacts/dashboard-pages-*.png.
 */
describe('dashboard pages in a real browser (orders, deliveries, payment links, languages)', function () {
  this.timeout(120_000);
  let browser: Browser;
  let api: http.Server;
  let base: string;
  let org: TestOrg;
  let owner: { email: string; password: string };
  let viewer: { email: string; password: string };
  let workers: RunningWorkers;
  let receiver: Receiver;
  let receiverUp = false;
  let t: TestApp;
  const orderId = 'ord_bp000000000000000000000003';

  before(async () => {
    api = http.createServer();
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    t = buildTestApp({ env: { ...FAST_WEBHOOK_ENV, ...tokenEnv(), PUBLIC_BASE_URL: base, PAGE_RATE_LIMIT_PER_MINUTE: '10000' } });
    api.on('request', t.app);
    org = await createTestOrg('Browser Pages Co');
    owner = await createDashboardUser(org.organizationId, 'owner', 'owner@browser-pages.test');
    viewer = await createDashboardUser(org.organizationId, 'viewer', 'viewer@browser-pages.test');
    // 75 orders of a shop's history (one statement: what is tested is reading them).
    await testDb().execute(sql`
      insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol, address,
        pool_address_id, status, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at, created_at, updated_at)
      select 'ord_bp' || lpad(i::text, 24, '0'), ${org.organizationId}, 'bp-order-' || i, 'tokbp' || md5(i::text), 5000000, 0,
        'USDT', 'ethereum-local', 'evm', '0x' || substr(md5(i::text), 1, 40), i, 'pending', 30, 5, 3,
        now() + interval '30 minutes', now() + interval '35 minutes', now() - make_interval(secs => i), now()
      from generate_series(1, 75) as i`);
    receiver = await startReceiver(() => (receiverUp ? { status: 200, body: 'stored, thanks' } : { status: 503, body: 'maintenance window' }));
    workers = await startWorkerProcess(testContext(testConfig(FAST_WEBHOOK_ENV), new ManualClock()));
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await workers?.close();
    await receiver?.close();
    await new Promise((r) => api?.close(r));
  });

  async function signedIn(who: { email: string; password: string }, locale = 'en-US'): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/sign-in`);
    await page.getByLabel('E-mail').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/dashboard`);
    return { context, page };
  }

  it('walks the order list with Next and Previous', async () => {
    const { context, page } = await signedIn(viewer);
    await page.getByRole('link', { name: 'Orders', exact: true }).click();
    expect(await page.locator('#orders tbody tr').count()).to.equal(50);
    expect(await page.textContent('.pager')).to.contain('75 in all');
    await page.getByRole('link', { name: 'Next' }).click();
    expect(await page.locator('#orders tbody tr').count()).to.equal(25);
    expect(await page.getAttribute('#orders tbody tr:last-child', 'data-order-id')).to.equal('ord_bp000000000000000000000075');
    await page.screenshot({ path: artifactPath('dashboard-pages-1-orders-next'), fullPage: true });
    await page.getByRole('link', { name: 'Previous' }).click();
    expect(await page.getAttribute('#orders tbody tr:first-child', 'data-order-id')).to.equal('ord_bp000000000000000000000001');
    // The pool is the API's Admin resource: a Viewer has no link to it.
    expect(await page.getByRole('link', { name: 'Address pool' }).count()).to.equal(0);
    await context.close();
  });

  it("shows an order's event and each delivery attempt, and redelivers everything that failed since a time", async () => {
    const res = await request(base).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/shop`, events: ['order.completed'] });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const endpointId: string = res.body.id;
    await testDb().transaction((tx) => emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { orderId, status: 'completed' } }));
    await eventually(async () => {
      const [d] = await testDb().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId));
      return d?.status === 'failed';
    }, 20_000, 'the delivery failed');

    const { context, page } = await signedIn(owner);
    await page.goto(`${base}/dashboard/orders?q=bp-order-3`);
    await page.getByRole('link', { name: orderId }).click();
    const events = page.locator('#order-events');
    expect(await events.textContent()).to.contain('order.completed').and.contain('maintenance window').and.contain('failed');
    expect(await events.locator('.attempt').count()).to.equal(5);
    expect(await events.locator('.status-code').first().textContent()).to.equal('503');
    expect(await events.locator('.duration').first().textContent()).to.match(/^\d+ ms$/);
    await page.screenshot({ path: artifactPath('dashboard-pages-2-order-deliveries-failed'), fullPage: true });

    receiverUp = true;
    await events.getByRole('link', { name: `${receiver.url}/shop` }).click();
    await page.getByLabel('Failed since (UTC)').fill(new Date(Date.now() - 3600_000).toISOString().slice(0, 16));
    await page.getByRole('button', { name: 'Redeliver all failed' }).click();
    expect(await page.textContent('[role="status"]')).to.contain('1 failed delivery since');
    await page.screenshot({ path: artifactPath('dashboard-pages-3-redelivered'), fullPage: true });
    await eventually(async () => {
      const [d] = await testDb().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId));
      return d.status === 'succeeded';
    }, 15_000, 'the redelivery succeeded');
    await page.goto(`${base}/dashboard/orders/${orderId}`);
    expect(await page.textContent('#order-events')).to.contain('succeeded').and.contain('stored, thanks');
    expect(await page.locator('#order-events .attempt').count()).to.equal(6);
    await page.screenshot({ path: artifactPath('dashboard-pages-4-order-deliveries-succeeded'), fullPage: true });
    await context.close();
  });

  it('creates, publishes and archives a payment link; a Viewer sees it with no actions', async () => {
    const { context, page } = await signedIn(owner);
    await page.getByRole('link', { name: 'Payment links' }).click();
    await page.getByLabel('Title').fill('Gift card 50');
    await page.getByLabel('Amount (0: the payer chooses)').fill('50');
    await page.getByLabel('Units for sale (optional)').fill('3');
    await page.getByRole('button', { name: 'Create link' }).click();
    const row = page.locator('#payment-links tbody tr', { hasText: 'Gift card 50' });
    expect(await row.locator('[data-status]').textContent()).to.equal('draft');
    await row.getByRole('button', { name: 'Publish' }).click();
    expect(await row.locator('[data-status]').textContent()).to.equal('active');
    expect(await row.textContent()).to.contain('3 of 3');
    // The checkout page the link opens.
    const checkout = await context.newPage();
    await checkout.goto((await row.locator('a.mono').getAttribute('href'))!);
    expect(await checkout.textContent('body')).to.contain('Gift card 50');
    await checkout.close();
    await page.screenshot({ path: artifactPath('dashboard-pages-5-payment-link-active'), fullPage: true });
    await row.getByRole('button', { name: 'Archive' }).click();
    expect(await row.locator('[data-status]').textContent()).to.equal('archived');
    await context.close();

    const v = await signedIn(viewer);
    await v.page.getByRole('link', { name: 'Payment links' }).click();
    expect(await v.page.textContent('#payment-links')).to.contain('Gift card 50');
    expect(await v.page.locator('form[method="post"]:not([action="/dashboard/sign-out"])').count()).to.equal(0);
    await v.page.screenshot({ path: artifactPath('dashboard-pages-6-payment-links-viewer'), fullPage: true });
    await v.context.close();
  });

  it('downloads the orders, transfers and deposits lists as CSV files with their header rows (the API\'s export operation)', async () => {
    // A payment to an address nobody held, and a deposit of 18 decimals to a reference.
    await seedPoolAddresses(org.organizationId, 'evm', 1);
    const bound = await request(base).post('/api/v1/deposits/bind').set('X-API-Key', org.keys.member).send({ depositReference: 'browser-alice', protocol: 'evm' });
    expect(bound.status, JSON.stringify(bound.body)).to.equal(201);
    const [binding] = await testDb()
      .select()
      .from(depositBindings)
      .where(and(eq(depositBindings.organizationId, org.organizationId), eq(depositBindings.depositReference, 'browser-alice'), isNull(depositBindings.unboundAt)));
    await insertTestTransfer({ organizationId: org.organizationId, chainId: 'ethereum-local', currency: 'USDT', amount: 7_250_000n, toAddress: '0x' + 'ab'.repeat(20), unattributedReason: 'no_holder' });
    const deposited = await insertTestTransfer({
      organizationId: org.organizationId, chainId: 'ethereum-local', currency: 'DAI', amount: 1_000_000_000_000_000_001n, toAddress: binding.address, depositBindingId: binding.id,
    });
    await t.deps.db.transaction((tx) => recordDeposit(tx, t.deps, deposited.id));

    const { context, page } = await signedIn(viewer);
    /** Clicks the list's Export CSV link and reads the file the browser saved. */
    async function exported(list: string, header: readonly string[]): Promise<Record<string, string>[]> {
      await page.goto(`${base}/dashboard/${list}`);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export CSV' }).click()]);
      expect(download.suggestedFilename()).to.equal(`${list}.csv`);
      const text = readFileSync((await download.path())!, 'utf8');
      expect((parse(text) as string[][])[0]).to.deep.equal([...header]);
      return parse(text, { columns: true });
    }
    const orders = await exported('orders', ORDER_EXPORT_COLUMNS);
    expect(orders).to.have.length(75);
    expect(orders[0]).to.include({ orderId: 'ord_bp000000000000000000000075', amount: '5', currency: 'USDT' });
    const transfers = await exported('transfers', TRANSFER_EXPORT_COLUMNS);
    expect(transfers.map((r) => r.amount)).to.have.members(['7.25', '1.000000000000000001']);
    const deposits = await exported('deposits', DEPOSIT_EXPORT_COLUMNS);
    expect(deposits.map((r) => [r.depositReference, r.amount])).to.deep.equal([['browser-alice', '1.000000000000000001']]);
    await context.close();
  });

  it("shows the chrome in Spanish to a browser that asks for it, as the payment page does", async () => {
    const { context, page } = await signedIn(owner, 'es-ES');
    expect(await page.textContent('h1')).to.equal('Resumen');
    expect(await page.getAttribute('html', 'lang')).to.equal('es');
    await page.getByRole('link', { name: 'Pedidos' }).click();
    expect(await page.textContent('h1')).to.equal('Pedidos');
    expect(await page.getByRole('button', { name: 'Cerrar sesión' }).count()).to.equal(1);
    expect(await page.getByRole('button', { name: 'Filtrar' }).count()).to.equal(1);
    await page.screenshot({ path: artifactPath('dashboard-pages-7-spanish-chrome'), fullPage: true });
    // The language switch: English by ?lang=en, kept while navigating.
    await page.getByRole('link', { name: 'English' }).click();
    expect(await page.textContent('h1')).to.equal('Orders');
    await page.getByRole('link', { name: 'Payment links' }).click();
    expect(await page.textContent('h1')).to.equal('Payment links');
    await context.close();
  });
});
