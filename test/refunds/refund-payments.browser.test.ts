import { expect } from 'chai';
import request from 'supertest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { and, eq, sql } from 'drizzle-orm';
import { generateKeyPairSigner } from '@solana/kit';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { TRON_LOCAL_CHAIN_ID, applyTronLocalState } from '../../core/chains/tron/tron-local-state';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID } from '../../core/chains/solana/solana-local-state';
import type { ServiceContext } from '../../core/service/context';
import type { ManualClock } from '../../core/platform/clock';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { createOrder } from '../../core/orders/orders';
import { chainCheckpoints, chainHeadObservations, events, orders, refunds, scannedBlocks, transfers } from '../../db/schema';
import { payOnLocalChain } from '../../scripts/local-chain/payment';
import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { solanaLocalStateOf } from '../../scripts/local-chain/solana/solana-local-chain';
import http from 'node:http';
import type { Browser } from 'playwright-core';
import { artifactPath, launchBrowser } from '../helpers/browser';
import { listenOnFreePort } from '../helpers/page-service';
import { buildTestApp, createTestOrg, TEST_REDIS_PREFIX, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { randomEvmAddress, randomTronAddress, seedPoolAddresses } from '../helpers/pool';
import { startReceiver, startTestWorkers, type Receiver } from '../helpers/webhooks';
import { dataOf, listOf } from '../helpers/wire';

/**
 * Issue 42's second slice on the three local chains: Stablegate watches an approved refund's
 * destination and completes the refund with the merchant's payment (a transfer of its token,
 * mined after the approval, confirmed), with refund.completed. A payment made before the approval
 * or to another address does not complete it, and a refund payment is never read as an incoming
 * payment (the order's amountReceived stays, the inbox does not list it).
 */

const refundRow = async (ctx: ServiceContext, id: string) => (await ctx.db.select().from(refunds).where(eq(refunds.id, id)))[0];
const refundPayments = (ctx: ServiceContext, id: string) => ctx.db.select().from(transfers).where(eq(transfers.refundId, id));
const refundEvents = (ctx: ServiceContext, type: string, id: string) => ctx.db.select().from(events).where(and(eq(events.type, type), sql`${events.data}->>'id' = ${id}`));

/** A test app served on a real port (the claim page is opened in Chromium), with the browser. */
interface Served {
  t: TestApp;
  base: string;
  server: http.Server;
  browser: Browser;
}
/** Each served app its own Redis keys: the claim page's per-IP budget of 127.0.0.1 is not shared with the run's other files. */
let servedApps = 0;
async function serve(options: { style?: 'a' | 'b'; env?: Record<string, string> } = {}): Promise<Served> {
  const server = http.createServer();
  const base = `http://127.0.0.1:${await listenOnFreePort(server)}`;
  const t = buildTestApp({ style: options.style ?? 'b', env: { PUBLIC_BASE_URL: base, PAGE_RATE_LIMIT_PER_MINUTE: '10000', REDIS_PREFIX: `${TEST_REDIS_PREFIX}rpay${++servedApps}`, ...(options.env ?? {}) } });
  server.on('request', t.app);
  return { t, base, server, browser: await launchBrowser() };
}
async function unserve(s: Served | undefined): Promise<void> {
  await s?.browser.close();
  await new Promise((r) => s?.server.close(r));
}

/**
 * The payer's side: the merchant issues a refund of `orderId` through the API (its default amount:
 * the overpaid part), and the payer opens its claim link in Chromium and gives `destination`
 * twice (screenshot `refund-<family>-claimed`). Returns the refund as the API shows it.
 */
async function claimedInBrowser(s: Served, org: TestOrg, orderId: string, destination: string, family: string) {
  const issued = await request(s.base).post(`/api/v1/orders/${orderId}/refunds`).set('X-API-Key', org.keys.admin).send({ reason: 'paid too much' });
  expect(issued.status, JSON.stringify(issued.body)).to.equal(201);
  const page = await s.browser.newPage({ viewport: { width: 390, height: 900 } });
  try {
    await page.goto(issued.body.claimUrl);
    await page.fill('#destination', destination);
    await page.fill('#confirmation', destination);
    await Promise.all([page.waitForURL(/\/refund\/[A-Za-z0-9_-]{22}\?lang=en$/), page.click('#claim-button')]);
    await page.locator('#claim-status').waitFor();
    expect(await page.locator('#claim-status').textContent()).to.include(destination);
    await page.screenshot({ path: artifactPath(`refund-${family}-claimed`), fullPage: true });
  } finally {
    await page.close();
  }
  const refund = (await request(s.base).get(`/api/v1/refunds/${issued.body.id}`).set('X-API-Key', org.keys.viewer)).body;
  expect(refund).to.include({ status: 'claimed', destination });
  return refund as { id: string; amount: string };
}
const approve = async (s: Served, org: TestOrg, refundId: string) => {
  const res = await request(s.base).post(`/api/v1/refunds/${refundId}/approve`).set('X-API-Key', org.keys.admin);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  expect(res.body.paymentUri).to.be.a('string');
};

describe('refund payments on the local EVM chain (anvil): watched destination, completed by the merchant\'s payment', function () {
  this.timeout(120_000);
  let chain: TestChain;
  const apps: Record<'a' | 'b', TestApp> = {} as Record<'a' | 'b', TestApp>;
  let served: Served;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let org: TestOrg;
  let receiver: Receiver;
  const settle = async () => {
    const scan = await runChainScan(ctx, LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  };
  const tick = async () => {
    clock.advance(5_000);
    await settle();
    clock.advance(5_000);
  };

  before(async () => {
    chain = await startTestChain();
    served = await serve();
    apps.b = served.t;
    apps.a = buildTestApp({ style: 'a', clock: apps.b.clock });
    ctx = apps.b.deps;
    clock = apps.b.clock;
    useTestChain(ctx.registry, chain);
    useTestChain(apps.a.deps.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    org = await createTestOrg('refund payments evm');
    await seedPoolAddresses(org.organizationId, 'evm', 3);
    receiver = await startReceiver();
    const endpoint = await request(apps.b.app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/refunds`, events: ['refund.completed'] });
    expect(endpoint.status).to.equal(201);
  });
  after(async () => {
    await receiver?.close();
    await unserve(served);
    await chain?.stop();
  });

  it('an overpaid order refunded its excess: a payment before approval and one to another address do not complete it; the merchant\'s payment after approval does, with its tx hash and refund.completed', async () => {
    const order = await createOrder(ctx, org.organizationId, { orderReference: `rp-evm-${Date.now()}`, amount: '10', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    await chain.pay(order.address, 'USDT', 12_500_000n);
    await chain.mine(3);
    await settle();
    const paidOrder = (await ctx.db.select().from(orders).where(eq(orders.id, order.id)))[0];
    expect(paidOrder).to.include({ status: 'completed', amountReceived: 12_500_000n });

    const destination = randomEvmAddress();
    const refund = await claimedInBrowser(served, org, order.id, destination, 'evm');
    expect(refund.amount).to.equal('2.5');

    // Paid before the approval (the merchant jumped the gun): recorded once watched, never counted.
    await tick();
    const early = await chain.pay(destination, 'USDT', 1_000_000n);
    clock.advance(5_000);
    await approve(served, org, refund.id);
    await tick();
    // To another address: not the refund's payment at all.
    await chain.pay(randomEvmAddress(), 'USDT', 2_500_000n);
    // The wrong token to the destination: recorded, not counted.
    await chain.pay(destination, 'USDC', 2_500_000n);
    await chain.mine(3);
    await tick();
    await settle();
    let rows = await refundPayments(ctx, refund.id);
    expect(rows.map((r) => [r.txHash === early.txHash, r.currency, r.counted])).to.have.deep.members([
      [true, 'USDT', false],
      [false, 'USDC', false],
    ]);
    expect(await refundRow(ctx, refund.id)).to.include({ status: 'approved', amountPaid: 0n, txHash: null });

    // The merchant pays it from the development payer wallet, as `npm run pay <destination> 2.5`
    // does (its own function; the test chain mines when asked, so a block is mined while it waits).
    const paying = payOnLocalChain(ctx, destination, '2.5');
    const mining = setInterval(() => void chain.mine(1).catch(() => undefined), 250);
    const paid = await paying.finally(() => clearInterval(mining));
    await settle();
    expect(await refundRow(ctx, refund.id)).to.include({ status: 'approved', amountPaid: 2_500_000n });
    await chain.mine(3);
    await settle();
    const done = await refundRow(ctx, refund.id);
    expect(done).to.include({ status: 'completed', amountPaid: 2_500_000n, txHash: paid.txHash });
    expect(done.completedAt).to.be.instanceOf(Date);
    expect(await refundEvents(ctx, 'refund.completed', refund.id)).to.have.length(1);

    for (const style of ['a', 'b'] as const) {
      const view = dataOf(style, await request(apps[style].app).get(`/api/v1/refunds/${refund.id}`).set('X-API-Key', org.keys.viewer));
      expect(view).to.include({ status: 'completed', amountPaid: '2.5', txHash: paid.txHash, destination });
      const { items } = listOf(style, await request(apps[style].app).get(`/api/v1/transfers?txHash=${paid.txHash}`).set('X-API-Key', org.keys.viewer), 'transfers');
      expect(items[0]).to.include({ attribution: 'refund', refundId: refund.id, orderId: null, counted: true, unattributedReason: null });
      // Never read as an incoming payment: not in the inbox of unattributed payments.
      const inbox = listOf(style, await request(apps[style].app).get('/api/v1/transfers?attributed=false').set('X-API-Key', org.keys.viewer), 'transfers').items;
      expect(inbox.map((t: { refundId: string | null }) => t.refundId)).to.not.include(refund.id);
    }
    expect((await ctx.db.select().from(orders).where(eq(orders.id, order.id)))[0]).to.include({ status: 'completed', amountReceived: 12_500_000n });

    const { workers } = await startTestWorkers();
    try {
      const [req] = await receiver.waitFor(1, { path: '/refunds', timeoutMs: 30_000 });
      const body = JSON.parse(req.body.toString('utf8'));
      expect(body).to.include({ type: 'refund.completed' });
      expect(body.data).to.include({ id: refund.id, status: 'completed', txHash: paid.txHash, destination, orderId: order.id, amount: '2.5' });
    } finally {
      await workers.close();
    }
  });
});

describe('refund payments on tron-local', function () {
  this.timeout(90_000);
  let node: TronLocalNode;
  let dir: string;
  let served: Served;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let org: TestOrg;
  const dev = async (route: string, body: unknown = {}) => {
    const res = await fetch(`${node.url}/dev/${route}`, { method: 'POST', body: JSON.stringify(body) });
    return (await res.json()) as Record<string, unknown>;
  };
  const settle = async () => {
    const scan = await runChainScan(ctx, TRON_LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, TRON_LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tron-refund-'));
    node = new TronLocalNode({ stateFile: path.join(dir, 'state.json'), blockTimeMs: 0, solidificationLag: 2 });
    await node.start();
    served = await serve();
    ctx = served.t.deps;
    clock = served.t.clock;
    applyTronLocalState(ctx.registry, { rpcUrl: node.url, genesisHash: node.genesisHash, token: node.token, startedAt: new Date().toISOString() });
    org = await createTestOrg('refund payments tron');
    await seedPoolAddresses(org.organizationId, 'tron', 3);
    await dev('mine', { blocks: 3 });
    await settle();
  });
  after(async () => {
    await unserve(served);
    await node?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a refund paid to its claimed T-address after approval completes at solidification; one paid before approval or to another address does not', async () => {
    const order = await createOrder(ctx, org.organizationId, { orderReference: `rp-tron-${Date.now()}`, amount: '5', currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
    await dev('transfer', { to: order.address, amount: '7000000' });
    await dev('mine', { blocks: 3 });
    await settle();
    await settle();
    expect((await ctx.db.select().from(orders).where(eq(orders.id, order.id)))[0].status).to.equal('completed');
    const destination = randomTronAddress();
    const refund = await claimedInBrowser(served, org, order.id, destination, 'tron');
    expect(refund.amount).to.equal('2');
    clock.advance(5_000);
    await settle();
    clock.advance(5_000);
    await dev('transfer', { to: destination, amount: '2000000' }); // before the approval
    await dev('transfer', { to: randomTronAddress(), amount: '2000000' }); // to another address
    clock.advance(5_000);
    await approve(served, org, refund.id);
    clock.advance(5_000);
    await settle();
    clock.advance(5_000);
    expect(await refundRow(ctx, refund.id)).to.include({ status: 'approved', amountPaid: 0n });
    const paid = await payOnLocalChain(ctx, destination, '2');
    await dev('mine', { blocks: 3 });
    await settle();
    await settle();
    expect(await refundRow(ctx, refund.id)).to.include({ status: 'completed', amountPaid: 2_000_000n, txHash: paid.txHash });
    expect(await refundEvents(ctx, 'refund.completed', refund.id)).to.have.length(1);
    expect((await refundPayments(ctx, refund.id)).map((r) => r.counted).sort()).to.deep.equal([false, true]);
  });
});

for (const mode of ['blocks', 'addresses'] as const) {
  describe(`refund payments on solana-local (${mode} mode)`, function () {
    this.timeout(90_000);
    let chain: RunningSolanaLocal;
    let client: SolanaLocalClient;
    let served: Served;
    let ctx: ServiceContext;
    let clock: ManualClock;
    let org: TestOrg;
    const produce = (count: number) => client.dev('solanaLocal_produceSlot', { count });
    const settle = async () => {
      const scan = await runChainScan(ctx, SOLANA_LOCAL_CHAIN_ID);
      if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
      const conf = await runChainConfirmations(ctx, SOLANA_LOCAL_CHAIN_ID);
      if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
    };
    const finalize = async () => {
      await produce(4);
      await settle();
      await settle();
    };

    before(async () => {
      chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0, confirmationLag: 1, finalizationLag: 4 });
      client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
      served = await serve({ env: { SOLANA_SCAN_MODE_SOLANA_LOCAL: mode } });
      ctx = served.t.deps;
      applySolanaLocalState(ctx.registry, solanaLocalStateOf(chain));
      clock = served.t.clock;
      await ctx.db.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
      await ctx.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
      await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, SOLANA_LOCAL_CHAIN_ID));
      org = await createTestOrg(`refund payments solana ${mode}`);
      await seedPoolAddresses(org.organizationId, 'solana', 3);
      await produce(3);
      await settle();
    });
    after(async () => {
      await unserve(served);
      await chain?.stop();
    });

    it('a refund paid to its claimed owner after approval completes once finalized, with its signature; one paid before approval or to another owner does not', async () => {
      const order = await createOrder(ctx, org.organizationId, { orderReference: `rp-sol-${mode}-${Date.now()}`, amount: '3', currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID });
      await client.pay(order.address, 4_000_000n, 'USDC');
      await finalize();
      expect((await ctx.db.select().from(orders).where(eq(orders.id, order.id)))[0].status).to.equal('completed');
      const destination = (await generateKeyPairSigner()).address;
      const refund = await claimedInBrowser(served, org, order.id, destination, `solana-${mode}`);
      expect(refund.amount).to.equal('1');
      clock.advance(5_000);
      await produce(1);
      await settle();
      clock.advance(5_000);
      // Paid before the approval: never counted. To another owner: not the refund's payment.
      const early = await client.pay(destination, 1_000_000n, 'USDC');
      await client.pay((await generateKeyPairSigner()).address, 1_000_000n, 'USDC');
      clock.advance(5_000);
      await approve(served, org, refund.id);
      clock.advance(5_000);
      await produce(1);
      await settle();
      clock.advance(5_000);
      // From the development payer wallet (`npm run pay` reads solana-local's state from its data
      // directory, which this in-memory chain has none of; the wallet is the same).
      const paid = await client.pay(destination, 1_000_000n, 'USDC');
      await settle();
      expect(await refundRow(ctx, refund.id)).to.include({ status: 'approved', amountPaid: 1_000_000n });
      await finalize();
      expect(await refundRow(ctx, refund.id)).to.include({ status: 'completed', amountPaid: 1_000_000n, txHash: paid.signature });
      expect(await refundEvents(ctx, 'refund.completed', refund.id)).to.have.length(1);
      const rows = await refundPayments(ctx, refund.id);
      expect(rows.map((r) => [r.txHash === early.signature, r.counted]).sort()).to.deep.equal([
        [false, true],
        [true, false],
      ]);
    });
  });
}
