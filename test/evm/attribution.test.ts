import { expect } from 'chai';
import { and, eq, inArray } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { resetCheckpoint } from '../../core/detection/scan-position';
import { expireDueOrders } from '../../core/orders/order-expiry';
import { createOrder } from '../../core/orders/orders';
import { setConfigValue } from '../../core/organizations/org-config';
import { poolAddresses, scannedBlocks, transfers } from '../../db/schema';
import { createTestOrg, testContext } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, settle } from '../helpers/evm';

/**
 * Attribution on a real EVM chain (anvil, Postgres, Redis), decided from stored facts only:
 * the same history gives the same answer scanned live and caught up after a scanner outage
 * (a block stamped behind the service clock included), and a late payment to an expired order's
 * address stays unattributed, also once the next order holds the address.
 */
describe('attribution on a local EVM chain: live vs after an outage, late payments (anvil)', function () {
  this.timeout(120_000);
  let chain: TestChain;
  let ctx: ServiceContext;
  let n = 0;

  before(async () => {
    chain = await startTestChain();
    ctx = testContext();
    useTestChain(ctx.registry, chain);
    await resetCheckpointToHead(ctx, chain);
  });
  after(async () => chain?.stop());

  const order = (organizationId: string, extra: { paymentWindowMinutes?: number; graceMinutes?: number } = {}) =>
    createOrder(ctx, organizationId, { orderReference: `attr-${++n}-${Date.now()}`, amount: '2', currency: 'USDT', chainId: LOCAL_CHAIN_ID, ...extra });

  async function rescanFrom(blockNumber: number): Promise<void> {
    const b = await chain.provider.send('eth_getBlockByNumber', [`0x${blockNumber.toString(16)}`, false]);
    await ctx.db.transaction(async (tx) => {
      await tx.delete(scannedBlocks).where(eq(scannedBlocks.chainId, LOCAL_CHAIN_ID));
      await resetCheckpoint(tx, LOCAL_CHAIN_ID, { number: Number(b.number), hash: b.hash, parentHash: b.parentHash, timestamp: Number(b.timestamp) });
    });
  }

  it('the same history scanned live and after a scanner outage gives identical attribution, a skewed block included', async () => {
    const org = await createTestOrg('attribution outage');
    await seedPoolAddresses(org.organizationId, 'evm', 4);
    await chain.mine(1);
    await settle(ctx);
    const start = await chain.head();
    const expected: Record<string, string | null> = {};

    // An order paid in an ordinary block.
    const first = await order(org.organizationId);
    const p1 = await chain.pay(first.address, 'USDT', 2_000_000n);
    expected[p1.txHash] = first.id;
    await settle(ctx);

    // Mining paused, the chain's clock set back to the last block's time, the order created, mining
    // resumed: the payment's block is stamped before the order it pays.
    await chain.mine(1);
    await settle(ctx);
    const last = (await chain.provider.getBlock('latest'))!;
    // The wall clock moves past the last block's second (block times are whole seconds), so what is
    // created next is stamped after it: a wait for time to pass, never too short on a busy machine.
    await new Promise((r) => setTimeout(r, 1500));
    await chain.rpc('evm_setTime', [last.timestamp]);
    const skewed = await order(org.organizationId);
    const p2 = await chain.pay(skewed.address, 'USDT', 2_000_000n);
    const p2Block = (await chain.provider.getBlock(p2.blockNumber))!;
    expect(p2Block.timestamp * 1000, 'the block is stamped before the order').to.be.lessThan(skewed.createdAt.getTime());
    expected[p2.txHash] = skewed.id;
    await chain.rpc('evm_setTime', [Math.floor(Date.now() / 1000)]);
    await settle(ctx);

    // A payment into a pool address nobody holds: recorded, unattributed.
    const [idle] = await ctx.db
      .select({ address: poolAddresses.address })
      .from(poolAddresses)
      .where(and(eq(poolAddresses.organizationId, org.organizationId), eq(poolAddresses.status, 'available')));
    const p3 = await chain.pay(idle.address, 'USDT', 1_000_000n);
    expected[p3.txHash] = null;
    await chain.mine(3);
    await settle(ctx);

    const hashes = Object.keys(expected);
    const attribution = async () => {
      const rows = await ctx.db.select().from(transfers).where(inArray(transfers.txHash, hashes));
      expect(rows, 'one transfer per payment').to.have.length(hashes.length);
      return Object.fromEntries(rows.map((r) => [r.txHash, r.orderId ?? r.depositBindingId]));
    };
    const live = await attribution();
    expect(live).to.deep.equal(expected);
    expect((await orderRow(ctx, skewed.id)).status).to.equal('completed');

    // The outage: what was recorded is gone and the scanner catches up on the whole history at once.
    await ctx.db.delete(transfers).where(inArray(transfers.txHash, hashes));
    await rescanFrom(start);
    await settle(ctx);
    expect(await attribution()).to.deep.equal(live);
  });

  it('a late payment to an expired order\'s address, before and after the next order takes it, stays unattributed', async () => {
    const clock = ctx.clock as ManualClock;
    const org = await createTestOrg('attribution late payment');
    await seedPoolAddresses(org.organizationId, 'evm', 1);
    await setConfigValue(ctx.db, org.organizationId, 'address_pool.cooldown_minutes', 0);
    await settle(ctx);
    const expired = await order(org.organizationId, { paymentWindowMinutes: 1, graceMinutes: 0 });
    clock.advance(61_000);
    // The chain's time follows the service clock; an order expires once its chain was scanned past
    // its grace end, and the payments below are stamped after the expiry.
    await chain.rpc('evm_setTime', [Math.floor(clock.now().getTime() / 1000)]);
    await chain.mine(1);
    await settle(ctx);
    await expireDueOrders(ctx);
    expect((await orderRow(ctx, expired.id)).status).to.equal('expired');
    // Late: stamped after the expiry released the address (a payment while the expired order still
    // held it would be that order's, uncounted).
    clock.advance(2000);
    await chain.rpc('evm_setTime', [Math.floor(clock.now().getTime() / 1000)]);

    // Seen by the scanner while nobody holds the address (it had looked since the expiry).
    await settle(ctx);
    const late = await chain.pay(expired.address, 'USDT', 2_000_000n);
    await settle(ctx);
    // Paid again, then the next order takes the address (once the effective cooldown S has passed,
    // a configured 0 notwithstanding) before the scanner sees that payment.
    const later = await chain.pay(expired.address, 'USDT', 2_000_000n);
    clock.advance(1000);
    let refused: unknown = null;
    await order(org.organizationId).catch((err) => (refused = err));
    expect(String(refused), 'not handed out again within S').to.include('No available evm address');
    clock.advance(ctx.registry.get(LOCAL_CHAIN_ID)!.attributionSkewSeconds * 1000);
    const next = await order(org.organizationId);
    expect(next.address, 'the next order holds the same address').to.equal(expired.address);
    await chain.mine(3);
    await settle(ctx);

    const rows = await ctx.db
      .select()
      .from(transfers)
      .where(inArray(transfers.txHash, [late.txHash, later.txHash]));
    expect(rows).to.have.length(2);
    for (const row of rows) expect(row, row.txHash).to.include({ orderId: null, depositBindingId: null, counted: false });
    // Seen while nobody held the address: no_holder; seen only after the next order began: undecidable.
    expect(rows.find((r) => r.txHash === late.txHash)!.unattributedReason).to.equal('no_holder');
    expect(rows.find((r) => r.txHash === later.txHash)!.unattributedReason).to.equal('undecidable');
    expect(await orderRow(ctx, expired.id)).to.include({ status: 'expired', amountReceived: 0n });
    expect(await orderRow(ctx, next.id)).to.include({ status: 'pending', amountReceived: 0n });
  });
});
