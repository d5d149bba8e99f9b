import { expect } from 'chai';
import request from 'supertest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { eq } from 'drizzle-orm';
import type { Browser, Page } from 'playwright-core';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { TRON_LOCAL_CHAIN_ID, applyTronLocalState } from '../../core/chains/tron/tron-local-state';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID } from '../../core/chains/solana/solana-local-state';
import type { ServiceContext } from '../../core/service/context';
import type { ManualClock } from '../../core/platform/clock';
import { eventsFor, settle as settleChain } from '../helpers/evm';
import { chainCheckpoints, chainHeadObservations, scannedBlocks } from '../../db/schema';
import { payOnLocalChain } from '../../scripts/local-chain/payment';
import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { solanaLocalStateOf } from '../../scripts/local-chain/solana/solana-local-chain';
import { artifactPath, launchBrowser } from '../helpers/browser';
import { listenOnFreePort } from '../helpers/page-service';
import { buildTestApp, createTestOrg, TEST_REDIS_PREFIX, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf } from '../helpers/wire';

/**
 * Issue 41's acceptance on the three local chains at once (anvil, tron-local, solana-local): a USD
 * order with three routes. In headless Chromium one payer picks the Tron route, pays it with `npm
 * run pay`'s own function, and the order completes with that route in order.completed; another
 * payer picks the EVM route, switches to Solana before paying, pays there and the order completes
 * by Solana. The API answers are read in both wire formats.
 */
describe('USD orders: the payer picks the route on the payment page (three local chains, Chromium)', function () {
  this.timeout(180_000);
  let evm: TestChain;
  let tron: TronLocalNode;
  let tronDir: string;
  let solana: RunningSolanaLocal;
  let solanaClient: SolanaLocalClient;
  let server: http.Server;
  let base: string;
  let browser: Browser;
  const apps = {} as Record<'a' | 'b', TestApp>;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let org: TestOrg;
  const ROUTES = [
    { currency: 'USDT', chainId: LOCAL_CHAIN_ID },
    { currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID },
    { currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID },
  ];
  const tronDev = async (route: string, body: unknown = {}) => {
    const res = await fetch(`${tron.url}/dev/${route}`, { method: 'POST', body: JSON.stringify(body) });
    return (await res.json()) as Record<string, unknown>;
  };
  const settle = (chainId: string) => settleChain(ctx, chainId);
  /** A look at every chain between an address changing hands and a payment (attribution's evidence). */
  const tick = async () => {
    clock.advance(5_000);
    for (const chainId of [LOCAL_CHAIN_ID, TRON_LOCAL_CHAIN_ID, SOLANA_LOCAL_CHAIN_ID]) await settle(chainId);
    clock.advance(5_000);
  };
  const orderIn = async (style: 'a' | 'b', orderId: string) => dataOf(style, await request(apps[style].app).get(`/api/v1/orders/${orderId}`).set('X-API-Key', org.keys.viewer));
  const completedEvent = async (orderId: string) => (await eventsFor(ctx, 'order.completed', 'orderId', orderId)).map((e) => e.data as Record<string, any>);
  const newUsdOrder = async (reference: string) => {
    const res = await request(base).post('/api/v1/orders').set('X-API-Key', org.keys.member).send({ orderReference: `${reference}-${Date.now()}`, amount: '4.5', currency: 'USD', routes: ROUTES });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body as { orderId: string; paymentUrl: string };
  };
  const pick = async (page: Page, route: string) => {
    await Promise.all([page.waitForURL(/\/pay\/[A-Za-z0-9_-]{22}$/), page.click(`button[data-route="${route}"]`)]);
    await page.locator('#address').waitFor();
  };

  before(async () => {
    evm = await startTestChain();
    tronDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tron-usd-'));
    tron = new TronLocalNode({ stateFile: path.join(tronDir, 'state.json'), blockTimeMs: 0, solidificationLag: 2 });
    await tron.start();
    solana = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0, confirmationLag: 1, finalizationLag: 4 });
    solanaClient = new SolanaLocalClient(solana.url, solana.wallet, solana.info, { produceSlots: true });
    server = http.createServer();
    base = `http://127.0.0.1:${await listenOnFreePort(server)}`;
    apps.b = buildTestApp({ style: 'b', env: { PUBLIC_BASE_URL: base, PAGE_RATE_LIMIT_PER_MINUTE: '10000', REDIS_PREFIX: `${TEST_REDIS_PREFIX}usdroutes` } });
    apps.a = buildTestApp({ style: 'a', clock: apps.b.clock });
    server.on('request', apps.b.app);
    ctx = apps.b.deps;
    clock = apps.b.clock;
    for (const app of [apps.a, apps.b]) {
      useTestChain(app.deps.registry, evm);
      applyTronLocalState(app.deps.registry, { rpcUrl: tron.url, genesisHash: tron.genesisHash, token: tron.token, startedAt: new Date().toISOString() });
      applySolanaLocalState(app.deps.registry, solanaLocalStateOf(solana));
    }
    await resetCheckpointToHead(ctx, evm);
    for (const table of [chainCheckpoints, scannedBlocks, chainHeadObservations]) await ctx.db.delete(table).where(eq(table.chainId, SOLANA_LOCAL_CHAIN_ID));
    org = await createTestOrg('usd routes browser');
    // More than the checkout's pool reserve (CHECKOUT_POOL_RESERVE_MIN): a payer's choice leaves it free.
    for (const family of ['evm', 'tron', 'solana'] as const) await seedPoolAddresses(org.organizationId, family, 10);
    await tronDev('mine', { blocks: 3 });
    await solanaClient.dev('solanaLocal_produceSlot', { count: 3 });
    await tick();
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await new Promise((r) => server?.close(r));
    await evm?.stop();
    await tron?.stop();
    await solana?.stop();
    if (tronDir) fs.rmSync(tronDir, { recursive: true, force: true });
  });

  it('the payer picks the Tron route, pays it, and the order completes with the route in order.completed', async () => {
    const order = await newUsdOrder('usd-tron');
    const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
    try {
      await page.goto(order.paymentUrl);
      expect(await page.locator('#pay').getAttribute('data-state')).to.equal('choosing');
      expect(await page.locator('#price').textContent()).to.equal('4.5 USD');
      const offered = await page.locator('button[name=route]').evaluateAll((buttons) => buttons.map((b) => (b as HTMLButtonElement).value));
      expect(offered).to.deep.equal(ROUTES.map((r) => `${r.currency}@${r.chainId}`));
      await page.screenshot({ path: artifactPath('usd-routes-choosing'), fullPage: true });
      await pick(page, `USDT@${TRON_LOCAL_CHAIN_ID}`);
      const address = (await page.locator('#address').textContent())!;
      expect(address).to.match(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
      expect(await page.locator('#amount').textContent()).to.equal('4.5 USDT');
      expect(await page.locator('#wallet-link').getAttribute('href')).to.match(/^tron:T/);
      await page.screenshot({ path: artifactPath('usd-routes-tron-chosen'), fullPage: true });

      for (const style of ['a', 'b'] as const) {
        const seen = await orderIn(style, order.orderId);
        expect(seen).to.include({ currency: 'USD', amount: '4.5', chainId: TRON_LOCAL_CHAIN_ID, address, status: 'pending' });
        expect(seen.route).to.include({ currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID, amount: '4.5' });
      }
      await tick();
      const paid = await payOnLocalChain(ctx, order.orderId, '4.5');
      await tronDev('mine', { blocks: 3 });
      await settle(TRON_LOCAL_CHAIN_ID);
      await settle(TRON_LOCAL_CHAIN_ID);
      for (const style of ['a', 'b'] as const) {
        const done = await orderIn(style, order.orderId);
        expect(done).to.include({ status: 'completed', amountReceived: '4.5', txHash: paid.txHash });
        expect(done.route).to.include({ currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
      }
      const [event] = await completedEvent(order.orderId);
      expect(event).to.include({ currency: 'USD', amount: '4.5', amountReceived: '4.5' });
      expect(event.route).to.include({ currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID, amount: '4.5', address });
      await page.reload();
      expect(await page.locator('#pay').getAttribute('data-state')).to.equal('paid');
      await page.screenshot({ path: artifactPath('usd-routes-tron-paid'), fullPage: true });
    } finally {
      await page.close();
    }
  });

  it('another payer picks the EVM route, switches to Solana before paying, pays there and the order completes by Solana', async () => {
    const order = await newUsdOrder('usd-switch');
    const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
    try {
      await page.goto(order.paymentUrl);
      await pick(page, `USDT@${LOCAL_CHAIN_ID}`);
      const evmAddress = (await page.locator('#address').textContent())!;
      expect(evmAddress).to.match(/^0x[0-9a-fA-F]{40}$/);
      await page.click('details.switch-route summary');
      await pick(page, `USDC@${SOLANA_LOCAL_CHAIN_ID}`);
      const solanaAddress = (await page.locator('#address').textContent())!;
      expect(solanaAddress).to.not.equal(evmAddress);
      expect(await page.locator('#amount').textContent()).to.equal('4.5 USDC');
      await page.screenshot({ path: artifactPath('usd-routes-switched-to-solana'), fullPage: true });

      for (const style of ['a', 'b'] as const) {
        const seen = await orderIn(style, order.orderId);
        expect(seen).to.include({ chainId: SOLANA_LOCAL_CHAIN_ID, address: solanaAddress });
        expect(seen.chosenRoutes.map((r: { chainId: string; address: string }) => [r.chainId, r.address])).to.deep.equal([
          [LOCAL_CHAIN_ID, evmAddress],
          [SOLANA_LOCAL_CHAIN_ID, solanaAddress],
        ]);
      }
      await tick();
      await solanaClient.pay(solanaAddress, 4_500_000n, 'USDC');
      await solanaClient.dev('solanaLocal_produceSlot', { count: 4 });
      await settle(SOLANA_LOCAL_CHAIN_ID);
      await settle(SOLANA_LOCAL_CHAIN_ID);
      for (const style of ['a', 'b'] as const) {
        const done = await orderIn(style, order.orderId);
        expect(done).to.include({ status: 'completed', amountReceived: '4.5' });
        expect(done.route).to.include({ currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID });
      }
      const [event] = await completedEvent(order.orderId);
      expect(event.route).to.include({ currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID, address: solanaAddress });
      expect(event.chosenRoutes).to.have.length(2);
    } finally {
      await page.close();
    }
  });

  it('a payment link priced in USD offers the routes: its checkout shows the dollar price and the routes, and its order\'s page lets the payer pick one', async () => {
    const created = await request(base).post('/api/v1/payment-links').set('X-API-Key', org.keys.member).send({ title: 'Workshop seat', amount: '4.5', priceCurrency: 'USD', currencies: ROUTES });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const published = await request(base).post(`/api/v1/payment-links/${created.body.id}/publish`).set('X-API-Key', org.keys.member);
    expect(published.status, JSON.stringify(published.body)).to.equal(200);
    for (const style of ['a', 'b'] as const) {
      const link = dataOf(style, await request(apps[style].app).get(`/api/v1/payment-links/${created.body.id}`).set('X-API-Key', org.keys.viewer));
      expect(link).to.include({ priceCurrency: 'USD', amount: '4.5' });
    }
    const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
    try {
      await page.goto(created.body.checkoutUrl);
      expect(await page.locator('#price').textContent()).to.equal('4.5 USD');
      const text = (await page.textContent('main'))!;
      for (const name of ['Local Tron', 'Local Solana']) expect(text).to.include(name);
      await page.screenshot({ path: artifactPath('usd-routes-link-checkout'), fullPage: true });
      await Promise.all([page.waitForURL(/\/pay\/[A-Za-z0-9_-]{22}$/), page.click('#pay-button')]);
      expect(await page.locator('#pay').getAttribute('data-state')).to.equal('choosing');
      const offered = await page.locator('button[name=route]').evaluateAll((buttons) => buttons.map((b) => (b as HTMLButtonElement).value));
      expect(offered).to.deep.equal(ROUTES.map((r) => `${r.currency}@${r.chainId}`));
      await pick(page, `USDC@${SOLANA_LOCAL_CHAIN_ID}`);
      expect(await page.locator('#amount').textContent()).to.equal('4.5 USDC');
    } finally {
      await page.close();
    }
  });
});
