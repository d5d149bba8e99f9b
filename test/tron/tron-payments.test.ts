import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { TRON_LOCAL_CHAIN_ID, applyTronLocalState } from '../../core/chains/tron/tron-local-state';
import { bindDepositReference } from '../../core/deposits/bindings';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { scanChain } from '../../core/detection/scan';
import { updateConfirmations } from '../../core/detection/confirmations';
import { TronAdapter } from '../../core/chains/tron/tron-adapter';
import { TronHttp } from '../../core/chains/tron/tron-http';
import { createOrder } from '../../core/orders/orders';
import { deposits, events, transfers } from '../../db/schema';
import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { PayError, payOnLocalChain } from '../../scripts/local-chain/payment';
import { createTestOrg, testContext } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, orderTransfers } from '../helpers/evm';
import { tronProxy } from '../helpers/tron-proxy';
import { getCheckpoint } from '../../core/chains/checkpoints';

/**
 * Tron payments end to end on tron-local (solidified 2 blocks behind its head, so a block is
 * solidified at 3 confirmations, the chain's requirement) with real Postgres and Redis: the
 * adapter talks HTTP to the node exactly as it talks to TronGrid.
 */
describe('tron payments to orders and deposit references (tron-local)', function () {
  this.timeout(60_000);
  let node: TronLocalNode;
  let dir: string;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let orgId: string;
  let n = 0;

  const dev = async (route: string, body: unknown = {}) => {
    const res = await fetch(`${node.url}/dev/${route}`, { method: 'POST', body: JSON.stringify(body) });
    const answer = (await res.json()) as Record<string, unknown>;
    if (answer.Error) throw new Error(String(answer.Error));
    return answer;
  };
  const pay = async (to: string, amount: bigint) => (await dev('transfer', { to, amount: amount.toString() })) as { txID: string; blockNumber: number };
  const mine = (blocks: number) => dev('mine', { blocks });
  const settle = async (c: ServiceContext = ctx) => {
    const scan = await runChainScan(c, TRON_LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(c, TRON_LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  };
  const newOrder = (amount: string, extra: { currency?: string; paymentWindowMinutes?: number; graceMinutes?: number } = {}) =>
    createOrder(ctx, orgId, { orderReference: `tron-${++n}-${Date.now()}`, amount, currency: extra.currency ?? 'USDT', chainId: TRON_LOCAL_CHAIN_ID, paymentWindowMinutes: extra.paymentWindowMinutes, graceMinutes: extra.graceMinutes, metadata: { n } });
  const eventsOf = (type: string, key: string, value: string) =>
    ctx.db.select().from(events).where(and(eq(events.type, type), sql`${events.data}->>${key} = ${value}`));
  const useNode = (c: ServiceContext) => applyTronLocalState(c.registry, { rpcUrl: node.url, genesisHash: node.genesisHash, token: node.token, startedAt: new Date().toISOString() });

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tron-pay-'));
    node = new TronLocalNode({ stateFile: path.join(dir, 'state.json'), blockTimeMs: 0, solidificationLag: 2 });
    await node.start();
    ctx = testContext();
    clock = ctx.clock as ManualClock;
    useNode(ctx);
    orgId = (await createTestOrg('tron payments org')).organizationId;
    await seedPoolAddresses(orgId, 'tron', 30);
    await mine(3);
    await settle(); // the checkpoint starts at the head
  });
  after(async () => {
    await node?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is offered: tron-local takes USDT orders, DAI is INVALID_CURRENCY, and required confirmations are the solidification depth', async () => {
    const order = await newOrder('1');
    expect(order.requiredConfirmations).to.equal(3);
    expect(order.address).to.match(/^T/);
    const err = await newOrder('1', { currency: 'DAI' }).then(() => null, (e) => e);
    expect(err?.code).to.equal('INVALID_CURRENCY');
  });

  it('exact payment: pending within one scan (early sight), completed when its block is solidified, one order.completed with the T-address and tx id', async () => {
    const order = await newOrder('25.5');
    const paid = await pay(order.address, 25_500_000n);
    await settle();
    let [t] = await orderTransfers(ctx, order.id);
    expect(t).to.include({ status: 'pending', confirmations: 1, txHash: paid.txID, toAddress: order.address, logIndex: 0 });
    expect((await orderRow(ctx, order.id)).status).to.equal('pending');
    await mine(1);
    await settle();
    expect((await orderRow(ctx, order.id)).status).to.equal('pending'); // 2 confirmations, not solidified yet
    expect(node.solidifiedNumber).to.be.lessThan(paid.blockNumber);
    await mine(1);
    await settle();
    expect(node.solidifiedNumber).to.equal(paid.blockNumber);
    const row = await orderRow(ctx, order.id);
    expect(row).to.include({ status: 'completed', txHash: paid.txID, blockNumber: paid.blockNumber, confirmations: 3 });
    [t] = await orderTransfers(ctx, order.id);
    expect(t).to.include({ status: 'confirmed', credited: true });
    const completed = await eventsOf('order.completed', 'orderId', order.id);
    expect(completed).to.have.length(1);
    expect(completed[0].data).to.include({ orderId: order.id, address: order.address, txHash: paid.txID, amountReceived: '25.5', chainId: TRON_LOCAL_CHAIN_ID });
  });

  it('npm run pay pays a tron-local order by its id, or a T-address; a bad address is refused with a reason', async () => {
    const order = await newOrder('2.5');
    const paid = await payOnLocalChain(ctx, order.id, '2.5');
    expect(paid).to.include({ to: order.address, currency: 'USDT', amount: '2.5', from: node.faucet });
    await mine(2);
    await settle();
    expect(await orderRow(ctx, order.id)).to.include({ status: 'completed', txHash: paid.txHash });
    const other = 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1';
    await payOnLocalChain(ctx, other, '0.000001');
    expect(node.balanceOf(other)).to.equal(1n);
    const bad = await payOnLocalChain(ctx, 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s2', '1').then(() => null, (e) => e);
    expect(bad).to.be.instanceOf(PayError);
    expect(bad.message).to.contain('not a valid Tron address');
  });

  it('partial payments add up; an overpayment shows its excess', async () => {
    const partial = await newOrder('10');
    await pay(partial.address, 4_000_000n);
    await settle();
    expect((await orderRow(ctx, partial.id)).amountReceived).to.equal(4_000_000n);
    await pay(partial.address, 6_000_000n);
    const over = await newOrder('5');
    await pay(over.address, 7_000_001n);
    await mine(2);
    await settle();
    expect(await orderRow(ctx, partial.id)).to.include({ status: 'completed', amountReceived: 10_000_000n });
    expect(await orderRow(ctx, over.id)).to.include({ status: 'completed', amountReceived: 7_000_001n });
  });

  it('a payment after the grace end is recorded and attributed, never counted', async () => {
    clock.advance(-20 * 60_000);
    const order = await newOrder('2', { paymentWindowMinutes: 10, graceMinutes: 5 });
    clock.advance(20 * 60_000);
    await pay(order.address, 2_000_000n);
    await mine(2);
    await settle();
    const [t] = await orderTransfers(ctx, order.id);
    expect(t).to.include({ orderId: order.id, counted: false, credited: false });
    expect((await orderRow(ctx, order.id)).status).to.not.equal('completed');
  });

  it('two Transfer logs in one transaction are two transfers (tx id + index within it)', async () => {
    const a = await newOrder('1');
    const b = await newOrder('2');
    const tx = await dev('transfer', { transfers: [{ to: a.address, amount: '1000000' }, { to: b.address, amount: '2000000' }] });
    await mine(2);
    await settle();
    const rows = await ctx.db.select().from(transfers).where(eq(transfers.txHash, String(tx.txID)));
    expect(rows.map((r) => [r.logIndex, r.toAddress]).sort()).to.deep.equal([[0, a.address], [1, b.address]]);
    expect((await orderRow(ctx, a.id)).status).to.equal('completed');
    expect((await orderRow(ctx, b.id)).status).to.equal('completed');
  });

  it('a reverted transaction is not credited', async () => {
    const order = await newOrder('3');
    const tx = await dev('transfer', { to: order.address, amount: '3000000', fail: true });
    await mine(3);
    await settle();
    expect(await ctx.db.select().from(transfers).where(eq(transfers.txHash, String(tx.txID)))).to.have.length(0);
    expect((await orderRow(ctx, order.id)).amountReceived).to.equal(0n);
  });

  it('an unsolidified payment orphaned before solidification is dropped', async () => {
    const order = await newOrder('8');
    const paid = await pay(order.address, 8_000_000n);
    await settle();
    expect((await orderRow(ctx, order.id)).amountReceived).to.equal(8_000_000n);
    const orphaned = await dev('orphan');
    expect(orphaned.orphaned).to.be.greaterThan(0);
    await mine(3);
    await settle();
    await settle();
    const [t] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txID));
    expect(t.status).to.equal('dropped');
    expect(await orderRow(ctx, order.id)).to.include({ status: 'pending', amountReceived: 0n });
  });

  it('orphaned before solidification, then re-included in another block (/dev/orphan reinclude): credited once, in its new block', async () => {
    // The re-included copy is the same transfer: its rows move to the new block and keep their attribution.
    await settle();
    const order = await newOrder('6');
    const { binding } = await bindDepositReference(ctx, orgId, { depositReference: `tron-reinclude-${Date.now()}`, protocol: 'tron' });
    const tx = await dev('transfer', { transfers: [{ to: order.address, amount: '6000000' }, { to: binding.address, amount: '5000000' }] });
    await settle();
    expect((await orderRow(ctx, order.id)).amountReceived).to.equal(6_000_000n);
    const orphaned = await dev('orphan', { reinclude: true });
    expect(orphaned.orphaned).to.be.greaterThan(0);
    await settle();
    await mine(3);
    await settle();
    await settle();
    const rows = await ctx.db.select().from(transfers).where(eq(transfers.txHash, String(tx.txID)));
    // One row per transfer (design.md §4b): dropped with the orphaned block, pending again in the new one, credited once.
    expect(rows).to.have.length(2);
    const live = rows.filter((r) => r.status !== 'dropped');
    expect(live.map((r) => [r.logIndex, r.status, r.credited])).to.have.deep.members([[0, 'confirmed', true], [1, 'confirmed', true]]);
    expect(rows.filter((r) => r.status === 'dropped').every((r) => !r.credited)).to.equal(true);
    const block = await fetch(`${node.url}/walletsolidity/getblockbynum`, { method: 'POST', body: JSON.stringify({ num: live[0].blockNumber }) }).then((r) => r.json());
    expect(block.blockID).to.equal(live[0].blockHash);
    expect(await orderRow(ctx, order.id)).to.include({ status: 'completed', amountReceived: 6_000_000n, txHash: tx.txID, blockNumber: live[0].blockNumber });
    expect(await eventsOf('order.completed', 'orderId', order.id)).to.have.length(1);
    expect(await eventsOf('deposit.confirmed', 'txHash', String(tx.txID))).to.have.length(1);
    const credited = await ctx.db.select().from(deposits).where(sql`${deposits.transferId} in (select id from transfers where tx_hash = ${tx.txID}) and ${deposits.status} in ('confirmed', 'completed')`);
    expect(credited).to.have.length(1);
  });

  it('provider 429s: the scan fails without moving, then recovers and records the payment once', async () => {
    const order = await newOrder('4');
    const paid = await pay(order.address, 4_000_000n);
    await mine(2);
    const chain = ctx.registry.get(TRON_LOCAL_CHAIN_ID)!;
    // Its own clock: stepping past the penalty window must not move the context's, which other
    // processes' (contexts') head observations are compared with.
    const providerClock = new ManualClock();
    const adapter = new TronAdapter(chain, new TronHttp(chain.chainId, chain.rpcUrls, { clock: providerClock }));
    await dev('rate-limit', { requests: 1000 });
    const failed = await scanChain(ctx, adapter).then(() => null, (e: Error) => e);
    expect(failed?.name).to.equal('ProviderUnavailableError');
    expect(await orderTransfers(ctx, order.id)).to.have.length(0);
    await dev('rate-limit', { requests: 0 });
    // The provider's back-off window (TronGrid's 30 s penalty, on the context's clock) ends.
    providerClock.advance(30_000);
    await scanChain(ctx, adapter);
    await updateConfirmations(ctx, adapter);
    await scanChain(ctx, adapter);
    const rows = await orderTransfers(ctx, order.id);
    expect(rows.map((r) => r.txHash)).to.deep.equal([paid.txID]);
    expect((await orderRow(ctx, order.id)).status).to.equal('completed');
  });

  it('a restart while a catch-up range is being read loses and duplicates nothing, and the old process finishing late writes nothing', async () => {
    const orders = await Promise.all([1, 2, 3, 4, 5, 6].map(() => newOrder('1')));
    const txs: string[] = [];
    for (const o of orders) {
      txs.push((await pay(o.address, 1_000_000n)).txID);
      await mine(7);
    }
    // The old process reads through a provider that stalls its block-range requests once the
    // first range (5 blocks, one request) is through: it is caught in the middle of its second range.
    const proxy = await tronProxy(() => node.url);
    const old = testContext();
    applyTronLocalState(old.registry, { rpcUrl: proxy.url, genesisHash: node.genesisHash, token: node.token, startedAt: '' });
    old.detection.rangeSizes.set(TRON_LOCAL_CHAIN_ID, 5);
    proxy.state.holdOn = /getblockbylimitnext/;
    proxy.state.holdAfter = 1;
    const before = (await getCheckpoint(ctx.db, TRON_LOCAL_CHAIN_ID))!.blockNumber;
    const oldRun = runChainScan(old, TRON_LOCAL_CHAIN_ID, 60_000);
    while (proxy.state.held.length === 0) await new Promise((r) => setTimeout(r, 10));
    const midway = (await getCheckpoint(ctx.db, TRON_LOCAL_CHAIN_ID))!.blockNumber;
    expect(midway).to.equal(before + 5); // one range committed, the next one in flight
    try {
      // A new process takes over and catches up.
      const restarted = testContext();
      useNode(restarted);
      await settle(restarted);
      await settle(restarted);
      // The old process's reads come back late: its range no longer starts at the checkpoint.
      proxy.release();
      const late = await oldRun;
      expect(late).to.include({ lastStatus: 'conflict' });
    } finally {
      proxy.release();
      await proxy.close();
    }
    await settle();
    const rows = await ctx.db.select().from(transfers).where(sql`${transfers.txHash} in ${txs}`);
    expect(rows.map((r) => r.txHash).sort()).to.deep.equal([...txs].sort());
    for (const o of orders) {
      expect((await orderRow(ctx, o.id)).status).to.equal('completed');
      expect(await eventsOf('order.completed', 'orderId', o.id)).to.have.length(1);
    }
  });

  it('a deposit reference bound with protocol tron is watched on tron-local: deposit.pending, then deposit.confirmed with the T-address and tx id, then completed', async () => {
    const { binding } = await bindDepositReference(ctx, orgId, { depositReference: `tron-user-${Date.now()}`, protocol: 'tron' });
    expect(binding.monitoredChains).to.include(TRON_LOCAL_CHAIN_ID);
    const paid = await pay(binding.address, 12_000_000n);
    await settle();
    const pending = await eventsOf('deposit.pending', 'txHash', paid.txID);
    expect(pending).to.have.length(1);
    expect(pending[0].data).to.include({ address: binding.address, chainId: TRON_LOCAL_CHAIN_ID });
    await mine(2);
    await settle();
    const confirmed = await eventsOf('deposit.confirmed', 'txHash', paid.txID);
    expect(confirmed).to.have.length(1);
    expect(confirmed[0].data).to.include({ address: binding.address, txHash: paid.txID });
    const [dep] = await ctx.db.select().from(deposits).where(sql`${deposits.transferId} in (select id from transfers where tx_hash = ${paid.txID})`);
    // Confirmed when its block is solidified, which is final on Tron: completed in the same run.
    expect(dep).to.include({ status: 'completed', requiredConfirmations: 3 });
    expect(dep.confirmedAt!.getTime()).to.be.at.most(dep.completedAt!.getTime());
  });
});
