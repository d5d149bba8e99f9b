import http from 'node:http';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { artifactPath, launchBrowser } from '../helpers/browser';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg, TEST_REDIS_PREFIX } from '../helpers/harness';
import { tokenEnv } from '../helpers/orders';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { listenOnFreePort } from '../helpers/page-service';
import { paidOrder } from '../helpers/refunds';

/**
 * The refund claim page in headless Chromium, served on a real port: the payer opens the claim
 * link, a refused address gets its sentence, then a good one typed twice claims the refund.
 * Screenshots under test/artifacts/ (refund-claim-*.png).
 */
describe('refund claim page in a real browser (Chromium)', function () {
  this.timeout(120_000);
  let browser: Browser;
  let api: http.Server;
  let base: string;
  let t: TestApp;
  let org: TestOrg;

  before(async () => {
    api = http.createServer();
    base = `http://127.0.0.1:${await listenOnFreePort(api)}`;
    t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: base, PAGE_RATE_LIMIT_PER_MINUTE: '10000', REDIS_PREFIX: `${TEST_REDIS_PREFIX}rcb` } });
    api.on('request', t.app);
    org = await createTestOrg('Tee Shop');
    await seedPoolAddresses(org.organizationId, 'evm', 10);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await new Promise((r) => api?.close(r));
  });

  it('refuses the zero address with a clear message, then claims to the payer\'s address', async () => {
    const order = await paidOrder(t, org, '10', 12_500_000n);
    const issued = await request(base).post(`/api/v1/orders/${order.orderId}/refunds`).set('X-API-Key', org.keys.admin).send({ reason: 'paid too much' });
    expect(issued.status).to.equal(201);
    const mine = randomEvmAddress();
    const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
    try {
      await page.goto(issued.body.claimUrl);
      await page.locator('#amount').waitFor();
      expect(await page.locator('#amount').textContent()).to.equal('2.5 USDT');
      await page.screenshot({ path: artifactPath('refund-claim-open'), fullPage: true });

      const zero = '0x0000000000000000000000000000000000000000';
      await page.fill('#destination', zero);
      await page.fill('#confirmation', zero);
      await Promise.all([page.waitForLoadState('load'), page.click('#claim-button')]);
      await page.locator('#form-problem').waitFor();
      expect(await page.locator('#form-problem').textContent()).to.include('zero address');
      expect(await page.locator('#destination').getAttribute('aria-invalid')).to.equal('true');
      await page.screenshot({ path: artifactPath('refund-claim-refused'), fullPage: true });

      await page.fill('#destination', mine);
      await page.fill('#confirmation', mine.toLowerCase());
      await Promise.all([page.waitForURL(/\/refund\/[A-Za-z0-9_-]{22}\?lang=en$/), page.click('#claim-button')]);
      await page.locator('#claim-status').waitFor();
      expect(await page.locator('#claim-status').textContent()).to.include(mine);
      expect(await page.locator('#claim-form').count()).to.equal(0);
      await page.screenshot({ path: artifactPath('refund-claim-claimed'), fullPage: true });
    } finally {
      await page.close();
    }
    const after = await request(base).get(`/api/v1/refunds/${issued.body.id}`).set('X-API-Key', org.keys.viewer);
    expect(after.body).to.include({ status: 'claimed', destination: mine });
  });
});
