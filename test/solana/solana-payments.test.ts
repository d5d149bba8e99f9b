import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID, solanaFinalizationDepth } from '../../core/chains/solana/solana-local-state';
import { bindDepositReference } from '../../core/deposits/bindings';
import { adapterFor, runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { scanChainOnce } from '../../core/detection/scan';
import { getCheckpoint } from '../../core/chains/checkpoints';
import { createOrder } from '../../core/orders/orders';
import { recomputeOrder } from '../../core/orders/order-state';
import { setConfigValue } from '../../core/organizations/org-config';
import { chainCheckpoints, chainHeadObservations, deposits, events, poolAddresses, scannedBlocks, transfers } from '../../db/schema';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { solanaLocalStateOf } from '../../scripts/local-chain/solana/solana-local-chain';
import { createTestOrg, testConfig, testContext } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, orderTransfers } from '../helpers/evm';

const FINALIZATION_LAG = 4;
const CONFIRMATION_LAG = 1;
const DEPTH = solanaFinalizationDepth({ confirmationLag: CONFIRMATION_LAG, finalizationLag: FINALIZATION_LAG });

/**
 * Solana payments end to end on solana-local (slots on demand, finalized 4 blocks behind its
 * newest block) with real Postgres and Redis, in both scan modes: the adapter talks JSON-RPC to
 * the node exactly as to a validator. Confirmed = finalized: a payment is pending from the scan
 * that first sees its confirmed block and confirmed once its slot is finalized.
 */
for (const mode of ['blocks', 'addresses'] as const) {
  describe(`solana payments to orders and deposit references (solana-local, ${mode} mode)`, function () {
    this.timeout(90_000);
    let chain: RunningSolanaLocal;
    let client: SolanaLocalClient;
    let ctx: ServiceContext;
    let clock: ManualClock;
    let orgId: string;
    let n = 0;

    const contextFor = () => {
      const c = testContext(testConfig({ [`SOLANA_SCAN_MODE_SOLANA_LOCAL`]: mode }));
      applySolanaLocalState(c.registry, solanaLocalStateOf(chain));
      return c;
    };
    const produce = (count: number) => client.dev('solanaLocal_produceSlot', { count });
    const settle = async (c: ServiceContext = ctx) => {
      const scan = await runChainScan(c, SOLANA_LOCAL_CHAIN_ID);
      if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
      const conf = await runChainConfirmations(c, SOLANA_LOCAL_CHAIN_ID);
      if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
    };
    /** Slots enough for everything confirmed now to be finalized, then a scan and a count. */
    const finalize = async () => {
      await produce(FINALIZATION_LAG);
      await settle();
      await settle();
    };
    const newOrder = (amount: string, extra: { currency?: string; paymentWindowMinutes?: number; graceMinutes?: number } = {}) =>
      createOrder(ctx, orgId, {
        orderReference: `sol-${mode}-${++n}-${Date.now()}`,
        amount,
        currency: extra.currency ?? 'USDC',
        chainId: SOLANA_LOCAL_CHAIN_ID,
        paymentWindowMinutes: extra.paymentWindowMinutes,
        graceMinutes: extra.graceMinutes,
        metadata: { n },
      });
    const eventsOf = (type: string, key: string, value: string) => ctx.db.select().from(events).where(and(eq(events.type, type), sql`${events.data}->>${key} = ${value}`));
    const txRows = (signature: string) => ctx.db.select().from(transfers).where(eq(transfers.txHash, signature));

    before(async () => {
      chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0, confirmationLag: CONFIRMATION_LAG, finalizationLag: FINALIZATION_LAG });
      client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
      ctx = contextFor();
      clock = ctx.clock as ManualClock;
      // A new chain (the other mode's run used another one): its scan starts afresh.
      await ctx.db.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
      await ctx.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
      // What the service saw of the other chain's slots is no evidence about this one's (attribution).
      await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, SOLANA_LOCAL_CHAIN_ID));
      orgId = (await createTestOrg(`solana payments org ${mode}`)).organizationId;
      await seedPoolAddresses(orgId, 'solana', 40);
      await produce(3);
      await settle(); // the checkpoint starts at the head
    });
    after(async () => {
      await chain?.stop();
    });

    it('is offered: solana-local takes USDC and USDT orders at base58 addresses, DAI is INVALID_CURRENCY, required confirmations are the finalization depth', async () => {
      expect(ctx.registry.get(SOLANA_LOCAL_CHAIN_ID)).to.include({ enabled: true, solanaScanMode: mode });
      const order = await newOrder('1');
      expect(order.requiredConfirmations).to.equal(DEPTH);
      expect(order.address).to.match(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
      const usdt = await newOrder('1', { currency: 'USDT' });
      expect(usdt.currency).to.equal('USDT');
      const err = await newOrder('1', { currency: 'DAI' }).then(() => null, (e) => e);
      expect(err?.code).to.equal('INVALID_CURRENCY');
    });

    it('exact payment, the ATA created in the paying transaction: pending at once, completed when its slot is finalized, one order.completed with base58 address and signature', async () => {
      const order = await newOrder('25.5');
      const paid = await client.pay(order.address, 25_500_000n, 'USDC');
      expect(paid.createdTokenAccount).to.equal(true);
      await settle();
      let [t] = await orderTransfers(ctx, order.id);
      expect(t).to.include({ status: 'pending', txHash: paid.signature, toAddress: order.address, fromAddress: chain.info.payer, blockNumber: paid.slot });
      expect((await orderRow(ctx, order.id)).status).to.equal('pending');
      await finalize();
      const row = await orderRow(ctx, order.id);
      expect(row).to.include({ status: 'completed', txHash: paid.signature, blockNumber: paid.slot });
      [t] = await orderTransfers(ctx, order.id);
      expect(t).to.include({ status: 'confirmed', credited: true, amount: 25_500_000n });
      const completed = await eventsOf('order.completed', 'orderId', order.id);
      expect(completed).to.have.length(1);
      expect(completed[0].data).to.include({ orderId: order.id, address: order.address, txHash: paid.signature, amountReceived: '25.5', chainId: SOLANA_LOCAL_CHAIN_ID });
    });

    it('partial payments add up; an overpayment shows its excess; a second payment to an existing ATA is credited too', async () => {
      const partial = await newOrder('10');
      await client.pay(partial.address, 4_000_000n, 'USDC');
      await settle();
      expect((await orderRow(ctx, partial.id)).amountReceived).to.equal(4_000_000n);
      const second = await client.pay(partial.address, 6_000_000n, 'USDC');
      expect(second.createdTokenAccount).to.equal(false);
      const over = await newOrder('5', { currency: 'USDT' });
      await client.pay(over.address, 7_000_001n, 'USDT');
      await finalize();
      expect(await orderRow(ctx, partial.id)).to.include({ status: 'completed', amountReceived: 10_000_000n });
      expect(await orderRow(ctx, over.id)).to.include({ status: 'completed', amountReceived: 7_000_001n });
    });

    it('a payment after the grace end is recorded and attributed, never counted', async () => {
      clock.advance(-20 * 60_000);
      const order = await newOrder('2', { paymentWindowMinutes: 10, graceMinutes: 5 });
      clock.advance(20 * 60_000);
      await client.pay(order.address, 2_000_000n, 'USDC');
      await finalize();
      const [t] = await orderTransfers(ctx, order.id);
      expect(t).to.include({ orderId: order.id, counted: false, credited: false });
      expect((await orderRow(ctx, order.id)).status).to.not.equal('completed');
    });

    it('a failed transaction (meta.err) is not credited; a lookalike mint is ignored', async () => {
      const order = await newOrder('3');
      const failed = await client.payFailing(order.address, 'USDC');
      expect(failed.err).to.not.equal(null);
      const lookalike = await client.payLookalike(order.address, 3_000_000n);
      await finalize();
      expect(await txRows(failed.signature)).to.have.length(0);
      expect(await txRows(lookalike.signature)).to.have.length(0);
      expect((await orderRow(ctx, order.id)).amountReceived).to.equal(0n);
    });

    it('a v0 transaction whose recipient account comes from an address lookup table is credited (identity: the account index over static and loaded keys)', async () => {
      const order = await newOrder('1.5');
      await client.pay(order.address, 1n, 'USDC'); // its ATA exists first, so the table can hold it
      await settle();
      const paid = await client.payWithLookupTable(order.address, 1_499_999n, 'USDC');
      await finalize();
      const [t] = await txRows(paid.signature);
      expect(t).to.include({ toAddress: order.address, amount: 1_499_999n, status: 'confirmed' });
      expect(await orderRow(ctx, order.id)).to.include({ status: 'completed', amountReceived: 1_500_000n });
    });

    if (mode === 'blocks') {
      it('decimals are checked against the mint at start: a mismatch refuses to scan the chain', async () => {
        const wrong = contextFor();
        wrong.registry.setTokenAddress(SOLANA_LOCAL_CHAIN_ID, 'USDC', chain.info.mints.USDC, 9);
        expect(await runChainScan(wrong, SOLANA_LOCAL_CHAIN_ID)).to.deep.equal({ skipped: 'token decimals mismatch' });
        const notAMint = contextFor();
        notAMint.registry.setTokenAddress(SOLANA_LOCAL_CHAIN_ID, 'USDT', chain.info.payer, 6);
        expect(await runChainScan(notAMint, SOLANA_LOCAL_CHAIN_ID)).to.deep.equal({ skipped: 'token decimals mismatch' });
      });

      it('a transfer to another (non-associated) token account of the owner is credited', async () => {
        const order = await newOrder('4');
        const paid = await client.payToOtherTokenAccount(order.address, 4_000_000n, 'USDC');
        await finalize();
        const [t] = await txRows(paid.signature);
        expect(t).to.include({ toAddress: order.address, orderId: order.id, status: 'confirmed' });
        expect(await orderRow(ctx, order.id)).to.include({ status: 'completed', amountReceived: 4_000_000n });
      });
    }

    it('skipped slots inside and at the end of a range are stepped over: nothing lost, the checkpoint stays on a block', async () => {
      const a = await newOrder('1');
      const b = await newOrder('2');
      await client.dev('solanaLocal_skipSlots', { count: 3 });
      const paidA = await client.pay(a.address, 1_000_000n, 'USDC', { waitFor: 'none' });
      await produce(1);
      await client.dev('solanaLocal_skipSlots', { count: 2 });
      const paidB = await client.pay(b.address, 2_000_000n, 'USDC', { waitFor: 'none' });
      await produce(1);
      await client.dev('solanaLocal_skipSlots', { count: 4 });
      await produce(2); // the confirmed head is one block behind: slots skipped just below it end a range
      ctx.detection.rangeSizes.set(SOLANA_LOCAL_CHAIN_ID, 2);
      await settle();
      await settle();
      const cp = (await getCheckpoint(ctx.db, SOLANA_LOCAL_CHAIN_ID))!;
      const block = await client.rpc.getBlock(BigInt(cp.blockNumber), { commitment: 'confirmed', transactionDetails: 'none', rewards: false }).send();
      expect(block?.blockhash).to.equal(cp.blockHash);
      expect((await txRows(paidA.signature))[0]).to.include({ orderId: a.id });
      expect((await txRows(paidB.signature))[0]).to.include({ orderId: b.id });
      await finalize();
      expect((await orderRow(ctx, a.id)).status).to.equal('completed');
      expect((await orderRow(ctx, b.id)).status).to.equal('completed');
    });

    it('a fork of unfinalized slots: the dropped transaction is dropped, the re-included one is credited once in its new slot', async () => {
      const kept = await newOrder('6');
      const lost = await newOrder('7');
      const paidKept = await client.pay(kept.address, 6_000_000n, 'USDC');
      await settle();
      expect((await orderRow(ctx, kept.id)).amountReceived).to.equal(6_000_000n);
      // The kept payment's block is forked away and its transaction lands again in a new slot.
      const forked = await client.dev<{ dropped: number[]; reincluded: string[] }>('solanaLocal_fork', { blocks: 2, reinclude: true });
      expect(forked.reincluded).to.include(paidKept.signature);
      await produce(2);
      await settle();
      await settle();
      const paidLost = await client.pay(lost.address, 7_000_000n, 'USDC');
      await settle();
      expect((await orderRow(ctx, lost.id)).amountReceived).to.equal(7_000_000n);
      const gone = await client.dev<{ dropped: number[]; reincluded: string[] }>('solanaLocal_fork', { blocks: 2, reinclude: false });
      expect(gone.dropped.length).to.be.greaterThan(0);
      await produce(1);
      await finalize();
      const keptRows = await txRows(paidKept.signature);
      const live = keptRows.filter((r) => r.status !== 'dropped');
      expect(live).to.have.length(1);
      expect(live[0]).to.include({ status: 'confirmed', credited: true });
      expect(live[0].blockNumber).to.not.equal(paidKept.slot);
      expect(await orderRow(ctx, kept.id)).to.include({ status: 'completed', amountReceived: 6_000_000n });
      expect(await eventsOf('order.completed', 'orderId', kept.id)).to.have.length(1);
      const lostRows = await txRows(paidLost.signature);
      expect(lostRows.every((r) => r.status === 'dropped' && !r.credited)).to.equal(true);
      expect(await orderRow(ctx, lost.id)).to.include({ status: 'pending', amountReceived: 0n });
    });

    it('a restart mid-way (a new process with fresh adapter memory) loses and duplicates nothing', async () => {
      const orders = await Promise.all([1, 2, 3, 4].map(() => newOrder('1')));
      const sigs: string[] = [];
      for (const o of orders) {
        sigs.push((await client.pay(o.address, 1_000_000n, 'USDC')).signature);
        await produce(3);
      }
      ctx.detection.rangeSizes.set(SOLANA_LOCAL_CHAIN_ID, 4);
      await scanChainOnce(ctx, adapterFor(ctx, ctx.registry.get(SOLANA_LOCAL_CHAIN_ID)!)!); // one range only, then "killed"
      const restarted = contextFor();
      restarted.detection.rangeSizes.set(SOLANA_LOCAL_CHAIN_ID, 3);
      await settle(restarted);
      await produce(FINALIZATION_LAG);
      await settle(restarted);
      await settle(restarted);
      const rows = await ctx.db.select().from(transfers).where(sql`${transfers.txHash} in ${sigs}`);
      expect(rows.map((r) => r.txHash).sort()).to.deep.equal([...sigs].sort());
      for (const o of orders) {
        expect((await orderRow(ctx, o.id)).status).to.equal('completed');
        expect(await eventsOf('order.completed', 'orderId', o.id)).to.have.length(1);
      }
    });

    it('a deposit reference bound with protocol solana is watched on solana-local: deposit.pending, then deposit.confirmed and completed at finalization', async () => {
      const { binding } = await bindDepositReference(ctx, orgId, { depositReference: `sol-user-${mode}-${Date.now()}`, protocol: 'solana' });
      expect(binding.monitoredChains).to.include(SOLANA_LOCAL_CHAIN_ID);
      const paid = await client.pay(binding.address, 12_000_000n, 'USDT');
      await settle();
      const pending = await eventsOf('deposit.pending', 'txHash', paid.signature);
      expect(pending).to.have.length(1);
      expect(pending[0].data).to.include({ address: binding.address, chainId: SOLANA_LOCAL_CHAIN_ID });
      await finalize();
      const confirmed = await eventsOf('deposit.confirmed', 'txHash', paid.signature);
      expect(confirmed).to.have.length(1);
      expect(confirmed[0].data).to.include({ address: binding.address, txHash: paid.signature });
      const [dep] = await ctx.db.select().from(deposits).where(sql`${deposits.transferId} in (select id from transfers where tx_hash = ${paid.signature})`);
      expect(dep).to.include({ status: 'completed', requiredConfirmations: DEPTH });
    });

    // Last: it moves this context's clock ahead of the chain's, which later tests' fresh contexts would see as a skew.
    it('a late-payment window keeps an expired order\'s address watched: a payment after expiry is recorded against the order (paid_late), in either scan mode', async () => {
      const lateOrg = (await createTestOrg(`solana late window ${mode}`)).organizationId;
      await seedPoolAddresses(lateOrg, 'solana', 2);
      // No cooldown of its own: without the window the address would go back to the pool at once,
      // and in addresses mode an idle address is never asked about.
      await setConfigValue(ctx.db, lateOrg, 'address_pool.cooldown_minutes', 0);
      await setConfigValue(ctx.db, lateOrg, 'late_payment_window_minutes', 60);
      clock.advance(-20 * 60_000);
      const order = await createOrder(ctx, lateOrg, { orderReference: `sol-late-${mode}-${Date.now()}`, amount: '3', currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID, paymentWindowMinutes: 1, graceMinutes: 0 });
      clock.advance(20 * 60_000);
      await produce(2);
      await settle();
      expect(await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, order.id))).to.equal('expired');
      const [pool] = await ctx.db.select().from(poolAddresses).where(eq(poolAddresses.id, order.poolAddressId));
      expect(pool.status).to.equal('cooldown');
      expect(pool.cooldownUntil!.getTime()).to.be.at.least(order.graceEndsAt.getTime() + 60 * 60_000 - 1000);
      clock.advance(5_000);
      await produce(1);
      await settle();
      clock.advance(5_000);
      const paid = await client.pay(order.address, 3_000_000n, 'USDC');
      await finalize();
      const [t] = await txRows(paid.signature);
      expect(t, 'the late payment is seen').to.not.equal(undefined);
      expect(t).to.include({ orderId: null, unattributedReason: 'paid_late', counted: false, credited: false });
      expect(t.unattributedCandidates?.[0]).to.include({ relation: 'previous', orderId: order.id });
      const row = await orderRow(ctx, order.id);
      expect(row.status).to.equal('expired');
      expect(row.latePaidAt).to.be.instanceOf(Date);
      expect(row.unattributedPayments).to.equal(1);
    });
  });
}
