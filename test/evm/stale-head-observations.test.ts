import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { createOrder } from '../../core/orders/orders';
import { chainHeadObservations, transfers } from '../../db/schema';
import { createTestOrg, testContext } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, settle } from '../helpers/evm';

/**
 * A head observed on a branch that is orphaned before the scanner reaches it (the scanner was
 * behind; the confirmations job had looked at the head) is no proof of when the block that
 * replaced it was mined (issue 25, found on Tron by the 10,000-payment simulation):
 *   - an order created after the look, paid in the replacement block, is credited (it was judged
 *     mined before the order began: no_holder, a missed payment);
 *   - a payment mined in the replacement block after an order ended is not credited to that
 *     order (it was judged mined before the end: a wrong credit).
 * The orphaning is an anvil snapshot reverted: the same heights, new blocks, mined later.
 */
describe('head observations of an orphaned branch the scanner never scanned (anvil)', function () {
  this.timeout(120_000);
  let chain: TestChain;

  before(async () => {
    chain = await startTestChain();
  });
  after(async () => chain?.stop());

  const newOrder = (ctx: ServiceContext, organizationId: string, amount = '2') =>
    createOrder(ctx, organizationId, { orderReference: `stale-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, amount, currency: 'USDT', chainId: LOCAL_CHAIN_ID });
  const observedAt = async (ctx: ServiceContext, height: number) =>
    (await ctx.db.select({ at: chainHeadObservations.firstSeenAt }).from(chainHeadObservations).where(eq(chainHeadObservations.headNumber, height)))[0]?.at;
  const blockHash = async (height: number) => (await chain.provider.send('eth_getBlockByNumber', [`0x${height.toString(16)}`, false]))?.hash as string | undefined;

  it('an order created after a look at a head that is then orphaned, paid in the replacement block, is credited', async () => {
    const ctx = testContext();
    const clock = ctx.clock as ManualClock;
    useTestChain(ctx.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    const org = await createTestOrg('stale look, new order');
    const [z] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await settle(ctx);

    // The confirmations job looks at the head H while the scanner has not scanned it.
    const fork = await chain.rpc<string>('evm_snapshot');
    await chain.mine(1);
    const h = await chain.head();
    const orphanedHash = await blockHash(h);
    clock.advance(500);
    await runChainConfirmations(ctx, LOCAL_CHAIN_ID);
    const lookedAt = await observedAt(ctx, h);
    expect(lookedAt, 'H observed on the old branch').to.not.equal(undefined);

    // Then the order begins, H is orphaned, and the order's payment is mined in the block that replaced it.
    clock.advance(500);
    const order = await newOrder(ctx, org.organizationId);
    expect(order.address).to.equal(z);
    clock.advance(500);
    expect(await chain.rpc('evm_revert', [fork])).to.equal(true);
    const paid = await chain.pay(z, 'USDT', 2_000_000n);
    expect(paid.blockNumber).to.equal(h);
    expect(paid.blockHash).to.not.equal(orphanedHash);
    await chain.mine(3);
    clock.advance(500);
    await settle(ctx);
    await settle(ctx);

    const [row] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash));
    expect(row).to.include({ orderId: order.id, unattributedReason: null, counted: true });
    expect(row.minedBy!.getTime(), 'dated by a look at the new branch').to.be.above(order.createdAt.getTime());
    expect(await orderRow(ctx, order.id)).to.include({ status: 'completed', amountReceived: 2_000_000n });
    expect(lookedAt!.getTime(), 'the orphaned look was before the order').to.be.below(order.createdAt.getTime());
  });

  it('a payment mined in a replacement block after an order ended is not credited to it, whatever was seen at that height before the end', async () => {
    const ctx = testContext();
    const clock = ctx.clock as ManualClock;
    useTestChain(ctx.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    const org = await createTestOrg('stale look, ended order');
    const [z] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await settle(ctx);

    const a = await newOrder(ctx, org.organizationId);
    expect(a.address).to.equal(z);
    clock.advance(500);
    await chain.pay(z, 'USDT', 2_000_000n);
    await runChainScan(ctx, LOCAL_CHAIN_ID); // A's payment recorded, 1 confirmation
    const fork = await chain.rpc<string>('evm_snapshot');

    // While A still holds Z, the confirmations job looks at H (not scanned); A completes one block later.
    await chain.mine(1);
    const h = await chain.head();
    const orphanedHash = await blockHash(h);
    clock.advance(500);
    await runChainConfirmations(ctx, LOCAL_CHAIN_ID);
    expect(await observedAt(ctx, h), 'H observed on the old branch, before A ended').to.not.equal(undefined);
    expect((await orderRow(ctx, a.id)).status).to.equal('pending');
    await chain.mine(1);
    clock.advance(500);
    await runChainConfirmations(ctx, LOCAL_CHAIN_ID);
    expect(await orderRow(ctx, a.id)).to.include({ status: 'completed', amountReceived: 2_000_000n });

    // After A ended, the branch is orphaned and a second payment to Z is mined in the block replacing H.
    clock.advance(500);
    expect(await chain.rpc('evm_revert', [fork])).to.equal(true);
    const late = await chain.pay(z, 'USDT', 2_000_000n);
    expect(late.blockNumber).to.equal(h);
    expect(late.blockHash).to.not.equal(orphanedHash);
    await chain.mine(3);
    clock.advance(500);
    await settle(ctx);
    await settle(ctx);

    const [row] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, late.txHash));
    expect(row, 'recorded').to.not.equal(undefined);
    expect(row).to.include({ orderId: null, depositBindingId: null, counted: false });
    expect(row.unattributedReason).to.be.oneOf(['undecidable', 'no_holder']);
    expect(await orderRow(ctx, a.id)).to.include({ status: 'completed', amountReceived: 2_000_000n });
  });
});
