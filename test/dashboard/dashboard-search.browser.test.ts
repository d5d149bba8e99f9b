import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { hexlify } from 'ethers';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import request from 'supertest';
import { artifactPath, launchBrowser } from '../helpers/browser';
import { buildTestApp, createTestOrg, type TestOrg } from '../helpers/harness';
import { createDashboardUser } from '../helpers/dashboard';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { listenOnFreePort } from '../helpers/page-service';
import { insertTestTransfer } from '../helpers/transfers';

/**
 * The sign-in page (its wrong-password and held answers) and the one search box of the orders and
 * transfers lists, as a merchant uses them in headless Chromium. Screenshots under
 * test/artifacts/dashboard-search-*.png.
 */
describe('dashboard sign-in and list search in a real browser', function () {
  this.timeout(120_000);
  let browser: Browser;
  let api: http.Server;
  let base: string;
  let org: TestOrg;
  let owner: { email: string; password: string };
  const txHash = hexlify(randomBytes(32));
  let order: { orderId: string; address: string };

  before(async () => {
    api = http.createServer();
    base = `http://127.0.0.1:${await listenOnFreePort(api)}`;
    const t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: base, PAGE_RATE_LIMIT_PER_MINUTE: '10000' } });
    api.on('request', t.app);
    org = await createTestOrg('Search Shop');
    owner = await createDashboardUser(org.organizationId, 'owner', 'owner@search-shop.test');
    await seedPoolAddresses(org.organizationId, 'evm', 5);
    const res = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', org.keys.member)
      .send({ orderReference: 'cart-4711', amount: '5', currency: 'USDT', chainId: CHAIN });
    order = res.body;
    await insertTestTransfer({ chainId: CHAIN, currency: 'USDT', amount: 5_000_000n, toAddress: order.address, txHash, orderId: order.orderId, organizationId: org.organizationId });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await new Promise((r) => api?.close(r));
  });

  async function signInPage(width = 1280, locale = 'en-US'): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width, height: 800 }, locale });
    const page = await context.newPage();
    await page.goto(`${base}/dashboard/sign-in`);
    return { context, page };
  }

  it('the sign-in page: empty, a wrong password, and signed in; at 390 px and in a Spanish browser', async () => {
    const narrow = await signInPage(390);
    await narrow.page.screenshot({ path: artifactPath('dashboard-search-1-sign-in-390'), fullPage: true });
    await narrow.context.close();
    const es = await signInPage(1280, 'es-ES');
    await es.page.screenshot({ path: artifactPath('dashboard-search-2-sign-in-es'), fullPage: true });
    await es.context.close();

    const { context, page } = await signInPage();
    await page.getByLabel('E-mail').fill(owner.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForSelector('text=Wrong e-mail or password');
    await page.screenshot({ path: artifactPath('dashboard-search-3-sign-in-wrong'), fullPage: true });
    // The e-mail is kept; the password is not.
    expect(await page.inputValue('#email')).to.equal(owner.email);
    expect(await page.inputValue('#password')).to.equal('');
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/dashboard`);
    await context.close();
  });

  /** A refused search stays on its list: the reason above the box, the text kept to correct, the navigation there. */
  async function expectRefusedOnList(page: Page, title: string): Promise<void> {
    expect(await page.textContent('h1')).to.equal(title);
    expect(await page.textContent('[role="alert"]')).to.match(/not a valid evm address/i);
    expect(await page.inputValue('#q')).to.equal('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD');
    expect(await page.getByRole('link', { name: 'Overview' }).count()).to.equal(1);
  }

  it('the transfers and orders lists: one search box finds by tx hash and address, and a malformed address says why on the list itself, its text kept to correct', async () => {
    const { context, page } = await signInPage();
    await page.getByLabel('E-mail').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${base}/dashboard`);

    await page.goto(`${base}/dashboard/transfers`);
    expect(await page.locator('form[role="search"] input[type="text"]').count()).to.equal(1);
    await page.screenshot({ path: artifactPath('dashboard-search-4-transfers'), fullPage: true });
    await page.getByLabel('Search').fill(txHash);
    await page.getByLabel('Search').press('Enter');
    await page.waitForURL(/q=/);
    expect(await page.textContent('main')).to.contain(txHash);
    await page.screenshot({ path: artifactPath('dashboard-search-5-transfers-by-hash'), fullPage: true });

    // EIP-55's example address with one letter's case flipped: a broken checksum.
    await page.getByLabel('Search').fill('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD');
    await page.getByLabel('Search').press('Enter');
    await page.waitForLoadState();
    await page.screenshot({ path: artifactPath('dashboard-search-6-transfers-bad-address'), fullPage: true });
    await expectRefusedOnList(page, 'Transfers');

    await page.goto(`${base}/dashboard/orders`);
    await page.getByLabel('Search').fill(order.address.toLowerCase());
    await page.getByLabel('Search').press('Enter');
    await page.waitForURL(/q=/);
    expect(await page.locator('#orders tbody tr').count()).to.equal(1);
    await page.screenshot({ path: artifactPath('dashboard-search-7-orders-by-address'), fullPage: true });
    await page.getByLabel('Search').fill('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD');
    await page.getByLabel('Search').press('Enter');
    await page.waitForLoadState();
    await page.screenshot({ path: artifactPath('dashboard-search-8-orders-bad-address'), fullPage: true });
    await expectRefusedOnList(page, 'Orders');
    await context.close();
  });
});
