import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { recomputeOrder } from '../../core/orders/order-state';
import { createOrder } from '../../core/orders/orders';
import { bindDepositReference } from '../../core/deposits/bindings';
import { deposits, poolAddresses, transfers } from '../../db/schema';
import { createTestOrg, testContext } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { eventsFor, orderRow, orderTransfers, settle } from '../helpers/evm';

describe('evm payments to orders and deposit references (anvil)', function () {
  this.timeout(60_000);
  let chain: TestChain;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let orgId: string;
  let n = 0;

  before(async () => {
    chain = await startTestChain();
    ctx = testContext();
    clock = ctx.clock as ManualClock;
    useTestChain(ctx.registry, chain);
    orgId = (await createTestOrg('evm payments org')).organizationId;
    await seedPoolAddresses(orgId, 'evm', 40);
    await resetCheckpointToHead(ctx, chain);
  });
  after(async () => chain?.stop());

  const newOrder = (amount: string, extra: { currency?: string; paymentWindowMinutes?: number; graceMinutes?: number } = {}) =>
    createOrder(ctx, orgId, { orderReference: `evm-${++n}-${Date.now()}`, amount, currency: extra.currency ?? 'USDT', chainId: LOCAL_CHAIN_ID, paymentWindowMinutes: extra.paymentWindowMinutes, graceMinutes: extra.graceMinutes, metadata: { n } });

  it('exact payment: pending until exactly the required confirmations, then completed with one order.completed', async () => {
    const order = await newOrder('25.5');
    expect(order.requiredConfirmations).to.equal(3);
    const paid = await chain.pay(order.address, 'USDT', 25_500_000n);
    await settle(ctx); // 1 confirmation
    let row = await orderRow(ctx, order.id);
    expect(row.status).to.equal('pending');
    expect(row.amountReceived).to.equal(25_500_000n);
    let [t] = await orderTransfers(ctx, order.id);
    expect(t).to.include({ status: 'pending', confirmations: 1, counted: true, credited: false });
    await chain.mine(1);
    await settle(ctx); // 2
    expect((await orderRow(ctx, order.id)).status).to.equal('pending');
    [t] = await orderTransfers(ctx, order.id);
    expect(t.confirmations).to.equal(2);
    await chain.mine(1);
    await settle(ctx); // 3
    row = await orderRow(ctx, order.id);
    expect(row).to.include({ status: 'completed', txHash: paid.txHash, blockNumber: paid.blockNumber, confirmations: 3 });
    [t] = await orderTransfers(ctx, order.id);
    expect(t).to.include({ status: 'confirmed', confirmations: 3, credited: true });
    await chain.mine(2);
    await settle(ctx);
    const completed = await eventsFor(ctx, 'order.completed', 'orderId', order.id);
    expect(completed).to.have.length(1);
    expect(completed[0].data).to.include({ orderId: order.id, status: 'completed', amount: '25.5', amountReceived: '25.5', txHash: paid.txHash, blockNumber: paid.blockNumber, confirmations: 3, currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    const [address] = await ctx.db.select().from(poolAddresses).where(eq(poolAddresses.id, order.poolAddressId));
    expect(address.status).to.equal('cooldown');
  });

  it('two partial payments that add up complete the order; amountReceived is their sum', async () => {
    const order = await newOrder('10');
    await chain.pay(order.address, 'USDT', 4_000_000n);
    await settle(ctx);
    expect((await orderRow(ctx, order.id)).amountReceived).to.equal(4_000_000n);
    await chain.pay(order.address, 'USDT', 6_000_000n);
    await chain.mine(2);
    await settle(ctx);
    const row = await orderRow(ctx, order.id);
    expect(row.status).to.equal('completed');
    expect(row.amountReceived).to.equal(10_000_000n);
    expect(await eventsFor(ctx, 'order.completed', 'orderId', order.id)).to.have.length(1);
    expect((await orderTransfers(ctx, order.id)).every((t) => t.credited && t.status === 'confirmed')).to.equal(true);
  });

  it('overpayment completes; amountReceived shows the excess', async () => {
    const order = await newOrder('5', { currency: 'DAI' });
    await chain.pay(order.address, 'DAI', 7n * 10n ** 18n + 1n);
    await chain.mine(2);
    await settle(ctx);
    const row = await orderRow(ctx, order.id);
    expect(row.status).to.equal('completed');
    expect(row.amountReceived).to.equal(7n * 10n ** 18n + 1n);
    const [event] = await eventsFor(ctx, 'order.completed', 'orderId', order.id);
    expect(event.data).to.include({ amount: '5', amountReceived: '7.000000000000000001' });
  });

  it('wrong token on the right chain: recorded and attributed, not counted, order stays pending', async () => {
    const order = await newOrder('3');
    await chain.pay(order.address, 'USDC', 3_000_000n);
    await chain.mine(3);
    await settle(ctx);
    const [t] = await orderTransfers(ctx, order.id);
    expect(t).to.include({ currency: 'USDC', orderId: order.id, counted: false, credited: false, status: 'confirmed' });
    const row = await orderRow(ctx, order.id);
    expect(row.status).to.equal('pending');
    expect(row.amountReceived).to.equal(0n);
  });

  it('payment after the grace end: recorded, attributed, not counted, never completes the order', async () => {
    clock.advance(-20 * 60_000); // the order was created 20 minutes ago: its grace ended 5 minutes ago
    const order = await newOrder('2', { paymentWindowMinutes: 10, graceMinutes: 5 });
    clock.advance(20 * 60_000);
    await chain.pay(order.address, 'USDT', 2_000_000n);
    await chain.mine(3);
    await settle(ctx);
    const [t] = await orderTransfers(ctx, order.id);
    expect(t).to.include({ orderId: order.id, counted: false, credited: false });
    expect((await orderRow(ctx, order.id)).status).to.not.equal('completed');
    expect(await eventsFor(ctx, 'order.completed', 'orderId', order.id)).to.have.length(0);
  });

  it('a payment to an address after its order finished is kept unattributed, never credited to anyone', async () => {
    const order = await newOrder('1');
    await chain.pay(order.address, 'USDT', 1_000_000n);
    await chain.mine(2);
    await settle(ctx);
    expect((await orderRow(ctx, order.id)).status).to.equal('completed');
    // The next block is in a later second than the release (block times are whole seconds).
    await chain.rpc('evm_setNextBlockTimestamp', [Math.floor(clock.now().getTime() / 1000) + 1]);
    const late = await chain.pay(order.address, 'USDT', 9_000_000n);
    await chain.mine(3);
    await settle(ctx);
    const [t] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, late.txHash));
    expect(t).to.include({ orderId: null, depositBindingId: null, organizationId: orgId, counted: false, credited: false });
    expect((await orderRow(ctx, order.id)).amountReceived).to.equal(1_000_000n);
  });

  it('a reorg removing a pending payment drops it and the order is not completed', async () => {
    const order = await newOrder('8');
    await chain.pay(order.address, 'USDT', 8_000_000n);
    await settle(ctx);
    expect((await orderRow(ctx, order.id)).amountReceived).to.equal(8_000_000n);
    await chain.reorg(1);
    await chain.mine(5);
    await settle(ctx);
    await settle(ctx);
    const [t] = await orderTransfers(ctx, order.id);
    expect(t.status).to.equal('dropped');
    const row = await orderRow(ctx, order.id);
    expect(row.status).to.equal('pending');
    expect(row.amountReceived).to.equal(0n);
    expect(await eventsFor(ctx, 'order.completed', 'orderId', order.id)).to.have.length(0);
  });

  it('a reorg moving a pending payment to another block credits it once', async () => {
    const order = await newOrder('6');
    // anvil gives the replacement blocks of anvil_reorg the time of the fork point: mine that block
    // after the order exists, as on a real chain where new blocks are never older than the order.
    await chain.mine(1);
    const paid = await chain.pay(order.address, 'USDT', 6_000_000n);
    const block = await chain.provider.getBlock(paid.blockNumber);
    const raws = await Promise.all(block!.transactions.map((h) => chain.rpc<string>('eth_getRawTransactionByHash', [h])));
    await chain.mine(1);
    await settle(ctx); // recorded in block P, 2 confirmations
    expect((await orderTransfers(ctx, order.id))[0]).to.include({ blockNumber: paid.blockNumber, status: 'pending' });
    // Blocks P and P+1 replaced: the payment now sits in the new P+1.
    await chain.reorg(2, raws.map((r) => [r, 1] as [string, number]));
    const newP = await chain.provider.send('eth_getBlockByNumber', [`0x${paid.blockNumber.toString(16)}`, false]);
    expect(newP.hash, 'anvil_reorg replaced block P').to.not.equal(paid.blockHash);
    await settle(ctx); // reorg found, rescanned
    await chain.mine(2);
    await settle(ctx);
    await settle(ctx);
    const rows = await orderTransfers(ctx, order.id);
    const receipt = await chain.provider.getTransactionReceipt(paid.txHash);
    const dump = JSON.stringify({ paid, moved: receipt && { block: receipt.blockNumber, hash: receipt.blockHash }, rows: rows.map((r) => [r.status, r.blockNumber, r.blockHash]) });
    // The same transfer (design.md §4b): its one row, dropped by the reorg, moved to the new block.
    expect(rows, dump).to.have.length(1);
    const live = rows.filter((r) => r.status !== 'dropped');
    expect(live).to.have.length(1);
    expect(live[0]).to.include({ txHash: paid.txHash, status: 'confirmed', credited: true, blockNumber: paid.blockNumber + 1 });
    expect(live[0].blockHash).to.not.equal(paid.blockHash);
    const row = await orderRow(ctx, order.id);
    expect(row.status).to.equal('completed');
    expect(row.amountReceived).to.equal(6_000_000n);
    expect(await eventsFor(ctx, 'order.completed', 'orderId', order.id)).to.have.length(1);
  });

  it('deposit reference on evm: payment goes pending → confirmed → completed with one event each', async () => {
    const reference = `user-${Date.now()}`;
    const { binding } = await bindDepositReference(ctx, orgId, { depositReference: reference, protocol: 'evm', metadata: { user: 'u1' } });
    const paid = await chain.pay(binding.address, 'DAI', 15n * 10n ** 17n);
    await settle(ctx);
    const [t] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash));
    const [dep] = await ctx.db.select().from(deposits).where(eq(deposits.transferId, t.id));
    expect(dep).to.include({ status: 'pending', depositReference: reference });
    expect(await eventsFor(ctx, 'deposit.pending', 'depositId', dep.id)).to.have.length(1);
    const required = dep.requiredConfirmations;
    await chain.mine(required - 2);
    await settle(ctx);
    expect((await ctx.db.select().from(deposits).where(eq(deposits.id, dep.id)))[0].status).to.equal('pending');
    await chain.mine(1);
    await settle(ctx);
    expect((await ctx.db.select().from(deposits).where(eq(deposits.id, dep.id)))[0].status).to.equal('confirmed');
    const confirmed = await eventsFor(ctx, 'deposit.confirmed', 'depositId', dep.id);
    expect(confirmed).to.have.length(1);
    expect(confirmed[0].data).to.include({ depositReference: reference, amount: '1.5', currency: 'DAI', txHash: paid.txHash });
    await chain.mine(12);
    await settle(ctx);
    await settle(ctx);
    expect((await ctx.db.select().from(deposits).where(eq(deposits.id, dep.id)))[0].status).to.equal('completed');
    expect(await eventsFor(ctx, 'deposit.pending', 'depositId', dep.id)).to.have.length(1);
    expect(await eventsFor(ctx, 'deposit.confirmed', 'depositId', dep.id)).to.have.length(1);
  });

  it('one partial payment: the order expires with its amountReceived once grace and scan are past', async () => {
    const order = await newOrder('20', { paymentWindowMinutes: 1, graceMinutes: 0 });
    await chain.pay(order.address, 'USDT', 7_250_000n);
    await chain.mine(2);
    await settle(ctx);
    expect((await orderRow(ctx, order.id)).status).to.equal('pending');
    // Time passes on the chain and the clock; the scanner moves past the grace end.
    clock.advance(2 * 60_000);
    await chain.rpc('evm_increaseTime', [120]);
    await chain.mine(1);
    await settle(ctx);
    // What the expiry job does: ask the one order function.
    const status = await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, order.id));
    expect(status).to.equal('expired');
    const row = await orderRow(ctx, order.id);
    expect(row.amountReceived).to.equal(7_250_000n);
    const [expired] = await eventsFor(ctx, 'order.expired', 'orderId', order.id);
    expect(expired.data).to.include({ amountReceived: '7.25', status: 'expired' });
  });
});
