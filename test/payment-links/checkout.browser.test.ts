import http from 'node:http';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { artifactPath, decodeQr, launchBrowser } from '../helpers/browser';
import { buildTestApp, createTestOrg, knownSecrets, listenForPageChanges, TEST_DATABASE_URL, TEST_REDIS_URL, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { preserveCheckpoint } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { chainEnv, listenOnFreePort, startChainWorker, startShop, stopWorker } from '../helpers/page-service';

/**
 * A payment link's checkout in headless Chromium against the running service (API on a real port,
 * a worker scanning a local anvil chain): the payer opens the checkoutUrl, picks a token, lands on
 * the order's payment page, pays with `npm run pay`, and returns to the shop. Screenshots of each
 * state under test/artifacts/ (checkout-*.png).
 */
describe('payment link checkout in a real browser (Chromium, anvil, worker process)', function () {
  this.timeout(180_000);
  preserveCheckpoint();
  let chain: TestChain;
  let worker: Spawned;
  let browser: Browser;
  let api: http.Server;
  let merchant: http.Server;
  let base: string;
  let merchantBase: string;
  let org: TestOrg;

  before(async () => {
    chain = await startTestChain();
    api = http.createServer();
    base = `http://127.0.0.1:${await listenOnFreePort(api)}`;
    const testApp = buildTestApp({ env: { PUBLIC_BASE_URL: base, PAGE_RATE_LIMIT_PER_MINUTE: '10000', CHECKOUT_ORDERS_PER_IP: '1000' } });
    await listenForPageChanges(testApp);
    useTestChain(testApp.deps.registry, chain);
    api.on('request', testApp.app);
    ({ server: merchant, base: merchantBase } = await startShop());
    org = await createTestOrg('Tee Shop');
    await seedPoolAddresses(org.organizationId, 'evm', 30);
    await resetCheckpointToHead(testApp.deps, chain);
    [browser, worker] = await Promise.all([launchBrowser(), startChainWorker(chain, 'pl')]);
  });

  after(async () => {
    await browser?.close();
    await stopWorker(worker);
    await new Promise((r) => api?.close(r));
    await new Promise((r) => merchant?.close(r));
    await chain?.stop();
  });

  async function createLink(body: Record<string, unknown>, publish = true) {
    const res = await request(base).post('/api/v1/payment-links').set('X-API-Key', org.keys.member).send(body);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    if (publish) expect((await request(base).post(`/api/v1/payment-links/${res.body.id}/publish`).set('X-API-Key', org.keys.member)).status).to.equal(200);
    return res.body as { id: string; checkoutUrl: string; slug: string };
  }
  const counters = async (id: string) => (await request(base).get(`/api/v1/payment-links/${id}`).set('X-API-Key', org.keys.viewer)).body.counters;

  async function newPage(options: { width?: number; javaScript?: boolean } = {}): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width: options.width ?? 390, height: 844 }, javaScriptEnabled: options.javaScript ?? true, locale: 'en-US' });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    return { context, page, errors };
  }

  const payToken = (url: string) => new URL(url).pathname.split('/')[2];

  async function mineUntilState(page: Page, state: string, timeoutMs = 40_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if ((await page.getAttribute('#pay', 'data-state')) === state) return;
      await chain.mine(1);
      await page.waitForTimeout(300);
    }
    throw new Error(`page did not reach ${state}: ${await page.textContent('#status')}`);
  }

  it('opens the checkoutUrl, picks one of two tokens, pays on the payment page with npm run pay, returns to the shop; the link counts one sold', async () => {
    const link = await createLink({
      title: 'Tour T-shirt',
      description: 'Black, size M',
      amount: '12.5',
      currencies: [{ currency: 'USDT', chainId: 'ethereum-local' }, { currency: 'USDC', chainId: 'ethereum-local' }],
      inventoryTotal: 3,
      successUrl: `${merchantBase}/thanks`,
    });
    knownSecrets.add(link.slug);
    const { context, page, errors } = await newPage();
    expect((await page.goto(link.checkoutUrl))?.status()).to.equal(200);
    expect(await page.textContent('#title')).to.equal('Tour T-shirt');
    expect(await page.textContent('.merchant')).to.equal('Sold by Tee Shop');
    expect(await page.textContent('#left')).to.equal('3 left');
    expect(await decodeQr(page.locator('#qr'))).to.equal(link.checkoutUrl);
    await page.screenshot({ path: artifactPath('checkout-1-choose'), fullPage: true });

    await page.getByLabel('USDC on Local EVM (anvil)').check();
    await Promise.all([page.waitForURL(/\/pay\//), page.click('#pay-button')]);
    expect(await page.getAttribute('#pay', 'data-state')).to.equal('awaiting');
    expect(await page.textContent('#amount')).to.equal('12.5 USDC');
    const address = (await page.textContent('#address'))!;
    const payUrl = page.url();
    knownSecrets.add(payToken(payUrl));
    await page.screenshot({ path: artifactPath('checkout-2-payment-page'), fullPage: true });

    // The same visitor returning to the checkout gets the same order back.
    await page.goto(link.checkoutUrl);
    expect(await page.getAttribute('#open-order-link', 'href')).to.equal(new URL(payUrl).pathname);
    await page.screenshot({ path: artifactPath('checkout-3-returning-visitor'), fullPage: true });
    await Promise.all([page.waitForURL(/\/pay\//), page.click('#pay-button')]);
    expect(page.url()).to.equal(payUrl);
    expect((await counters(link.id)).ordersCreated).to.equal(1);

    await chain.rpc('evm_setAutomine', [true]);
    const payer = spawnEntry('scripts/local-chain/pay.ts', { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, ...chainEnv(chain) }, [address, '12.5', 'USDC']);
    const payerExit = await payer.exited;
    await chain.rpc('evm_setAutomine', [false]);
    expect(payerExit, payer.stderr()).to.equal(0);
    await mineUntilState(page, 'paid');
    await page.screenshot({ path: artifactPath('checkout-4-paid'), fullPage: true });
    await Promise.all([page.waitForURL(/\/thanks/), page.click('#continue')]);
    const back = new URL(page.url());
    expect(back.searchParams.get('status')).to.equal('completed');
    expect(back.searchParams.get('currency')).to.equal('USDC');
    expect(await page.textContent('#shop')).to.equal('Back at the shop');

    const after = await counters(link.id);
    expect(after.inventory).to.deep.equal({ total: 3, reserved: 0, sold: 1, left: 2 });
    expect(after.amountCollected).to.deep.equal([{ currency: 'USDC', chainId: 'ethereum-local', amount: '12.5' }]);
    expect(errors).to.deep.equal([]);
    await context.close();
  });

  it('a payer-chosen amount without JavaScript at 320 px: below the minimum is refused with a readable message, then a valid amount proceeds', async () => {
    const link = await createLink({ title: 'Tip jar', amount: '0', minAmount: '2', maxAmount: '50', currencies: [{ currency: 'USDT', chainId: 'ethereum-local' }] });
    knownSecrets.add(link.slug);
    const { context, page } = await newPage({ width: 320, javaScript: false });
    await page.goto(link.checkoutUrl);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(320);
    await page.getByLabel('Amount to pay').fill('1');
    await page.click('#pay-button');
    expect(await page.textContent('#form-problem')).to.include('The amount must be at least 2.');
    expect(await page.getAttribute('#amount', 'aria-invalid')).to.equal('true');
    await page.screenshot({ path: artifactPath('checkout-5-amount-below-minimum'), fullPage: true });
    await page.getByLabel('Amount to pay').fill('5');
    await Promise.all([page.waitForURL(/\/pay\//), page.click('#pay-button')]);
    knownSecrets.add(payToken(page.url()));
    expect(await page.textContent('#amount')).to.equal('5 USDT');
    await context.close();
  });

  it("an archived link's page says it is no longer available (410)", async () => {
    const link = await createLink({ title: 'Old offer', amount: '3', currencies: [{ currency: 'USDT', chainId: 'ethereum-local' }] });
    knownSecrets.add(link.slug);
    await request(base).post(`/api/v1/payment-links/${link.id}/archive`).set('X-API-Key', org.keys.member).expect(200);
    const { context, page } = await newPage();
    expect((await page.goto(link.checkoutUrl))?.status()).to.equal(410);
    expect(await page.textContent('h1')).to.equal('This payment link is no longer available');
    await page.screenshot({ path: artifactPath('checkout-6-archived'), fullPage: true });
    await context.close();
  });
});

