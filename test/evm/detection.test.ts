import { expect } from 'chai';
import { eq, type SQL } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import { bindDepositReference } from '../../core/deposits/bindings';
import { createOrder } from '../../core/orders/orders';
import { addressAssignments, deposits, transfers } from '../../db/schema';
import { createTestOrg, testContext } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { eventsFor, orderRow, settle } from '../helpers/evm';

/**
 * The detection core's promises on a real EVM chain (anvil): a deep reorg never takes back a
 * credit and a re-mined transaction stays the same transfer; blocks stamped behind the service
 * clock are still credited to the order or deposit reference they pay (attribution goes by what
 * the scanner saw, test/evm/attribution-cases.test.ts has the hand-over cases).
 */
describe('detection on a local EVM chain: deep reorgs and clock skew (anvil)', function () {
  this.timeout(90_000);
  let chain: TestChain;
  let ctx: ServiceContext;
  let orgId: string;
  let n = 0;

  before(async () => {
    chain = await startTestChain();
    ctx = testContext();
    useTestChain(ctx.registry, chain);
    orgId = (await createTestOrg('detection org')).organizationId;
    await seedPoolAddresses(orgId, 'evm', 10);
    await resetCheckpointToHead(ctx, chain);
  });
  after(async () => chain?.stop());

  const raw = (hash: string) => chain.rpc<string>('eth_getRawTransactionByHash', [hash]);

  it('a confirmed deposit reorged deeper than its confirmations and re-mined behind another token transfer stays one deposit, its block updated', async () => {
    const reference = `deep-${Date.now()}`;
    await settle(ctx); // the scanner has looked at the head just before the binding
    const { binding } = await bindDepositReference(ctx, orgId, { depositReference: reference, protocol: 'evm' });
    await chain.mine(1);
    // Block M: a token mint to someone else; block M+1: the payment, alone (block log index 0).
    const mint = await chain.sendMint('0x000000000000000000000000000000000000dEaD', 'USDT', 1n);
    await chain.mine(1);
    const pay = await chain.sendMint(binding.address, 'USDT', 4_000_000n);
    await chain.mine(1);
    const payReceipt = (await chain.provider.getTransactionReceipt(pay))!;
    const mintReceipt = (await chain.provider.getTransactionReceipt(mint))!;
    await settle(ctx);
    await chain.mine(4);
    await settle(ctx);
    const [t] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, pay));
    expect(t).to.include({ status: 'confirmed', blockNumber: payReceipt.blockNumber, logIndex: 0, indexInTx: 0 });
    const [dep] = await ctx.db.select().from(deposits).where(eq(deposits.transferId, t.id));
    expect(dep.status).to.equal('confirmed');

    // Replace everything from M: both transactions re-mined together in one block, the payment behind the mint.
    const depth = (await chain.head()) - mintReceipt.blockNumber + 1;
    await chain.reorg(depth, [
      [await raw(mint), 1],
      [await raw(pay), 1],
    ]);
    const moved = (await chain.provider.getTransactionReceipt(pay))!;
    expect(moved.blockHash).to.not.equal(payReceipt.blockHash);
    await settle(ctx);
    await chain.mine(2);
    await settle(ctx);
    await settle(ctx);

    const rows = await ctx.db.select().from(transfers).where(eq(transfers.txHash, pay));
    expect(rows, JSON.stringify(rows.map((r) => [r.status, r.blockNumber, r.logIndex]))).to.have.length(1);
    expect(rows[0]).to.include({ id: t.id, status: 'confirmed', blockNumber: moved.blockNumber, blockHash: moved.blockHash, indexInTx: 0, credited: true });
    // Behind the mint's Transfer log in the same block: block log index 1, still index 0 in its transaction.
    expect(moved.logs[0].index).to.equal(1);
    expect(rows[0].logIndex).to.equal(1);
    const all = await ctx.db.select().from(deposits).where(eq(deposits.depositReference, reference));
    expect(all).to.have.length(1);
    expect(await eventsFor(ctx, 'deposit.confirmed', 'depositId', dep.id)).to.have.length(1);
    const alerts = await eventsFor(ctx, 'alert.reorg_beyond_confirmations', 'transferId', t.id);
    expect(alerts).to.have.length(1);
    expect(alerts[0].data).to.include({ depositId: dep.id, depositReference: reference, amount: '4', currency: 'USDT' });
  });

  /**
   * Blocks stamped behind the service clock: anvil's clock is set back to the last block's time,
   * so the payment's block carries a timestamp from before the order or binding was created.
   */
  async function laggingBlockAfter(create: () => Promise<string>): Promise<{ address: string; blockTime: number; createdAt: number }> {
    await chain.mine(1);
    await settle(ctx); // the scanner has seen the head
    const last = await chain.provider.getBlock('latest');
    // The wall clock moves past the last block's second (block times are whole seconds), so what is
    // created next is stamped after it: a wait for time to pass, never too short on a busy machine.
    await new Promise((r) => setTimeout(r, 1500));
    await chain.rpc('evm_setTime', [last!.timestamp]);
    const createdAt = Date.now();
    const address = await create();
    return { address, blockTime: last!.timestamp, createdAt };
  }

  /** When an assignment began and ended (the facts the skew rule decides from), in ms. */
  async function assignmentOf(where: SQL): Promise<{ startedAt: number; endedAt: number | null }> {
    const [a] = await ctx.db.select().from(addressAssignments).where(where);
    return { startedAt: a.startedAt.getTime(), endedAt: a.endedAt?.getTime() ?? null };
  }
  const assignmentStart = async (where: SQL) => (await assignmentOf(where)).startedAt;

  it('an order paid in a block stamped before its creation completes', async () => {
    let orderId = '';
    const { address, createdAt } = await laggingBlockAfter(async () => {
      const order = await createOrder(ctx, orgId, { orderReference: `skew-${++n}-${Date.now()}`, amount: '2', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
      orderId = order.id;
      return order.address;
    });
    const paid = await chain.pay(address, 'USDT', 2_000_000n);
    const block = await chain.provider.getBlock(paid.blockNumber);
    expect(block!.timestamp * 1000, 'the block is stamped before the order').to.be.lessThan(createdAt);
    await chain.mine(3);
    await settle(ctx);
    await chain.rpc('evm_setTime', [Math.floor(Date.now() / 1000)]);
    const row = await orderRow(ctx, orderId);
    expect(row.status).to.equal('completed');
    expect(await eventsFor(ctx, 'order.completed', 'orderId', orderId)).to.have.length(1);
  });

  it('a deposit reference paid in a block stamped before its binding is credited', async () => {
    const reference = `skew-dep-${Date.now()}`;
    let bindingId = '';
    const { address, blockTime, createdAt } = await laggingBlockAfter(async () => {
      const { binding } = await bindDepositReference(ctx, orgId, { depositReference: reference, protocol: 'evm' });
      bindingId = binding.bindingId;
      return binding.address;
    });
    const paid = await chain.pay(address, 'USDC', 3_000_000n);
    // The payment's block really is stamped before the binding began (its stored assignment start).
    const block = (await chain.provider.getBlock(paid.blockNumber))!;
    expect(block.timestamp, 'stamped at the lagging clock').to.be.at.most(blockTime + 1);
    const startedAt = await assignmentStart(eq(addressAssignments.depositBindingId, bindingId));
    expect(startedAt).to.be.at.least(createdAt);
    expect(block.timestamp * 1000, 'the block is stamped before the binding').to.be.lessThan(startedAt);
    await chain.mine(3);
    await settle(ctx);
    await chain.rpc('evm_setTime', [Math.floor(Date.now() / 1000)]);
    const [t] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash));
    expect(t.depositBindingId).to.be.a('string');
    const [dep] = await ctx.db.select().from(deposits).where(eq(deposits.transferId, t.id));
    expect(dep).to.include({ status: 'confirmed', depositReference: reference });
    expect(await eventsFor(ctx, 'deposit.confirmed', 'depositId', dep.id)).to.have.length(1);
  });
});
