import http from 'node:http';
import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { artifactPath, launchBrowser } from '../helpers/browser';
import { buildTestApp, createTestOrg, knownSecrets, type TestApp } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { listenOnFreePort } from '../helpers/page-service';

/**
 * The payment page in headless Chromium while its chain's detection is degraded (issue 37,
 * core/detection/chain-health.ts): the payer reads a true "detected late" notice, in English and
 * Spanish, beside the usual way to pay, with screenshots under test/artifacts/. The chain is made
 * degraded without touching the shared checkpoints: the app's clock moves past
 * CHAIN_STALL_ALERT_SECONDS (and the never-answered grace), so whatever the stored checkpoint, it
 * is too old (chain-health.test.ts has each way a chain becomes degraded).
 */
describe('payment page in a real browser while detection is delayed', function () {
  this.timeout(120_000);
  let browser: Browser;
  let api: http.Server;
  let base: string;
  let t: TestApp;

  before(async () => {
    api = http.createServer();
    base = `http://127.0.0.1:${await listenOnFreePort(api)}`;
    t = buildTestApp({ env: { ...tokenEnv(), PUBLIC_BASE_URL: base, CHAIN_STALL_ALERT_SECONDS: '10', PAGE_RATE_LIMIT_PER_MINUTE: '10000' } });
    api.on('request', t.app);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await new Promise((r) => api?.close(r));
  });

  it('an awaiting order says detection is delayed, in English and Spanish, and still shows how to pay', async () => {
    const org = await createTestOrg('Delayed Coffee');
    await seedPoolAddresses(org.organizationId, 'evm', 3);
    const res = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', org.ownerKey)
      .send({ orderReference: `delayed-${Date.now()}`, amount: '12.5', currency: 'USDT', chainId: CHAIN, paymentWindowMinutes: 60 });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    knownSecrets.add(res.body.paymentUrl.split('/').at(-1));
    t.clock.advance(5 * 60_000);
    expect((await request(t.app).get(`${new URL(res.body.paymentUrl).pathname}/status`)).body.detectionDelayed).to.equal(true);

    for (const [locale, name, says] of [
      ['en-US', 'pay-delayed-en', 'are being detected late at the moment'],
      ['es-ES', 'pay-delayed-es', 'se están detectando con retraso'],
    ] as const) {
      const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      expect((await page.goto(res.body.paymentUrl))?.status()).to.equal(200);
      await page.waitForSelector('#detection-delayed');
      expect(await page.textContent('#detection-delayed')).to.include(says);
      expect(await page.getAttribute('#pay', 'data-state')).to.equal('awaiting');
      expect(await page.isVisible('#qr')).to.equal(true);
      // Let the page poll once: the notice stays (the status JSON says the same).
      await page.waitForTimeout(3500);
      expect(await page.isVisible('#detection-delayed')).to.equal(true);
      await page.screenshot({ path: artifactPath(name), fullPage: true });
      expect(errors).to.deep.equal([]);
      await context.close();
    }
  });
});
