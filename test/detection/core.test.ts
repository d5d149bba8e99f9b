import { expect } from 'chai';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { CHAIN_DEFINITIONS } from '../../core/chains/chains.data';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { getCheckpoint } from '../../core/chains/checkpoints';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { attributeTransfer, CANDIDATE_NEXT_WINDOW_MS, CANDIDATE_PREVIOUS_WINDOW_MS, unattributedCandidates, type AssignmentSpan } from '../../core/detection/attribution';
import { updateConfirmations } from '../../core/detection/confirmations';
import { recordHeadObservation } from '../../core/detection/head-observations';
import { currentRangeSize, scanChain, scanChainOnce, TRANSFERS_PER_RANGE } from '../../core/detection/scan';
import { bindDepositReference, unbindDepositReference } from '../../core/deposits/bindings';
import { setConfigValue } from '../../core/organizations/org-config';
import { createOrder } from '../../core/orders/orders';
import { chainCheckpoints, deposits, events, orders, transfers } from '../../db/schema';
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

  it('a scanner behind a provider that fails a small share of its calls still catches up (a failed range is read in halves)', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org flaky');
    const [to] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await scanChainOnce(ctx, chain);
    chain.mineEmpty(1500);
    const paid = chain.mine([{ txHash: newTxHash(), to, amount: 9n }]);
    chain.mineEmpty(5);
    // One block read in 40 fails: a range longer than that (the first is 500) can never be read whole.
    chain.failEveryNthBlockRead = 40;
    let failures = 0;
    for (let i = 0; i < 400 && (await getCheckpoint(ctx.db, chain.chain.chainId))!.blockNumber < chain.tip.number; i++) {
      await scanChainOnce(ctx, chain).catch(() => failures++);
    }
    expect(failures, 'the provider did fail').to.be.greaterThan(0);
    expect((await getCheckpoint(ctx.db, chain.chain.chainId))!.blockNumber).to.equal(chain.tip.number);
    const rows = await rowsOf(ctx, chain.chain.chainId);
    expect(rows.map((r) => [r.blockNumber, r.amount])).to.deep.equal([[paid.number, 9n]]);
  });

  it('on a dense chain a range holds about TRANSFERS_PER_RANGE transfers: after a range that held more, the next is sized down to it, and grows only while it stays under', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org dense');
    const [to] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await scanChainOnce(ctx, chain);
    // 1,000 transfers a block to addresses outside the pool (a busy token's traffic), 60 blocks.
    const busyBlock = (b: number) => Array.from({ length: 1000 }, (_, i) => ({ txHash: newTxHash(), to: `0x${(b * 1000 + i + 1).toString(16).padStart(40, '0')}`, amount: 1n }));
    for (let b = 0; b < 59; b++) chain.mine(busyBlock(b));
    const paid = chain.mine([...busyBlock(59), { txHash: newTxHash(), to, amount: 9n }]);
    const perRange = TRANSFERS_PER_RANGE / 1000;

    const first = await scanChainOnce(ctx, chain); // the first range (500 blocks) reads all 60
    expect([first.status, first.toBlock! - first.fromBlock! + 1, first.logs]).to.deep.equal(['scanned', 60, 60_001]);
    expect(currentRangeSize(ctx, chain.chain.chainId)).to.equal(Math.floor((60 * TRANSFERS_PER_RANGE) / 60_001));
    expect((await rowsOf(ctx, chain.chain.chainId)).map((r) => [r.blockNumber, r.amount])).to.deep.equal([[paid.number, 9n]]);

    for (let b = 0; b < 3 * perRange; b++) chain.mine(busyBlock(100 + b));
    const spans: number[] = [];
    for (let step = await scanChainOnce(ctx, chain); step.status === 'scanned'; step = await scanChainOnce(ctx, chain)) {
      spans.push(step.toBlock! - step.fromBlock! + 1);
      expect(step.logs).to.be.at.most(TRANSFERS_PER_RANGE);
    }
    expect(spans.reduce((a, b) => a + b, 0)).to.equal(3 * perRange);
    expect(Math.max(...spans)).to.be.at.most(perRange);
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
    // Unattributed transfers only: the failed block ends their turn, not the run (deposits still complete after them).
    await updateConfirmations(ctx, chain);
    expect(await statusByBlock()).to.deep.equal({ [paid[0].number]: 'confirmed', [paid[1].number]: 'pending', [paid[2].number]: 'pending' });
    chain.failing.clear();
    await updateConfirmations(ctx, chain);
    expect(Object.values(await statusByBlock())).to.deep.equal(['confirmed', 'confirmed', 'confirmed']);
  });

  it('a payer\'s confirmation does not wait behind a backlog of unattributed transfers (after an outage): its block is verified first', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org confirmation backlog');
    const addresses = await seedPoolAddresses(org.organizationId, 'evm', 2);
    chain.mineEmpty(2);
    expect((await scanChainOnce(ctx, chain)).status).to.equal('initialized');
    const order = await createOrder(ctx, org.organizationId, { orderReference: `backlog-${newTxHash().slice(2, 14)}`, amount: '0.00002', currency: 'USDT', chainId: chain.chain.chainId });
    const stray = addresses.find((a) => a !== order.address)!;
    // Strays to the address nobody holds, in the blocks before the order's payment.
    const strayBlocks = [1, 2, 3].map((i) => chain.mine([{ txHash: newTxHash(), to: stray, amount: BigInt(i) }]));
    chain.mine([{ txHash: newTxHash(), to: order.address, amount: 20n }]);
    chain.mineEmpty(5);
    await scanChain(ctx, chain);
    // The provider fails on the first stray block: the order's block, later on the chain, is confirmed all the same.
    chain.failing.add(strayBlocks[0].number);
    await updateConfirmations(ctx, chain);
    const [after] = await ctx.db.select().from(orders).where(eq(orders.id, order.id));
    expect(after.status).to.equal('completed');
    const rows = await rowsOf(ctx, chain.chain.chainId);
    expect(rows.filter((r) => r.orderId === null).map((r) => r.status)).to.deep.equal(['pending', 'pending', 'pending']);
    chain.failing.clear();
    await updateConfirmations(ctx, chain);
    expect((await rowsOf(ctx, chain.chain.chainId)).map((r) => r.status)).to.deep.equal(['confirmed', 'confirmed', 'confirmed', 'confirmed']);
  });

  it('a reorg drops the pending transfers of orphaned blocks; the re-mined transaction is the same row, pending again', async () => {
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
    // The same transfer (design.md §4b): its one row, dropped by the reorg, is pending again in its new block.
    const rows = await rowsOf(ctx, chain.chain.chainId);
    expect(rows.map((r) => r.status)).to.deep.equal(['pending']);
    expect(rows[0]).to.include({ blockNumber: chain.tip.number, blockHash: chain.tip.hash, droppedAt: null });
  });

  it('a pending deposit dropped by a reorg and mined again keeps its transfer row, its deposit id and its one deposit.pending', async () => {
    const { ctx, chain } = setUp();
    const org = await createTestOrg('memory org remined deposit');
    await seedPoolAddresses(org.organizationId, 'evm', 1);
    await scanChain(ctx, chain);
    const { binding } = await bindDepositReference(ctx, org.organizationId, { depositReference: `remined-${Date.now()}`, protocol: 'evm' });
    const tx = newTxHash();
    chain.mine([{ txHash: tx, to: binding.address, amount: 17n }]);
    await scanChain(ctx, chain);
    const [first] = await rowsOf(ctx, chain.chain.chainId);
    const [dep] = await ctx.db.select().from(deposits).where(eq(deposits.transferId, first.id));
    expect(dep.status).to.equal('pending');
    // Orphaned while pending: dropped, with its deposit.
    chain.reorgFrom(1);
    await scanChain(ctx, chain);
    expect((await ctx.db.select().from(deposits).where(eq(deposits.id, dep.id)))[0].status).to.equal('dropped');
    // Mined again: the same row pending again, the same deposit pending again.
    chain.mine([{ txHash: tx, to: binding.address, amount: 17n }]);
    chain.mineEmpty(12);
    await scanChain(ctx, chain);
    const rows = await rowsOf(ctx, chain.chain.chainId);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ id: first.id, status: 'pending', depositBindingId: binding.bindingId });
    const all = await ctx.db.select().from(deposits).where(eq(deposits.bindingId, binding.bindingId));
    expect(all.map((d) => [d.id, d.status])).to.deep.equal([[dep.id, 'pending']]);
    await updateConfirmations(ctx, chain);
    expect((await ctx.db.select().from(deposits).where(eq(deposits.id, dep.id)))[0].status).to.be.oneOf(['confirmed', 'completed']);
    const eventsOf = (type: string) => ctx.db.select().from(events).where(and(eq(events.type, type), sql`${events.data}->>'depositId' = ${dep.id}`));
    expect(await eventsOf('deposit.pending')).to.have.length(1);
    expect(await eventsOf('deposit.confirmed')).to.have.length(1);
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

  describe('attribution by what the scanner saw (block timestamps prove nothing)', () => {
    async function orderAt(ctx: ServiceContext, chain: MemoryChain, organizationId: string) {
      return createOrder(ctx, organizationId, { orderReference: `skew-${newTxHash().slice(2, 14)}`, amount: '0.00002', currency: 'USDT', chainId: chain.chain.chainId });
    }
    const clockOf = (ctx: ServiceContext) => ctx.clock as ManualClock;
    const S = (ctx: ServiceContext, chain: MemoryChain) => ctx.registry.get(chain.chain.chainId)!.attributionSkewSeconds;

    it('credits an order paid in a block stamped before its creation, mined after it', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory skew 1');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      const order = await orderAt(ctx, chain, org.organizationId);
      // The block comes after the order (the scanner had looked an instant before) but is stamped 3 s before it.
      chain.mine([{ txHash: newTxHash(), to: order.address, amount: 20n }], Math.floor(order.createdAt.getTime() / 1000) - 3);
      chain.mineEmpty(3);
      await scanChain(ctx, chain);
      await updateConfirmations(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ orderId: order.id, counted: true, status: 'confirmed', unattributedReason: null });
      const [after] = await ctx.db.select().from(orders).where(eq(orders.id, order.id));
      expect(after.status).to.equal('completed');
    });

    it('a payment dropped by a reorg and re-mined after the grace end no longer counts: its flag and the order agree', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory remined late');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      const order = await orderAt(ctx, chain, org.organizationId);
      const tx = newTxHash();
      chain.mine([{ txHash: tx, to: order.address, amount: 20n }], Math.floor(order.createdAt.getTime() / 1000) + 1);
      await scanChain(ctx, chain);
      const [first] = await rowsOf(ctx, chain.chain.chainId);
      expect(first).to.include({ orderId: order.id, counted: true, status: 'pending' });
      // Orphaned while pending, then mined again in a block stamped after the order's grace end.
      chain.reorgFrom(chain.tip.number);
      await scanChain(ctx, chain);
      const late = Math.floor(order.graceEndsAt.getTime() / 1000) + 5;
      chain.mine([{ txHash: tx, to: order.address, amount: 20n }], late);
      chain.mineEmpty(12);
      clockOf(ctx).advance((late + 20) * 1000 - ctx.clock.now().getTime());
      await scanChain(ctx, chain);
      await updateConfirmations(ctx, chain);
      const rows = await rowsOf(ctx, chain.chain.chainId);
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ id: first.id, orderId: order.id, counted: false, status: 'confirmed' });
      const [after] = await ctx.db.select().from(orders).where(eq(orders.id, order.id));
      expect(after.status).to.equal('expired');
      expect(after.amountReceived).to.equal(0n);
    });

    it('a credited payment reorged beyond its confirmations and re-mined after the grace end still counts: the credit is final', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory remined credited');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      const order = await orderAt(ctx, chain, org.organizationId);
      const tx = newTxHash();
      const paid = chain.mine([{ txHash: tx, to: order.address, amount: 20n }], Math.floor(order.createdAt.getTime() / 1000) + 1);
      chain.mineEmpty(3);
      await scanChain(ctx, chain);
      await updateConfirmations(ctx, chain);
      const [first] = await rowsOf(ctx, chain.chain.chainId);
      expect(first).to.include({ orderId: order.id, counted: true, credited: true, status: 'confirmed' });
      expect((await ctx.db.select().from(orders).where(eq(orders.id, order.id)))[0]).to.include({ status: 'completed', amountReceived: 20n });
      // Orphaned deeper than its confirmations (credit kept), then mined again in a block stamped after the grace end.
      chain.reorgFrom(paid.number);
      await scanChain(ctx, chain);
      expect((await rowsOf(ctx, chain.chain.chainId))[0].status).to.equal('reorged');
      chain.mine([{ txHash: tx, to: order.address, amount: 20n }], Math.floor(order.graceEndsAt.getTime() / 1000) + 5);
      chain.mineEmpty(3);
      await scanChain(ctx, chain);
      await updateConfirmations(ctx, chain);
      const rows = await rowsOf(ctx, chain.chain.chainId);
      expect(rows).to.have.length(1);
      expect(rows[0]).to.include({ id: first.id, orderId: order.id, counted: true, credited: true, status: 'confirmed' });
      const [after] = await ctx.db.select().from(orders).where(eq(orders.id, order.id));
      expect(after).to.include({ status: 'completed', amountReceived: 20n });
    });

    it('a block the scanner saw before the order began is not the order\'s, however it is stamped (no_holder)', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory skew 2');
      const [address] = await seedPoolAddresses(org.organizationId, 'evm', 1);
      await scanChainOnce(ctx, chain);
      // Paid before the order existed, stamped in the future; the scanner sees its block.
      chain.mine([{ txHash: newTxHash(), to: address, amount: 20n }], Math.floor(Date.now() / 1000) + 600);
      await scanChain(ctx, chain);
      clockOf(ctx).advance(10);
      const order = await orderAt(ctx, chain, org.organizationId);
      chain.mineEmpty(3);
      await scanChain(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ orderId: null, unattributedReason: 'no_holder' });
      expect(order.address).to.equal(address);
    });

    it('a payment mined after the order began, in a block that replaced one the scanner saw before it, is the order\'s (a reorg re-uses heights)', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory replaced height');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      chain.mine();
      await scanChain(ctx, chain);
      const seen = chain.tip.number;
      clockOf(ctx).advance(1_000);
      const order = await orderAt(ctx, chain, org.organizationId);
      clockOf(ctx).advance(1_000);
      // The chain settles on another branch below the block the scanner saw: the new block at that
      // height is mined after the order began (tron-local's orphans, a later slot on EVM) and pays it.
      chain.blocks = chain.blocks.slice(0, seen);
      chain.mine([{ txHash: newTxHash(), to: order.address, amount: 20n }]);
      expect(chain.tip.number).to.equal(seen);
      chain.mineEmpty(1);
      clockOf(ctx).advance(1_000);
      await scanChain(ctx, chain);
      await scanChain(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ orderId: order.id, unattributedReason: null, counted: true });
      expect(row.minedBy!.getTime()).to.be.above(order.createdAt.getTime());
    });

    it('a head the scanner looked at while behind, orphaned before it got there: the payment in the block that replaced it is the order\'s', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory stale look');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      // Behind: one block per range, while the look at the head sees the tip of a branch that will be orphaned.
      chain.mineEmpty(3);
      const seen = chain.tip.number;
      ctx.detection.rangeSizes.set(chain.chain.chainId, 1);
      expect((await scanChainOnce(ctx, chain)).toBlock).to.be.below(seen);
      clockOf(ctx).advance(500);
      const order = await orderAt(ctx, chain, org.organizationId);
      clockOf(ctx).advance(500);
      chain.blocks = chain.blocks.slice(0, seen);
      chain.mine([{ txHash: newTxHash(), to: order.address, amount: 20n }]);
      chain.mineEmpty(1);
      clockOf(ctx).advance(500);
      await scanChain(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ blockNumber: seen, orderId: order.id, unattributedReason: null, counted: true });
      expect(row.minedBy!.getTime()).to.be.above(order.createdAt.getTime());
    });

    it('a provider that does not have the deciding block yet (a lagging backend) makes the range read again, never forgets the look', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory lagging deciding block');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      clockOf(ctx).advance(500);
      const { binding } = await bindDepositReference(ctx, org.organizationId, { depositReference: `lag-${newTxHash().slice(2, 12)}`, protocol: 'evm' });
      clockOf(ctx).advance(500);
      const paid = chain.mine([{ txHash: newTxHash(), to: binding.address, amount: 20n }]);
      chain.mineEmpty(3);
      clockOf(ctx).advance(500);
      // Seen while the reference is bound: the only proof the block existed before the unbinding.
      await updateConfirmations(ctx, chain);
      clockOf(ctx).advance(500);
      await unbindDepositReference(ctx, org.organizationId, { depositReference: binding.depositReference, protocol: 'evm' });
      chain.missing.add(chain.tip.number);
      ctx.detection.rangeSizes.set(chain.chain.chainId, 1);
      expect((await scanChainOnce(ctx, chain)).status).to.equal('unstable');
      expect(await rowsOf(ctx, chain.chain.chainId)).to.have.length(0);
      chain.missing.clear();
      await scanChain(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ blockNumber: paid.number, depositBindingId: binding.bindingId, unattributedReason: null });
    });

    it('a look at an orphaned block written while the evidence is checked never dates the payment earlier (the record reads what was checked)', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory racing look');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      const beforeOrder = clockOf(ctx).now();
      clockOf(ctx).advance(1_000);
      const order = await orderAt(ctx, chain, org.organizationId);
      clockOf(ctx).advance(500);
      chain.mine([{ txHash: newTxHash(), to: order.address, amount: 20n }]);
      chain.mineEmpty(3);
      const top = chain.tip.number;
      ctx.detection.rangeSizes.set(chain.chain.chainId, 1);
      // While the scan checks the look at the head, another process writes a look at another block there, dated before the order.
      const blockAt = chain.blockAt.bind(chain);
      let raced = false;
      chain.blockAt = async (height: number) => {
        if (height === top && !raced) {
          raced = true;
          await recordHeadObservation(ctx.db, { chainId: chain.chain.chainId, head: top, hash: '0xorphan', askedAt: beforeOrder, answeredAt: beforeOrder });
        }
        return blockAt(height);
      };
      await scanChain(ctx, chain);
      expect(raced).to.equal(true);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ orderId: order.id, unattributedReason: null, counted: true });
      expect(row.minedBy!.getTime()).to.be.above(order.createdAt.getTime());
    });

    it('one height seen with two blocks: the later block\'s own first sighting dates it, never the other\'s', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory two blocks one height');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      chain.mineEmpty(2);
      await scanChain(ctx, chain);
      chain.mineEmpty(1);
      const seen = chain.tip.number;
      // The confirmations job looks at the head before the order; the scanner does not scan it.
      await updateConfirmations(ctx, chain);
      clockOf(ctx).advance(500);
      const order = await orderAt(ctx, chain, org.organizationId);
      clockOf(ctx).advance(500);
      // The block at that height is replaced by one paying the order, and the head is seen again at that height.
      chain.blocks = chain.blocks.slice(0, seen);
      chain.mine([{ txHash: newTxHash(), to: order.address, amount: 20n }]);
      await updateConfirmations(ctx, chain);
      clockOf(ctx).advance(500);
      await scanChain(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ blockNumber: seen, orderId: order.id, unattributedReason: null });
      expect(row.minedBy!.getTime()).to.be.above(order.createdAt.getTime());
    });

    it('case 2: a block mined while the scanner had not looked for longer than L is not credited to the order (undecidable)', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory stalled');
      const [address] = await seedPoolAddresses(org.organizationId, 'evm', 1);
      await scanChain(ctx, chain);
      // The scanner stalls; meanwhile a payment lands on the fresh address; then an order takes it.
      clockOf(ctx).advance((ctx.registry.get(chain.chain.chainId)!.headLagSeconds + 1) * 1000);
      chain.mine([{ txHash: newTxHash(), to: address, amount: 5n }], Math.floor(Date.now() / 1000) + 30);
      const order = await orderAt(ctx, chain, org.organizationId);
      chain.mineEmpty(1);
      await scanChain(ctx, chain);
      const [row] = await rowsOf(ctx, chain.chain.chainId);
      expect(row).to.include({ orderId: null, unattributedReason: 'undecidable', counted: false });
      expect(row.minedAfter!.getTime()).to.be.below(order.createdAt.getTime());
      expect(row.minedBy!.getTime()).to.be.above(order.createdAt.getTime());
      // A payment mined after the scanner looked again belongs to the order.
      const paid = newTxHash();
      chain.mine([{ txHash: paid, to: address, amount: 20n }]);
      await scanChain(ctx, chain);
      const [credited] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid));
      expect(credited).to.include({ orderId: order.id, unattributedReason: null });
    });

    it('cooldown 0 is raised to S: the address waits S before its next holder; what is paid meanwhile is no one\'s', async () => {
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
      // Not handed out again before S has passed.
      clockOf(ctx).advance(2000);
      let refused: unknown = null;
      await orderAt(ctx, chain, org.organizationId).catch((err) => (refused = err));
      expect(String(refused)).to.include('No available evm address');
      // A duplicate payment in the cooldown (the scanner had looked since the order ended): recorded, no one's.
      await scanChain(ctx, chain);
      const duplicate = newTxHash();
      chain.mine([{ txHash: duplicate, to: first.address, amount: 20n }]);
      await scanChain(ctx, chain);
      clockOf(ctx).advance(S(ctx, chain) * 1000);
      await scanChain(ctx, chain);
      const second = await orderAt(ctx, chain, org.organizationId);
      expect(second.address).to.equal(first.address);
      const paid = newTxHash();
      chain.mine([{ txHash: paid, to: first.address, amount: 20n }], Math.floor(first.createdAt.getTime() / 1000) - 100);
      await scanChain(ctx, chain);
      const [dup] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, duplicate));
      expect(dup).to.include({ orderId: null, depositBindingId: null, counted: false, unattributedReason: 'no_holder' });
      const [own] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid));
      expect(own).to.include({ orderId: second.id });
      expect((await ctx.db.select().from(orders).where(eq(orders.id, first.id)))[0].amountReceived).to.equal(20n);
    });

    it('unbind then rebind: the address waits S even with an unbind cooldown of 0', async () => {
      const { ctx, chain } = setUp();
      const org = await createTestOrg('memory skew rebind');
      await seedPoolAddresses(org.organizationId, 'evm', 1);
      await setConfigValue(ctx.db, org.organizationId, 'address_pool.unbind_cooldown_minutes', 0);
      await scanChain(ctx, chain);
      await bindDepositReference(ctx, org.organizationId, { depositReference: 'user-a', protocol: 'evm' });
      await unbindDepositReference(ctx, org.organizationId, { depositReference: 'user-a', protocol: 'evm' });
      clockOf(ctx).advance(2000);
      let refused: unknown = null;
      await bindDepositReference(ctx, org.organizationId, { depositReference: 'user-b', protocol: 'evm' }).catch((err) => (refused = err));
      expect(String(refused)).to.include('No available evm address');
      clockOf(ctx).advance(S(ctx, chain) * 1000);
      await scanChain(ctx, chain);
      const { binding } = await bindDepositReference(ctx, org.organizationId, { depositReference: 'user-b', protocol: 'evm' });
      const tx = newTxHash();
      chain.mine([{ txHash: tx, to: binding.address, amount: 20n }], 1);
      await scanChain(ctx, chain);
      const [row] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, tx));
      expect(row.depositBindingId).to.be.a('string');
      expect(row.unattributedReason).to.equal(null);
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
  const L = 2;
  const t0 = new Date('2026-01-01T12:00:00.000Z').getTime();
  const span = (id: number, start: number, end: number | null): AssignmentSpan => ({
    assignmentId: id,
    poolAddressId: 1,
    kind: 'order',
    orderId: `ord_${id}`,
    depositBindingId: null,
    startedAt: new Date(t0 + start * 1000),
    endedAt: end === null ? null : new Date(t0 + end * 1000),
  });
  /** A block the service last saw absent at `after` seconds and first saw at `by` seconds (null: never). */
  const mined = (after: number | null, by: number | null) => ({
    poolAddressId: 1,
    minedAfter: after === null ? null : new Date(t0 + after * 1000),
    minedBy: by === null ? null : new Date(t0 + by * 1000),
  });
  const holder = (d: ReturnType<typeof attributeTransfer>) => d.assignment?.assignmentId ?? d.reason;

  it('the assignment that held the address from before the block appeared until after it was seen', () => {
    expect(holder(attributeTransfer([span(1, 0, 100), span(2, 200, null)], mined(40, 41), L))).to.equal(1);
    expect(holder(attributeTransfer([span(1, 0, 100), span(2, 200, null)], mined(240, 241), L))).to.equal(2);
  });
  it('a block the service looked for within L before the assignment began and did not find belongs to it (the next look came after it)', () => {
    expect(holder(attributeTransfer([span(2, 10, null)], mined(8.5, 10.3), L))).to.equal(2);
  });
  it('a block seen before the assignment began never belongs to it', () => {
    expect(holder(attributeTransfer([span(2, 10, null)], mined(9, 9.5), L))).to.equal('no_holder');
  });
  it('a stale look at the head proves nothing: undecidable (case 2: scanner held, block mined meanwhile)', () => {
    expect(holder(attributeTransfer([span(2, 10, null)], mined(7.9, 12.1), L))).to.equal('undecidable');
    expect(holder(attributeTransfer([span(2, 10, null)], mined(null, 12.1), L))).to.equal('undecidable');
  });
  it('a block not seen before the assignment ended never belongs to it: undecidable when it may have been mined before', () => {
    expect(holder(attributeTransfer([span(1, 0, 100)], mined(99.5, 100.2), L))).to.equal('undecidable');
    expect(holder(attributeTransfer([span(1, 0, 100)], mined(100.1, 100.4), L))).to.equal('no_holder');
  });
  it('case 1: a block mined around a hand-over is never credited to the previous holder; the next one gets what came after it', () => {
    // A1 ended at 0, B1 began S later (the effective cooldown); B1's payment is mined after B1 began.
    expect(holder(attributeTransfer([span(1, -100, 0), span(2, 62, null)], mined(62.3, 63.1), L))).to.equal(2);
    // A payment seen in the cooldown belongs to nobody.
    expect(holder(attributeTransfer([span(1, -100, 0), span(2, 62, null)], mined(30, 31), L))).to.equal('no_holder');
  });
  it('a minedAfter later than minedBy (a lagging provider) is cut back to minedBy', () => {
    expect(holder(attributeTransfer([span(2, 10, null)], mined(11, 9), L))).to.equal('no_holder');
  });

  /** The clock witness's window (clock-witness.ts): mined after `after` and by `by` seconds. */
  const clocked = (lookAfter: number | null, lookBy: number | null, after: number, by: number) => ({
    ...mined(lookAfter, lookBy),
    clock: { after: new Date(t0 + after * 1000), by: new Date(t0 + by * 1000) },
  });
  it('clock witness: a block no look placed (the provider held) belongs to the order its window starts after; near the start it decides nothing', () => {
    // Looks stopped at 0 and came back at 60; the order began at 10; the window says 18–24.
    expect(holder(attributeTransfer([span(2, 10, null)], clocked(0, 60, 18, 24), L))).to.equal(2);
    // The window reaches before the start (no L here: its tolerance is its margin): undecidable.
    expect(holder(attributeTransfer([span(2, 10, null)], clocked(0, 60, 9.5, 16), L))).to.equal('undecidable');
    // A window wholly before the start: mined before the order, nobody's (a stray to a fresh address).
    expect(holder(attributeTransfer([span(2, 10, null)], clocked(0, 60, 2, 8), L))).to.equal('no_holder');
  });
  it('clock witness: a payment seen only after its deposit reference ended is its when the window ends before the end', () => {
    expect(holder(attributeTransfer([span(1, -100, 30)], clocked(0, 60, 18, 24), L))).to.equal(1);
    expect(holder(attributeTransfer([span(1, -100, 30)], clocked(0, 60, 26, 32), L))).to.equal('undecidable');
    // Mined after the end by the window: nobody's, and never the next holder's before its start.
    expect(holder(attributeTransfer([span(1, -100, 30), span(2, 92, null)], clocked(0, 120, 40, 46), L))).to.equal('no_holder');
  });
  it('clock witness: a window that contradicts the looks is no witness (the chain clock did not behave as measured)', () => {
    // Seen at 15, yet the window says mined after 18: dropped, the looks alone decide (undecidable).
    expect(holder(attributeTransfer([span(2, 10, null)], clocked(0, 15, 18, 24), L))).to.equal('undecidable');
    // Looked for at 40 and absent, yet the window says mined by 24: dropped.
    expect(holder(attributeTransfer([span(1, -100, 30)], clocked(40, 60, 18, 24), L))).to.equal('no_holder');
  });

  /** The candidates of an unattributed transfer, as [assignment, relation] pairs, after checking the decision is the reason given. */
  const candidates = (spans: AssignmentSpan[], evidence: ReturnType<typeof mined>) => {
    const decision = attributeTransfer(spans, evidence, L);
    expect(decision.assignment, 'unattributed').to.equal(null);
    return unattributedCandidates(spans, evidence, L, decision.reason!).map((c) => [c.span.assignmentId, c.relation]);
  };
  it('candidates (issue 40): undecidable names the assignments the rule found possible, and only those', () => {
    expect(candidates([span(2, 10, null)], mined(7.9, 12.1))).to.deep.equal([[2, 'possible']]);
    expect(candidates([span(1, 0, 100)], mined(99.5, 100.2))).to.deep.equal([[1, 'possible']]);
    // Both sides of a hand-over inside the unknown: both possible; one ended before the look is not.
    expect(candidates([span(0, -500, -400), span(1, 0, 100), span(2, 162, null)], mined(-300, 170))).to.deep.equal([[1, 'possible'], [2, 'possible']]);
  });
  it('candidates (issue 40): no_holder names the holder that ended last before the block and the one that began next, within their windows', () => {
    const s = CANDIDATE_PREVIOUS_WINDOW_MS / 1000;
    const n = CANDIDATE_NEXT_WINDOW_MS / 1000;
    // In the cooldown between two holders: both.
    expect(candidates([span(1, -100, 0), span(2, 62, null)], mined(30, 31))).to.deep.equal([[1, 'previous'], [2, 'next']]);
    // Several earlier holders: only the last one; seen before the next began (case 2 with pushed heads): the next.
    expect(candidates([span(0, -300, -200), span(1, -100, 0)], mined(30, 31))).to.deep.equal([[1, 'previous']]);
    expect(candidates([span(2, 10, null)], mined(9, 9.5))).to.deep.equal([[2, 'next']]);
    // Outside the windows: nobody.
    expect(candidates([span(1, -100, 0)], mined(s + 1, s + 2))).to.deep.equal([]);
    expect(candidates([span(1, -100, 0)], mined(s - 1, s))).to.deep.equal([[1, 'previous']]);
    expect(candidates([span(2, n + 20, null)], mined(9, 10))).to.deep.equal([]);
    expect(candidates([span(2, n + 5, null)], mined(9, 10))).to.deep.equal([[2, 'next']]);
    // Never used an address before: no candidate.
    expect(candidates([], mined(9, 10))).to.deep.equal([]);
  });
});
