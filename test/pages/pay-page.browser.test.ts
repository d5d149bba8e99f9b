import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { eq, sql } from 'drizzle-orm';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { orders } from '../../db/schema';
import { artifactPath, decodeQr, launchBrowser } from '../helpers/browser';
import { buildTestApp, createTestOrg, knownSecrets, listenForPageChanges, TEST_DATABASE_URL, TEST_REDIS_URL, testDb, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { preserveCheckpoint } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { chainEnv, startChainWorker, stopWorker } from '../helpers/page-service';

/**
 * The hosted payment page in headless Chromium against the running service: the API listening
 * on a real port, a worker process scanning a local anvil chain, real Postgres and Redis. The
 * payer's view of every state, with a screenshot of each under test/artifacts/.
 */
describe('payment page in a real browser (Chromium, anvil, worker process)', function () {
  this.timeout(180_000);
  preserveCheckpoint();
  let chain: TestChain;
  let worker: Spawned;
  let browser: Browser;
  let api: http.Server;
  let merchant: http.Server;
  let base: string;
  let merchantBase: string;
  const merchantVisits: URL[] = [];
  let org: TestOrg;

  before(async () => {
    chain = await startTestChain();
    api = http.createServer();
    base = `http://127.0.0.1:${await listen(api)}`;
    const testApp = buildTestApp({
      env: { PUBLIC_BASE_URL: base, EXPLORER_TX_URL_ETHEREUM_LOCAL: 'https://explorer.example/tx/{txHash}', PAGE_RATE_LIMIT_PER_MINUTE: '10000' },
    });
    const { app, deps } = testApp;
    // As the service runs: the status endpoint keeps open orders in memory until Postgres says they changed.
    await listenForPageChanges(testApp);
    useTestChain(deps.registry, chain);
    api.on('request', app);

    // The merchant's shop, where the page's buttons lead.
    merchant = http.createServer((req, res) => {
      merchantVisits.push(new URL(req.url!, merchantBase));
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>Shop</title><h1 id="shop">Back at the shop</h1>');
    });
    merchantBase = `http://127.0.0.1:${await listen(merchant)}`;

    org = await createTestOrg('Acme Coffee & Co');
    await seedPoolAddresses(org.organizationId, 'evm', 12);
    await resetCheckpointToHead(deps, chain);
    [browser, worker] = await Promise.all([launchBrowser(), startChainWorker(chain, 'pp')]);
  });

  after(async () => {
    await browser?.close();
    await stopWorker(worker);
    await new Promise((r) => api?.close(r));
    await new Promise((r) => merchant?.close(r));
    await chain?.stop();
  });

  async function createOrder(body: Record<string, unknown>) {
    const res = await request(base)
      .post('/api/v1/orders')
      .set('X-API-Key', org.ownerKey)
      .send({ currency: 'USDT', chainId: 'ethereum-local', ...body });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body.paymentUrl).to.match(new RegExp(`^${base}/pay/[A-Za-z0-9_-]{22}$`));
    knownSecrets.add(res.body.paymentUrl.split('/').at(-1)); // never in a log line: checkLogLines (helpers/harness.ts) checks each file's lines
    return res.body as { orderId: string; address: string; paymentUrl: string; amount: string };
  }

  async function openPage(url: string, options: { width?: number; javaScript?: boolean; locale?: string } = {}): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({
      viewport: { width: options.width ?? 390, height: 844 },
      javaScriptEnabled: options.javaScript ?? true,
      locale: options.locale ?? 'en-US',
    });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    const response = await page.goto(url);
    expect(response?.status()).to.equal(200);
    (page as Page & { errors?: string[] }).errors = errors;
    return { context, page };
  }

  /** Mines a block every 300 ms until the page (by itself, no reload) shows the state. */
  async function mineUntilState(page: Page, state: string, timeoutMs = 40_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await page.getAttribute('#pay', 'data-state')) === state) return;
      await chain.mine(1);
      await page.waitForTimeout(300);
    }
    throw new Error(`page did not reach ${state}; it shows ${await page.getAttribute('#pay', 'data-state')}:\n${await page.textContent('#status')}`);
  }

  it('shows the order with an EIP-681 QR code, follows the payment to confirming and paid without reload, and the success button returns to the shop', async () => {
    const order = await createOrder({ orderReference: `browser-paid-${Date.now()}`, amount: '12.5', successUrl: `${merchantBase}/thanks?cart=7` });
    const { context, page } = await openPage(order.paymentUrl);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });

    expect(await page.getAttribute('#pay', 'data-state')).to.equal('awaiting');
    expect(await page.textContent('.merchant')).to.equal('Payment to Acme Coffee & Co');
    expect(await page.textContent('#amount')).to.equal('12.5 USDT');
    expect(await page.textContent('#address')).to.equal(order.address);
    expect(await page.textContent('.warning')).to.include('Send only USDT on Local EVM (anvil)');
    expect(await page.textContent('#countdown')).to.match(/^(9|10):\d\d$/);

    const expectedUri = `ethereum:${chain.tokens.USDT}@31337/transfer?address=${order.address}&uint256=12500000`;
    expect(await decodeQr(page.locator('#qr'))).to.equal(expectedUri);
    expect(await page.getAttribute('#wallet-link', 'href')).to.equal(expectedUri);

    // Copy buttons are real buttons: reachable and usable with the keyboard.
    const copyAddress = page.getByRole('button', { name: 'Copy address' });
    await copyAddress.focus();
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => navigator.clipboard.readText())).to.equal(order.address);
    expect(await copyAddress.textContent()).to.equal('Copied');
    await page.screenshot({ path: artifactPath('1-awaiting'), fullPage: true });

    // A marker that a reload would lose: the page must update in place.
    await page.evaluate(() => ((window as unknown as { stayed: boolean }).stayed = true));
    // Paid the way a developer pays a local order: `npm run pay -- <ord_…> <amount>`. It waits for
    // its transaction to be mined, so the chain mines on its own for that moment (one block per tx).
    await chain.rpc('evm_setAutomine', [true]);
    const payer = spawnEntry('scripts/local-chain/pay.ts', { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, ...chainEnv(chain) }, [order.orderId, '12.5']);
    const payerExit = await payer.exited;
    await chain.rpc('evm_setAutomine', [false]);
    expect(payerExit, payer.stderr()).to.equal(0);
    const txHash = /tx (0x[0-9a-f]{64})/.exec(payer.stdout())?.[1];
    expect(txHash, payer.stdout()).to.be.a('string');
    await page.waitForSelector('#pay[data-state="confirming"]', { timeout: 30_000 });
    expect(await page.textContent('#status-text')).to.match(/Confirmations: [1-3] of 3/);
    await page.screenshot({ path: artifactPath('2-confirming'), fullPage: true });

    await mineUntilState(page, 'paid');
    expect(await page.evaluate(() => (window as unknown as { stayed?: boolean }).stayed)).to.equal(true);
    expect(await page.textContent('#status-heading')).to.equal('Payment received');
    expect(await page.getAttribute('#tx-link', 'href')).to.equal(`https://explorer.example/tx/${txHash}`);
    expect(await page.locator('#qr').count()).to.equal(0);
    await page.screenshot({ path: artifactPath('3-paid'), fullPage: true });

    await page.click('#continue');
    await page.waitForSelector('#shop');
    const visit = merchantVisits.at(-1)!;
    expect(visit.pathname).to.equal('/thanks');
    expect(Object.fromEntries(visit.searchParams)).to.deep.include({
      cart: '7', status: 'completed', amount: '12.5', currency: 'USDT', chainId: 'ethereum-local', txHash,
    });
    expect(visit.searchParams.get('orderReference')).to.match(/^browser-paid-/);
    expect((page as Page & { errors?: string[] }).errors).to.deep.equal([]);
    await context.close();
  });

  it('underpaid: shows what arrived and a QR code for the remainder (Spanish by Accept-Language)', async () => {
    const order = await createOrder({ orderReference: `browser-under-${Date.now()}`, amount: '10' });
    const { context, page } = await openPage(order.paymentUrl, { locale: 'es-ES' });
    expect(await page.getAttribute('html', 'lang')).to.equal('es');
    await chain.pay(order.address, 'USDT', 4_000_000n);
    await page.waitForSelector('#pay[data-state="underpaid"]', { timeout: 30_000 });
    expect(await page.textContent('#status-text')).to.equal('Hemos recibido 4 USDT. Envíe el resto: 6 USDT.');
    expect(await page.textContent('#amount')).to.equal('6 USDT');
    const remainderUri = `ethereum:${chain.tokens.USDT}@31337/transfer?address=${order.address}&uint256=6000000`;
    expect(await decodeQr(page.locator('#qr'))).to.equal(remainderUri);
    await page.screenshot({ path: artifactPath('4-underpaid-es'), fullPage: true });
    await context.close();
  });

  it('grace period: stops inviting payment (no QR), says a sent payment still counts, and keeps watching', async () => {
    const order = await createOrder({ orderReference: `browser-grace-${Date.now()}`, amount: '3', graceMinutes: 10 });
    // The payment window is over (set in the database: waiting a real minute is too slow here).
    await testDb().update(orders).set({ expiresAt: sql`now() - interval '5 seconds'` }).where(eq(orders.id, order.orderId));
    const { context, page } = await openPage(order.paymentUrl);
    expect(await page.getAttribute('#pay', 'data-state')).to.equal('grace');
    expect(await page.locator('#qr').count()).to.equal(0);
    expect(await page.locator('#address').count()).to.equal(0);
    expect(await page.textContent('#status-text')).to.include('A payment you have already sent will still be recognised');
    await page.screenshot({ path: artifactPath('5-grace'), fullPage: true });

    // A payment mined during grace counts, and the page follows it.
    await chain.pay(order.address, 'USDT', 3_000_000n);
    await page.waitForSelector('#pay[data-state="confirming"]', { timeout: 30_000 });
    await mineUntilState(page, 'paid');
    await context.close();
  });

  it('expired with a partial payment: says what was received and what to do, and the button goes to the cancelUrl', async () => {
    const order = await createOrder({ orderReference: `browser-expired-${Date.now()}`, amount: '5', cancelUrl: `${merchantBase}/cancelled` });
    const { context, page } = await openPage(order.paymentUrl);
    await chain.pay(order.address, 'USDT', 1_500_000n);
    await page.waitForSelector('#pay[data-state="underpaid"]', { timeout: 30_000 });
    await chain.mine(4);
    // Window and grace over (in the database); the worker expires it once the chain is scanned past.
    await testDb()
      .update(orders)
      .set({ expiresAt: sql`now() - interval '2 seconds'`, graceEndsAt: sql`now() - interval '1 second'` })
      .where(eq(orders.id, order.orderId));
    await mineUntilState(page, 'expired');
    expect(await page.textContent('#status-text')).to.include('We received 1.5 USDT, less than requested');
    await page.screenshot({ path: artifactPath('6-expired-partial'), fullPage: true });
    await page.click('#return');
    await page.waitForSelector('#shop');
    const visit = merchantVisits.at(-1)!;
    expect(visit.pathname).to.equal('/cancelled');
    expect(visit.searchParams.get('status')).to.equal('expired');
    expect(visit.searchParams.has('txHash')).to.equal(false);
    await context.close();
  });

  it('overpaid: paid, with the excess shown', async () => {
    const order = await createOrder({ orderReference: `browser-over-${Date.now()}`, amount: '2' });
    const { context, page } = await openPage(order.paymentUrl);
    await chain.pay(order.address, 'USDT', 2_750_000n);
    await mineUntilState(page, 'paid');
    expect(await page.textContent('#status-text')).to.include('You sent 0.75 USDT more than requested');
    await page.screenshot({ path: artifactPath('7-overpaid'), fullPage: true });
    await context.close();
  });

  it('works without JavaScript: everything readable, no copy buttons, refreshes itself to paid', async () => {
    const order = await createOrder({ orderReference: `browser-nojs-${Date.now()}`, amount: '1.25' });
    const { context, page } = await openPage(order.paymentUrl, { javaScript: false });
    expect(await page.textContent('#amount')).to.equal('1.25 USDT');
    expect(await page.textContent('#address')).to.equal(order.address);
    expect(await page.locator('button.copy:visible').count()).to.equal(0);
    expect(await decodeQr(page.locator('#qr'))).to.equal(`ethereum:${chain.tokens.USDT}@31337/transfer?address=${order.address}&uint256=1250000`);
    await page.screenshot({ path: artifactPath('8-no-javascript-awaiting'), fullPage: true });
    await chain.pay(order.address, 'USDT', 1_250_000n);
    await chain.mine(4);
    // The meta refresh (every 10 s) brings the page to paid.
    await mineUntilState(page, 'paid', 60_000);
    await page.screenshot({ path: artifactPath('9-no-javascript-paid'), fullPage: true });
    await context.close();
  });

  it('fits a 320 px wide screen without horizontal scrolling', async () => {
    const order = await createOrder({ orderReference: `browser-narrow-${Date.now()}`, amount: '1000.123456' });
    const { context, page } = await openPage(order.paymentUrl, { width: 320 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(320);
    expect(await decodeQr(page.locator('#qr'))).to.match(/uint256=1000123456$/);
    await page.screenshot({ path: artifactPath('10-320px'), fullPage: true });
    await context.close();
  });

  it('counts down by the server clock even when the device clock is two hours off', async () => {
    const order = await createOrder({ orderReference: `browser-clock-${Date.now()}`, amount: '1' });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await page.clock.setFixedTime(new Date(Date.now() + 2 * 3600_000));
    // Counts the script's writes to the countdown: the server renders it already, so only after the
    // script has written it (a few ticks) does its text show what the script computes.
    await page.addInitScript(() => {
      const w = window as unknown as { countdownWrites: number };
      w.countdownWrites = 0;
      document.addEventListener('DOMContentLoaded', () => {
        new MutationObserver((records) => {
          for (const r of records) if ((r.target as Element).id === 'countdown' || r.target.parentElement?.id === 'countdown') w.countdownWrites++;
        }).observe(document.documentElement, { subtree: true, childList: true, characterData: true });
      });
    });
    await page.goto(order.paymentUrl);
    await page.waitForFunction(() => (window as unknown as { countdownWrites: number }).countdownWrites >= 3, undefined, { timeout: 15_000 });
    expect(await page.textContent('#countdown')).to.match(/^(9|10):\d\d$/);
    expect(await page.getAttribute('#pay', 'data-state')).to.equal('awaiting');
    await context.close();
  });

  it('an unknown token is a 404 page', async () => {
    const context2 = await browser.newContext();
    const page2 = await context2.newPage();
    const response = await page2.goto(`${base}/pay/AAAAAAAAAAAAAAAAAAAAAA`);
    expect(response?.status()).to.equal(404);
    expect(await page2.textContent('h1')).to.equal('Payment not found');
    await page2.screenshot({ path: artifactPath('11-not-found'), fullPage: true });
    await context2.close();
  });
});

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}
