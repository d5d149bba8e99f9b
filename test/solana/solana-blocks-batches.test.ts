import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import type { ServiceContext } from '../../core/service/context';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID } from '../../core/chains/solana/solana-local-state';
import { bindDepositReference } from '../../core/deposits/bindings';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { createOrder } from '../../core/orders/orders';
import { chainCheckpoints, chainHeadObservations, events, scannedBlocks, transfers } from '../../db/schema';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { solanaLocalStateOf } from '../../scripts/local-chain/solana/solana-local-chain';
import { startFaultyRpcProxy, type FaultyRpcProxy } from '../sim/rpc-proxy';
import { Rng } from '../sim/rng';
import { createTestOrg, testConfig, testContext } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, orderTransfers } from '../helpers/evm';

const FINALIZATION_LAG = 4;

/**
 * `blocks` mode reads a range's blocks in JSON-RPC batches of getBlock. Between the service and
 * solana-local sits a provider that answers every batch's elements in reverse order (JSON-RPC lets
 * it answer in any order): a block must still be read as its own slot's, with its own hash and
 * time, so every payment of the range lands on the order or deposit reference its payer paid, at
 * the slot and signature of its transaction. Skipped slots sit between the payments, so the batches
 * hold slots that are not consecutive.
 */
describe('solana blocks mode: getBlock batches answered out of order (solana-local)', function () {
  this.timeout(120_000);
  let chain: RunningSolanaLocal;
  let proxy: FaultyRpcProxy;
  let client: SolanaLocalClient;
  let ctx: ServiceContext;
  let orgId: string;

  const settle = async () => {
    const scan = await runChainScan(ctx, SOLANA_LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, SOLANA_LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  };
  const produce = (count: number) => client.dev('solanaLocal_produceSlot', { count });

  before(async () => {
    chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0, confirmationLag: 1, finalizationLag: FINALIZATION_LAG });
    // Only reordering: every batch of more than one request is answered back to front.
    proxy = await startFaultyRpcProxy(chain.url, new Rng(7), { delay: 0, error: 0, httpError: 0, timeout: 0, duplicate: 0, reorder: 1, stale: 0 });
    client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    ctx = testContext(testConfig({ SOLANA_SCAN_MODE_SOLANA_LOCAL: 'blocks' }));
    applySolanaLocalState(ctx.registry, { ...solanaLocalStateOf(chain), rpcUrl: proxy.url });
    await ctx.db.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, SOLANA_LOCAL_CHAIN_ID));
    orgId = (await createTestOrg('solana blocks batches org')).organizationId;
    await seedPoolAddresses(orgId, 'solana', 30);
    await produce(3);
    await settle(); // the checkpoint starts at the head
  });
  after(async () => {
    await proxy?.close();
    await chain?.stop();
  });

  it('credits each payment of a range to the order or deposit reference it was paid to, at its own slot', async () => {
    const stamp = Date.now();
    const orders = await Promise.all(
      Array.from({ length: 14 }, (_, i) =>
        createOrder(ctx, orgId, { orderReference: `sol-batch-${stamp}-${i}`, amount: `${i + 1}.25`, currency: i % 2 ? 'USDT' : 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID, metadata: {} }),
      ),
    );
    const bindings = await Promise.all(
      [0, 1, 2].map(async (i) => (await bindDepositReference(ctx, orgId, { depositReference: `sol-batch-user-${stamp}-${i}`, protocol: 'solana' })).binding),
    );
    const paidOrders: { id: string; signature: string; slot: number; amount: bigint }[] = [];
    const paidDeposits: { id: string; signature: string; slot: number; amount: bigint }[] = [];
    for (const [i, o] of orders.entries()) {
      const amount = BigInt(i + 1) * 1_000_000n + 250_000n;
      const paid = await client.pay(o.address, amount, o.currency as 'USDC' | 'USDT');
      paidOrders.push({ id: o.id, signature: paid.signature, slot: Number(paid.slot), amount });
      if (i % 3 === 0) await client.dev('solanaLocal_skipSlots', { count: 1 + (i % 4) });
      if (i % 5 === 0) {
        const b = bindings[i / 5];
        const deposit = 7_000_000n + BigInt(i);
        const dep = await client.pay(b.address, deposit, 'USDT');
        paidDeposits.push({ id: b.bindingId, signature: dep.signature, slot: Number(dep.slot), amount: deposit });
      }
      await produce(1 + (i % 2));
    }
    await produce(FINALIZATION_LAG);
    await settle();
    await settle();
    await produce(FINALIZATION_LAG);
    await settle();

    // The proxy did reverse multi-block batches: the range was read in batches, out of order.
    expect(proxy.counts.reorder).to.be.greaterThan(0);
    for (const p of paidOrders) {
      const rows = await orderTransfers(ctx, p.id);
      expect(rows.map((r) => ({ txHash: r.txHash, blockNumber: r.blockNumber, amount: r.amount })), `order ${p.id}`).to.deep.equal([{ txHash: p.signature, blockNumber: p.slot, amount: p.amount }]);
      expect(await orderRow(ctx, p.id)).to.include({ status: 'completed', amountReceived: p.amount });
    }
    for (const d of paidDeposits) {
      const rows = await ctx.db.select().from(transfers).where(eq(transfers.txHash, d.signature));
      expect(rows.map((r) => ({ depositBindingId: r.depositBindingId, orderId: r.orderId, blockNumber: r.blockNumber, amount: r.amount })), `deposit ${d.id}`).to.deep.equal([
        { depositBindingId: d.id, orderId: null, blockNumber: d.slot, amount: d.amount },
      ]);
      const confirmed = await ctx.db.select().from(events).where(and(eq(events.type, 'deposit.confirmed'), sql`${events.data}->>'txHash' = ${d.signature}`));
      expect(confirmed, `deposit ${d.id}`).to.have.length(1);
    }
    // Each transfer carries the block time and hash of its own slot, as the node answers them one by one.
    const all = [...paidOrders, ...paidDeposits];
    const stored = await ctx.db.select().from(transfers).where(sql`${transfers.txHash} in ${all.map((p) => p.signature)}`);
    for (const row of stored) {
      const block = (await client.rpc.getBlock(BigInt(row.blockNumber), { commitment: 'finalized', transactionDetails: 'none', rewards: false }).send())!;
      expect({ hash: row.blockHash, time: row.blockTimestamp.getTime() / 1000 }, `slot ${row.blockNumber}`).to.deep.equal({ hash: block.blockhash, time: Number(block.blockTime) });
    }
  });
});
