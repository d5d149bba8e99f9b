import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import type { ServiceContext } from '../../core/service/context';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID, SOLANA_LOCAL_STATE_KEY, solanaFinalizationDepth } from '../../core/chains/solana/solana-local-state';
import { solanaLocalStateOf } from '../../scripts/local-chain/solana/solana-local-chain';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { setServiceState } from '../../core/platform/service-state';
import { chainCheckpoints, events, scannedBlocks } from '../../db/schema';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { buildTestApp, createTestOrg, STYLES, TEST_DATABASE_URL, TEST_REDIS_URL, testDb } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry } from '../helpers/processes';
import { dataOf, listOf } from '../helpers/wire';

const V1 = '/api/v1';
const BASE58_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
const SIGNATURE = /^[1-9A-HJ-NP-Za-km-z]{80,90}$/;
const FINALIZATION_LAG = 4;
const DEPTH = solanaFinalizationDepth({ confirmationLag: 1, finalizationLag: FINALIZATION_LAG });

/**
 * Solana orders and deposit references through the HTTP API in both wire formats, on solana-local
 * (a slot every 100 ms, finalized 4 blocks behind): base58 owner addresses and signatures in the
 * answers and events, paid with `npm run pay` (by order id, or by address) as a developer would.
 */
describe('solana over the HTTP API, styles A and B (solana-local)', function () {
  this.timeout(120_000);
  let chain: RunningSolanaLocal;
  let dir: string;
  const apps = Object.fromEntries(STYLES.map((style) => [style, buildTestApp({ style })]));

  async function settle(ctx: ServiceContext) {
    const scan = await runChainScan(ctx, SOLANA_LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, SOLANA_LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  }
  /** Scans and counts until `done` holds (slots keep coming on the node's timer). */
  async function settleUntil(ctx: ServiceContext, done: () => Promise<boolean>, what: string) {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      await settle(ctx);
      if (await done()) return;
    }
    throw new Error(`not within 30 s: ${what}`);
  }
  /** `npm run pay -- <target> <amount> [currency]` as a child process; the signature it printed. */
  async function npmRunPay(target: string, amount: string, currency?: string): Promise<string> {
    const pay = spawnEntry('scripts/local-chain/pay.ts', { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, DATA_DIR: dir }, currency ? [target, amount, currency] : [target, amount]);
    expect(await pay.exited, pay.stderr()).to.equal(0);
    const signature = /\btx ([1-9A-HJ-NP-Za-km-z]{80,90})\b/.exec(pay.stdout())?.[1];
    expect(signature, pay.stdout()).to.match(SIGNATURE);
    return signature!;
  }

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'solana-api-'));
    chain = await startSolanaLocal({ dataDir: dir, port: 0, slotMs: 100, finalizationLag: FINALIZATION_LAG });
    const state = solanaLocalStateOf(chain);
    for (const { deps } of Object.values(apps)) applySolanaLocalState(deps.registry, state);
    await setServiceState(testDb(), SOLANA_LOCAL_STATE_KEY, state); // what `npm start` records for every process
    await testDb().delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
    await testDb().delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
    // The checkpoint starts at the head; the new chain's mints are confirmed a slot after its start
    // (until then the token check fails the run, as it would a worker's first tick, and is asked again).
    for (const deadline = Date.now() + 10_000; ; await new Promise((r) => setTimeout(r, 100))) {
      const ok = await settle(apps.a.deps).then(() => true, (err: Error) => (Date.now() > deadline ? Promise.reject(err) : false));
      if (ok) break;
    }
  });
  after(async () => {
    await chain?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const style of STYLES) {
    describe(`style ${style.toUpperCase()}`, () => {
      const { app, deps } = apps[style];
      let key: string;
      let orgId: string;
      const get = (p: string) => request(app).get(V1 + p).set('X-API-Key', key);
      const post = (p: string, body: object) => request(app).post(V1 + p).set('X-API-Key', key).send(body);

      before(async () => {
        const org = await createTestOrg(`solana api ${style}`);
        key = org.keys.member;
        orgId = org.organizationId;
        await seedPoolAddresses(orgId, 'solana', 5);
      });

      it('an order on solana-local paid with npm run pay by its id: base58 address, completed with the signature and its slot, order.completed with both', async () => {
        const created = await post('/orders', { orderReference: `sol-api-${style}-${Date.now()}`, amount: '2.5', currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID });
        expect(created.status, JSON.stringify(created.body)).to.equal(201);
        const order = dataOf(style, created);
        expect(order.address).to.match(BASE58_ADDRESS);
        expect(order).to.include({ chainId: SOLANA_LOCAL_CHAIN_ID, currency: 'USDC', requiredConfirmations: DEPTH, status: 'pending' });
        const orderId = order.orderId ?? order.id;
        const signature = await npmRunPay(orderId, '2.5');
        await settleUntil(deps, async () => dataOf(style, await get(`/orders/${orderId}`)).status === 'completed', 'the order completed');
        const done = dataOf(style, await get(`/orders/${orderId}`));
        expect(done).to.include({ status: 'completed', address: order.address, amountReceived: '2.5', txHash: signature });
        expect(done.confirmations).to.be.at.least(DEPTH);
        const listed = listOf(style, await get(`/transfers?orderId=${orderId}`), 'transfers');
        expect(listed.items).to.have.length(1);
        expect(listed.items[0]).to.include({ txHash: signature, to: order.address, from: chain.info.payer, tokenAddress: chain.info.mints.USDC, amount: '2.5', status: 'confirmed', credited: true });
        const completed = await deps.db.select().from(events).where(and(eq(events.organizationId, orgId), eq(events.type, 'order.completed'), sql`${events.data}->>'orderId' = ${orderId}`));
        expect(completed).to.have.length(1);
        expect(completed[0].data).to.include({ address: order.address, txHash: signature, chainId: SOLANA_LOCAL_CHAIN_ID });
      });

      it('a deposit reference bound with protocol solana, paid with npm run pay: confirmed (deposit.confirmed) and completed at finalization, with the base58 address and signature', async () => {
        const reference = `sol-api-user-${style}-${Date.now()}`;
        const bound = await post('/deposits/bind', { depositReference: reference, protocol: 'solana' });
        expect(bound.status, JSON.stringify(bound.body)).to.equal(201);
        const binding = dataOf(style, bound);
        expect(binding.address).to.match(BASE58_ADDRESS);
        const signature = await npmRunPay(binding.address, '7.25', 'USDT');
        const deposit = async () => listOf(style, await get(`/deposits?depositReference=${reference}`), 'deposits').items[0];
        await settleUntil(deps, async () => (await deposit())?.status === 'completed', 'the deposit completed');
        const done = await deposit();
        expect(done).to.include({ status: 'completed', address: binding.address, txHash: signature, amount: '7.25', currency: 'USDT', chainId: SOLANA_LOCAL_CHAIN_ID, requiredConfirmations: DEPTH });
        const confirmed = await deps.db.select().from(events).where(and(eq(events.organizationId, orgId), eq(events.type, 'deposit.confirmed'), sql`${events.data}->>'txHash' = ${signature}`));
        expect(confirmed).to.have.length(1);
        expect(confirmed[0].data).to.include({ address: binding.address, txHash: signature, chainId: SOLANA_LOCAL_CHAIN_ID });
      });
    });
  }
});
