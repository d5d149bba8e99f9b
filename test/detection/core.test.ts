import { expect } from 'chai';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { CHAIN_DEFINITIONS } from '../../core/chains/chains.data';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { getCheckpoint } from '../../core/detection/checkpoints';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { attributeTransfer, type AssignmentSpan } from '../../core/detection/attribution';
import { updateConfirmations } from '../../core/detection/confirmations';
import { currentRangeSize, scanChain, scanChainOnce } from '../../core/detection/scan';
import { bindDepositReference, unbindDepositReference } from '../../core/deposits/bindings';
import { setConfigValue } from '../../core/organizations/org-config';
import { createOrder } from '../../core/orders/orders';
import { chainCheckpoints, events, orders, transfers } from '../../db/schema';
import { createTestOrg, testContext } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { MemoryChain, newTxHash } from './memory-chain';

/**
 * The detection core against an in-memory chain adapter (no RPC, real Postgres): reorgs, gaps,
 * duplicate answers, the compare-and-set checkpoint, deep reorgs and the clock-skew rule.
 */
describe('detection core with an in-memory chain', function () {
  this.timeout(30_000);
  let n = 0;

  /** A fresh chain id per test: its own checkpoint and transfers. */
  function setUp(): { ctx: ServiceContext; chain: MemoryChain } {
    const chainId = `memory-${Date.now().toString(36)}-${n++}`;
    const base = CHAIN_DEFINITIONS.find((d) => d.chainId === 'ethereum-local')!;
    const ctx = testContext();
    ctx.registry = new ChainRegistry('local', [{ ...base, chainId }], SCANNED_FAMILIES);
    ctx.registry.setTokenAddress(chainId, 'USDT', '0x00000000000000000000000000000000000000aa', 6);
    const chain = new MemoryChain(ctx.registry.get(chainId)!, Math.floor(Date.now() / 1000) - 100);
    return { ctx, chain };
  }

  const rowsOf = (ctx: ServiceContext, chainId: string) => ctx.db.select().from(transfers).where(eq(transfers.chainId, chainId));

  it('starts at the head, records each transfer once whatever the provider repeats, and moves the checkpoint', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org 1');
    const [to] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    chain.mineEmpty(3);
    expect((await scanChainOnce(ctx, chain)).status).to.equal('initialized');
    const tx = newTxHash();
    chain.mine([
      { txHash: tx, to, amount: 5n },
      { txHash: tx, to, amount: 6n },
    ]);
    chain.mine([{ txHash: newTxHash(), to: '0x00000000000000000000000000000000000000cc', amount: 1n }]);
    chain.duplicateAnswers = true;
    const run = await scanChain(ctx, chain);
    expect(run.lastStatus).to.equal('idle');
    // Scanned again from below: still two rows (identity chain, tx, index in tx).
    await ctx.db.update(chainCheckpoints).set({ blockNumber: 3, blockHash: chain.blocks[3].hash }).where(eq(chainCheckpoints.chainId, chain.chain.chainId));
    await scanChain(ctx, chain);
    const rows = await rowsOf(ctx, chain.chain.chainId);
    expect(rows.map((r) => [r.indexInTx, r.amount]).sort()).to.deep.equal([
      [0, 5n],
      [1, 6n],
    ]);
    expect(rows.map((r) => r.logIndex).sort()).to.deep.equal([0, 1]);
    expect((await getCheckpoint(ctx.db, chain.chain.chainId))!.blockNumber).to.equal(chain.tip.number);
  });

  it('a block the provider does not have yet (gap) stops the range without moving the checkpoint', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org 2');
    const [to] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await scanChainOnce(ctx, chain);
    chain.mine([{ txHash: newTxHash(), to, amount: 7n }]);
    chain.mineEmpty(4);
    chain.maxRange = 3;
    chain.missing.add(3);
    const step = await scanChainOnce(ctx, chain);
    expect(step.status).to.equal('unstable');
    // The provider's range limit was met on the way: the range shrank to it.
    expect(currentRangeSize(ctx, chain.chain.chainId)).to.be.at.most(3);
    expect((await getCheckpoint(ctx.db, chain.chain.chainId))!.blockNumber).to.equal(0);
    chain.missing.clear();
    const run = await scanChain(ctx, chain);
    expect(run.lastStatus).to.equal('idle');
    expect(await rowsOf(ctx, chain.chain.chainId)).to.have.length(1);
    expect((await getCheckpoint(ctx.db, chain.chain.chainId))!.blockNumber).to.equal(chain.tip.number);
  });

  it('a scan whose checkpoint another worker moved meanwhile writes nothing (compare-and-set)', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org 3');
    const [to] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await scanChainOnce(ctx, chain);
    chain.mine([{ txHash: newTxHash(), to, amount: 9n }]);
    chain.mineEmpty(2);
    chain.onRangeRead = async () => {
      await ctx.db.update(chainCheckpoints).set({ blockNumber: 1, blockHash: chain.blocks[1].hash }).where(eq(chainCheckpoints.chainId, chain.chain.chainId));
    };
    expect((await scanChainOnce(ctx, chain)).status).to.equal('conflict');
    expect(await rowsOf(ctx, chain.chain.chainId)).to.have.length(0);
    expect((await getCheckpoint(ctx.db, chain.chain.chainId))!.blockNumber).to.equal(1);
  });

  it('confirmations keep the blocks already verified when the provider fails midway, and the next run goes on', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org confirmations');
    const to = await seedPoolAddresses(org.organizationId, 'evm', 3);
    chain.mineEmpty(2);
    expect((await scanChainOnce(ctx, chain)).status).to.equal('initialized');
    const paid = to.map((address, i) => chain.mine([{ txHash: newTxHash(), to: address, amount: BigInt(i + 1) }]));
    chain.mineEmpty(5);
    await scanChain(ctx, chain);
    const statusByBlock = async () =>
      Object.fromEntries((await rowsOf(ctx, chain.chain.chainId)).map((r) => [r.blockNumber, r.status])) as Record<number, string>;
    expect(Object.values(await statusByBlock())).to.deep.equal(['pending', 'pending', 'pending']);
    chain.failing.add(paid[1].number);
    let failed: unknown = null;
    await updateConfirmations(ctx, chain).catch((err) => (failed = err));
    expect(String(failed)).to.include(`provider error at block ${paid[1].number}`);
    expect(await statusByBlock()).to.deep.equal({ [paid[0].number]: 'confirmed', [paid[1].number]: 'pending', [paid[2].number]: 'pending' });
    chain.failing.clear();
    await updateConfirmations(ctx, chain);
    expect(Object.values(await statusByBlock())).to.deep.equal(['confirmed', 'confirmed', 'confirmed']);
  });

  it('a reorg drops the pending transfers of orphaned blocks and records the re-mined transaction', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org 4');
    const [to] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await scanChainOnce(ctx, chain);
    const tx = newTxHash();
    chain.mine([{ txHash: tx, to, amount: 11n }]);
    chain.mineEmpty(1);
    await scanChain(ctx, chain);
    chain.reorgFrom(1);
    chain.mine([{ txHash: tx, to, amount: 11n }]);
    const run = await scanChain(ctx, chain);
    expect(run.lastStatus).to.equal('idle');
    const rows = await rowsOf(ctx, chain.chain.chainId);
    expect(rows.map((r) => r.status).sort()).to.deep.equal(['dropped', 'pending']);
    const live = rows.find((r) => r.status === 'pending')!;
    expect(live.blockNumber).to.equal(chain.tip.number);
    expect(live.blockHash).to.equal(chain.tip.hash);
  });

  it('a reorg deeper than the confirmations keeps the credit (reorged, alert), and the re-mined transfer moves back to confirmed', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org 5');
    const [to] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await scanChainOnce(ctx, chain);
    const tx = newTxHash();
    chain.mine([{ txHash: tx, to, amount: 13n }]);
    chain.mineEmpty(3);
    await scanChain(ctx, chain);
    await updateConfirmations(ctx, chain);
    let [row] = await rowsOf(ctx, chain.chain.chainId);
    expect(row.status).to.equal('confirmed');
    chain.reorgFrom(1);
    await scanChainOnce(ctx, chain);
    [row] = await rowsOf(ctx, chain.chain.chainId);
    expect(row.status).to.equal('reorged');
    const alerts = await ctx.db
      .select()
      .from(events)
      .where(and(eq(events.type, 'alert.reorg_beyond_confirmations'), sql`${events.data}->>'transferId' = ${row.id}`));
    expect(alerts).to.have.length(1);
    // Amounts on the wire are decimal strings in token units: 13 base units of a 6-decimal token.
    expect(alerts[0].data).to.include({ chainId: chain.chain.chainId, transferId: row.id, depth: 4, amount: '0.000013', currency: 'USDT' });
    // The same transaction, mined again later behind another transfer in its block.
    chain.mineEmpty(2);
    const moved = chain.mine([
      { txHash: newTxHash(), to: '0x00000000000000000000000000000000000000cc', amount: 1n },
      { txHash: tx, to, amount: 13n },
    ]);
    await scanChain(ctx, chain);
    const rows = await rowsOf(ctx, chain.chain.chainId);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ id: row.id, status: 'confirmed', blockNumber: moved.number, blockHash: moved.hash, logIndex: 1, indexInTx: 0 });
  });

  describe('clock skew (blocks stamped before the assignment began)', () => {
    async function orderAt(ctx: ServiceContext, chain: MemoryChain, organizationId: string) {
      return createOrder(ctx, organizationId, { orderReference: `skew-${newTxHash().slice(2, 14)}`, amount: '0.00002', currency: 'USDT', chainId: chain.chain.chainId });
    }

    it('credits an order paid in a block stamped before its creation, mined after it', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory skew 1');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      const order = await orderAt(ctx, chain, org.organizationId);
      // The block comes after the order (its number is above the head seen) but is stamped 3 s before it.
      chain.mine([{ txHash: newTxHash(), to: order.address, amount: 20n }], Math.floor(order.createdAt.getTime() / 1000) - 3);
      chain.mineEmpty(3);
      await scanChain(ctx, chain);
      await updateConfirmations(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ orderId: order.id, counted: true, status: 'confirmed' });
      const [after] = await ctx.db.select().from(orders).where(eq(orders.id, order.id));
      expect(after.status).to.equal('completed');
    });

    it('leaves unattributed a block stamped before the order that the scanner had already seen', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory skew 2');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      await scanChainOnce(ctx, chain);
      const addressRows = await ctx.db.execute(sql`select address from pool_addresses where organization_id = ${org.organizationId}`);
      const address = (addressRows as unknown as { address: string }[])[0].address;
      // Paid before the order existed, and seen by the scanner (head) before the order was created.
      chain.mine([{ txHash: newTxHash(), to: address, amount: 20n }], Math.floor(Date.now() / 1000) - 1);
      await chain.head().then((h) => ctx.db.update(chainCheckpoints).set({ headNumber: h.number }).where(eq(chainCheckpoints.chainId, chain.chain.chainId)));
      const order = await orderAt(ctx, chain, org.organizationId);
      await scanChain(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row.orderId).to.equal(null);
      expect(order.address).to.equal(address);
    });

    it('cooldown 0: a duplicate payment for a completed order, stamped before the next order on its address, stays unattributed', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory skew cooldown');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      await setConfigValue(ctx.db, org.organizationId, 'address_pool.cooldown_minutes', 0);
      await scanChain(ctx, chain);
      const first = await orderAt(ctx, chain, org.organizationId);
      chain.mine([{ txHash: newTxHash(), to: first.address, amount: 20n }], Math.floor(Date.now() / 1000));
      chain.mineEmpty(3);
      await scanChain(ctx, chain);
      await updateConfirmations(ctx, chain);
      expect((await ctx.db.select().from(orders).where(eq(orders.id, first.id)))[0].status).to.equal('completed');
      // The address is free again at once; the next order takes it two seconds later, before the
      // scanner sees the duplicate payment mined in between (stamped after the first order ended).
      (ctx.clock as ManualClock).advance(2000);
      const second = await orderAt(ctx, chain, org.organizationId);
      expect(second.address).to.equal(first.address);
      const duplicate = newTxHash();
      chain.mine([{ txHash: duplicate, to: first.address, amount: 20n }], Math.floor(second.createdAt.getTime() / 1000) - 1);
      await scanChain(ctx, chain);
      const [row] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, duplicate));
      expect(row).to.include({ orderId: null, depositBindingId: null, counted: false });
      expect((await ctx.db.select().from(orders).where(eq(orders.id, second.id)))[0].amountReceived).to.equal(0n);
    });

    it('unbind then rebind within S: a payment stamped before the new binding stays unattributed', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory skew rebind');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      await setConfigValue(ctx.db, org.organizationId, 'address_pool.unbind_cooldown_minutes', 0);
      await scanChain(ctx, chain);
      await bindDepositReference(ctx, org.organizationId, { depositReference: 'user-a', protocol: 'evm' });
      await unbindDepositReference(ctx, org.organizationId, { depositReference: 'user-a', protocol: 'evm' });
      (ctx.clock as ManualClock).advance(2000);
      const { binding } = await bindDepositReference(ctx, org.organizationId, { depositReference: 'user-b', protocol: 'evm' });
      const tx = newTxHash();
      chain.mine([{ txHash: tx, to: binding.address, amount: 20n }], Math.floor(ctx.clock.now().getTime() / 1000) - 1);
      await scanChain(ctx, chain);
      const [row] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, tx));
      expect(row).to.include({ orderId: null, depositBindingId: null });
    });

    it('the same history scanned live and after an outage gives the same attribution', async () => {
      const live = setUp();
      const org = await createTestOrg('memory skew 3');
      await seedPoolAddresses(org.organizationId, 'evm', 3);
      const { ctx, chain } = live;
      await scanChain(ctx, chain);
      const paid: Record<string, string> = {};
      for (let i = 0; i < 3; i++) {
        const order = await orderAt(ctx, chain, org.organizationId);
        const tx = newTxHash();
        paid[tx] = order.id;
        chain.mine([{ txHash: tx, to: order.address, amount: 20n }], Math.floor(order.createdAt.getTime() / 1000) - 2);
        await scanChain(ctx, chain);
      }
      const liveRows = await rowsOf(ctx, chain.chain.chainId);
      // The outage: forget what was recorded, rescan the whole history at once.
      await ctx.db.delete(transfers).where(inArray(transfers.id, liveRows.map((r) => r.id)));
      await ctx.db.update(chainCheckpoints).set({ blockNumber: 0, blockHash: chain.blocks[0].hash }).where(eq(chainCheckpoints.chainId, chain.chain.chainId));
      await scanChain(ctx, chain);
      const caughtUp = await rowsOf(ctx, chain.chain.chainId);
      const byTx = (rows: typeof liveRows) => Object.fromEntries(rows.map((r) => [r.txHash, r.orderId]));
      expect(byTx(liveRows)).to.deep.equal(paid);
      expect(byTx(caughtUp)).to.deep.equal(paid);
    });
  });
});

describe('detection core: attribution rule (pure)', () => {
  const S = 62;
  const t0 = new Date('2026-01-01T12:00:00.000Z').getTime();
  const span = (id: number, start: number, end: number | null, head = 100): AssignmentSpan => ({
    assignmentId: id,
    poolAddressId: 1,
    kind: 'order',
    orderId: `ord_${id}`,
    depositBindingId: null,
    startedAt: new Date(t0 + start * 1000),
    endedAt: end === null ? null : new Date(t0 + end * 1000),
    headsSeen: { c: head },
  });
  const at = (seconds: number, blockNumber = 101) => ({ poolAddressId: 1, chainId: 'c', blockNumber, blockTime: new Date(t0 + seconds * 1000) });

  it('the holder at the block time wins', () => {
    expect(attributeTransfer([span(1, 0, 100), span(2, 200, null)], at(50), S)?.assignmentId).to.equal(1);
  });
  it('the next assignment, when it began at most S after the block, the block is newer than its head and the previous ended S before', () => {
    expect(attributeTransfer([span(1, -500, -100), span(2, 3, null)], at(0), S)?.assignmentId).to.equal(2);
    expect(attributeTransfer([span(2, 3, null)], at(0), S)?.assignmentId).to.equal(2);
  });
  it('not when it began more than S after the block', () => {
    expect(attributeTransfer([span(2, S + 1, null)], at(0), S)).to.equal(null);
  });
  it('not when the block existed when it began (number at or below the head seen)', () => {
    expect(attributeTransfer([span(2, 3, null, 101)], at(0, 101), S)).to.equal(null);
  });
  it('not when the previous assignment ended less than S before it began (cooldown 0, unbind and rebind)', () => {
    // A duplicate payment after the previous order completed, the next order 1 s after it ended.
    expect(attributeTransfer([span(1, -100, -1), span(2, 0.5, null)], at(0), S)).to.equal(null);
  });
  it('nobody after it: unattributed (late payment to an expired order before the next)', () => {
    expect(attributeTransfer([span(1, -100, -10)], at(0), S)).to.equal(null);
  });
});
