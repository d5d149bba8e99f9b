import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { ManualClock } from '../../core/platform/clock';
import { createOrder } from '../../core/orders/orders';
import {
  decideOrderStatus,
  recomputeOrder,
  transferCountsTowardOrder,
  type OrderFacts,
  type TransferFacts,
} from '../../core/orders/order-state';
import { addressAssignments, orders, transfers } from '../../db/schema';
import { createTestOrg, testConfig, testContext, testDb, type TestOrg } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { CHAIN, checkpointAt, eventsOf, poolAddressOf, tokenEnv } from '../helpers/orders';

const T0 = new Date('2026-01-01T12:00:00.250Z');
const min = (n: number) => n * 60_000;
const at = (ms: number) => new Date(T0.getTime() + ms);

function order(overrides: Partial<OrderFacts> = {}): OrderFacts {
  return {
    status: 'pending',
    amount: 10_000_000n,
    chainId: CHAIN,
    currency: 'USDT',
    createdAt: T0,
    graceEndsAt: at(min(15)),
    ...overrides,
  };
}

let seq = 0;
/** A transfer as recorded: `counted` stored by the order's rule (transferCountsTowardOrder) on order()'s deadlines. */
function transfer(overrides: Partial<TransferFacts> = {}): TransferFacts {
  seq += 1;
  const recorded: Omit<TransferFacts, 'counted'> & Partial<TransferFacts> = {
    id: `trf_${seq}`,
    chainId: CHAIN,
    currency: 'USDT',
    amount: 10_000_000n,
    status: 'confirmed',
    confirmations: 3,
    txHash: `0x${seq.toString(16).padStart(64, '0')}`,
    logIndex: 0,
    blockNumber: 100 + seq,
    blockTimestamp: at(min(1)),
    ...overrides,
  };
  return { counted: transferCountsTowardOrder(order(), recorded), ...recorded };
}

describe('order state: transferCountsTowardOrder (pure)', () => {
  it('counts an attributed transfer of the same chain and currency up to graceEndsAt, even stamped before the creation (clock skew)', () => {
    const o = order();
    expect(transferCountsTowardOrder(o, transfer())).to.equal(true);
    // Attribution decided the payment is the order's; a block stamped before the creation still counts.
    expect(transferCountsTowardOrder(o, transfer({ blockTimestamp: new Date('2026-01-01T12:00:00.000Z') }))).to.equal(true);
    expect(transferCountsTowardOrder(o, transfer({ blockTimestamp: new Date('2026-01-01T11:59:59.000Z') }))).to.equal(true);
    expect(transferCountsTowardOrder(o, transfer({ blockTimestamp: o.graceEndsAt }))).to.equal(true);
    expect(transferCountsTowardOrder(o, transfer({ blockTimestamp: new Date(o.graceEndsAt.getTime() + 1000) }))).to.equal(false);
  });

  it('does not count another chain or another token', () => {
    expect(transferCountsTowardOrder(order(), transfer({ chainId: 'ethereum-sepolia' }))).to.equal(false);
    expect(transferCountsTowardOrder(order(), transfer({ currency: 'USDC' }))).to.equal(false);
  });
});

describe('order state: decideOrderStatus (pure)', () => {
  const cpPast = { blockTimestamp: at(min(16)) };

  it('stays pending with nothing paid inside the window', () => {
    const d = decideOrderStatus(order(), [], null, at(min(5)));
    expect(d).to.deep.include({ kind: 'pending', status: 'pending', amountReceived: 0n, reason: 'awaiting_payment' });
  });

  it('completes on a confirmed exact payment, naming the completing transfer and crediting it', () => {
    const t = transfer();
    const d = decideOrderStatus(order(), [t], null, at(min(2)));
    expect(d.kind).to.equal('complete');
    if (d.kind !== 'complete') return;
    expect(d.completingTransfer).to.equal(t);
    expect(d.creditedTransferIds).to.deep.equal([t.id]);
    expect(d.amountReceived).to.equal(10_000_000n);
  });

  it('waits for confirmations: a pending payment of the full amount keeps the order pending', () => {
    const d = decideOrderStatus(order(), [transfer({ status: 'pending', confirmations: 1 })], null, at(min(2)));
    expect(d).to.deep.include({ kind: 'pending', reason: 'awaiting_confirmations', amountReceived: 10_000_000n, confirmedTotal: 0n });
  });

  it('partial payment stays pending with amountReceived', () => {
    const d = decideOrderStatus(order(), [transfer({ amount: 4_000_000n })], null, at(min(2)));
    expect(d).to.deep.include({ kind: 'pending', reason: 'partially_paid', amountReceived: 4_000_000n });
  });

  it('two partial confirmed payments that add up complete with the later one (chain order)', () => {
    const second = transfer({ amount: 6_000_000n, blockNumber: 500 });
    const first = transfer({ amount: 4_000_000n, blockNumber: 400 });
    const d = decideOrderStatus(order(), [second, first], null, at(min(3)));
    expect(d.kind).to.equal('complete');
    if (d.kind !== 'complete') return;
    expect(d.completingTransfer.id).to.equal(second.id);
    expect(d.creditedTransferIds).to.have.members([first.id, second.id]);
  });

  it('overpayment completes and amountReceived shows the excess', () => {
    const d = decideOrderStatus(order(), [transfer({ amount: 12_500_000n })], null, at(min(2)));
    expect(d).to.deep.include({ kind: 'complete', amountReceived: 12_500_000n });
  });

  it('ignores dropped transfers and transfers after the grace end', () => {
    const dropped = transfer({ status: 'dropped' });
    const late = transfer({ blockTimestamp: at(min(15) + 1000) });
    const d = decideOrderStatus(order(), [dropped, late], cpPast, at(min(20)));
    expect(d).to.deep.include({ kind: 'expire', amountReceived: 0n });
  });

  it('a confirmed payment mined in the grace period completes even after graceEndsAt', () => {
    const d = decideOrderStatus(order(), [transfer({ blockTimestamp: at(min(14)) })], cpPast, at(min(30)));
    expect(d.kind).to.equal('complete');
  });

  it('expires only when the clock and the checkpoint are both past graceEndsAt', () => {
    const o = order();
    expect(decideOrderStatus(o, [], cpPast, at(min(15) - 1)).kind).to.equal('pending');
    expect(decideOrderStatus(o, [], null, at(min(20))).kind).to.equal('pending');
    expect(decideOrderStatus(o, [], { blockTimestamp: at(min(15) - 1000) }, at(min(20))).kind).to.equal('pending');
    expect(decideOrderStatus(o, [], { blockTimestamp: o.graceEndsAt }, o.graceEndsAt).kind).to.equal('expire');
  });

  it('never expires while a counted transfer awaits confirmations', () => {
    const d = decideOrderStatus(order(), [transfer({ amount: 1n, status: 'pending' })], cpPast, at(min(60)));
    expect(d).to.deep.include({ kind: 'pending', reason: 'partially_paid' });
  });

  it('expires a partially paid order with its amountReceived', () => {
    const d = decideOrderStatus(order(), [transfer({ amount: 3_000_000n })], cpPast, at(min(20)));
    expect(d).to.deep.include({ kind: 'expire', status: 'expired', amountReceived: 3_000_000n });
  });

  it('final states never change', () => {
    expect(decideOrderStatus(order({ status: 'expired' }), [transfer()], cpPast, at(min(20)))).to.deep.include({ kind: 'final', status: 'expired' });
    expect(decideOrderStatus(order({ status: 'completed' }), [], cpPast, at(min(20)))).to.deep.include({ kind: 'final', status: 'completed' });
  });
});

describe('order state: recomputeOrder (Postgres)', () => {
  const clock = new ManualClock();
  const ctx = testContext(testConfig(tokenEnv()), clock);
  let org: TestOrg;

  before(async () => {
    org = await createTestOrg('Order state org');
    await seedPoolAddresses(org.organizationId, 'evm', 20);
  });

  const newOrder = (ref: string, amount = '10') =>
    createOrder(ctx, org.organizationId, { orderReference: ref, amount, currency: 'USDT', chainId: CHAIN, paymentWindowMinutes: 10, graceMinutes: 5, metadata: { cart: ref } });
  const recompute = (orderId: string) => ctx.db.transaction((tx) => recomputeOrder(tx, ctx, orderId));
  const counted = (o: { id: string; address: string; createdAt: Date }, values: Record<string, unknown> = {}) =>
    insertTestTransfer({
      chainId: CHAIN,
      currency: 'USDT',
      amount: 10_000_000n,
      toAddress: o.address,
      orderId: o.id,
      organizationId: org.organizationId,
      counted: true,
      blockTimestamp: new Date(o.createdAt.getTime() + 30_000),
      ...values,
    });

  it('completes from confirmed counted transfers exactly once: order fields, credit, cooldown, one event', async () => {
    const o = await newOrder('state-complete');
    const t = await counted(o, { status: 'confirmed', confirmations: 3, blockNumber: 77 });
    const results = await Promise.all([recompute(o.id), recompute(o.id), recompute(o.id)]);
    expect(results).to.deep.equal(['completed', 'completed', 'completed']);
    const [row] = await testDb().select().from(orders).where(eq(orders.id, o.id));
    expect(row).to.include({ status: 'completed', txHash: t.txHash, blockNumber: 77, confirmations: 3 });
    expect(row.amountReceived).to.equal(10_000_000n);
    expect(row.completedAt).to.be.instanceOf(Date);
    const [credited] = await testDb().select().from(transfers).where(eq(transfers.id, t.id));
    expect(credited.credited).to.equal(true);
    const pool = await poolAddressOf(o.address);
    expect(pool.status).to.equal('cooldown');
    expect(pool.cooldownUntil!.getTime() - row.completedAt!.getTime()).to.equal(30 * 60_000);
    const [assignment] = await testDb().select().from(addressAssignments).where(eq(addressAssignments.orderId, o.id));
    expect(assignment.endedAt!.getTime()).to.equal(row.completedAt!.getTime());
    const evts = (await eventsOf(org.organizationId, 'order.completed')).filter((e) => (e.data as any).orderId === o.id);
    expect(evts).to.have.length(1);
    expect(evts[0].data).to.deep.equal({
      orderId: o.id,
      orderReference: 'state-complete',
      status: 'completed',
      amount: '10',
      currency: 'USDT',
      chainId: CHAIN,
      address: o.address,
      txHash: t.txHash,
      blockNumber: 77,
      confirmations: 3,
      amountReceived: '10',
      amountDue: '0',
      amountExcess: '0',
      paymentState: 'paid',
      completedAt: row.completedAt!.toISOString(),
      metadata: { cart: 'state-complete' },
      exceptions: [],
      resolution: 'automatic',
      resolvedBy: null,
      resolvedAt: null,
      resolutionReason: null,
    });
  });

  it('keeps a partially paid order pending with amountReceived; a pending payment counts but does not complete', async () => {
    const o = await newOrder('state-partial');
    await counted(o, { amount: 4_000_000n, status: 'confirmed' });
    await counted(o, { amount: 6_000_000n, status: 'pending', confirmations: 1, logIndex: 1 });
    expect(await recompute(o.id)).to.equal('pending');
    const [row] = await testDb().select().from(orders).where(eq(orders.id, o.id));
    expect(row.status).to.equal('pending');
    expect(row.amountReceived).to.equal(10_000_000n);
    expect((await poolAddressOf(o.address)).status).to.equal('allocated');
    expect((await eventsOf(org.organizationId)).filter((e) => (e.data as any).orderId === o.id)).to.have.length(0);
  });

  it('overpayment completes with the excess in amountReceived; uncounted and dropped transfers are ignored', async () => {
    const o = await newOrder('state-over');
    await counted(o, { amount: 15_000_000n, status: 'confirmed' });
    await counted(o, { amount: 99_000_000n, status: 'confirmed', counted: false, logIndex: 1 });
    await counted(o, { amount: 77_000_000n, status: 'dropped', logIndex: 2 });
    expect(await recompute(o.id)).to.equal('completed');
    const [row] = await testDb().select().from(orders).where(eq(orders.id, o.id));
    expect(row.amountReceived).to.equal(15_000_000n);
    const trs = await testDb().select().from(transfers).where(eq(transfers.orderId, o.id));
    expect(trs.filter((t) => t.credited).map((t) => t.amount)).to.deep.equal([15_000_000n]);
  });

  it('expires only past graceEndsAt with the checkpoint past it, then never changes', async () => {
    const o = await newOrder('state-expire');
    await checkpointAt(new Date(o.graceEndsAt.getTime() - 1000));
    clock.advance(min(16));
    try {
      expect(await recompute(o.id)).to.equal('pending');
      await checkpointAt(o.graceEndsAt);
      expect(await recompute(o.id)).to.equal('expired');
      // A payment confirmed later does not reopen it.
      await counted(o, { status: 'confirmed' });
      expect(await recompute(o.id)).to.equal('expired');
      const [row] = await testDb().select().from(orders).where(eq(orders.id, o.id));
      expect(row.status).to.equal('expired');
      expect(row.expiredAt).to.be.instanceOf(Date);
      expect(row.txHash).to.equal(null);
      const evts = (await eventsOf(org.organizationId, 'order.expired')).filter((e) => (e.data as any).orderId === o.id);
      expect(evts).to.have.length(1);
      expect(evts[0].data).to.have.all.keys(
        'orderId', 'orderReference', 'status', 'amount', 'amountReceived', 'amountDue', 'amountExcess', 'paymentState', 'currency', 'chainId', 'address', 'expiresAt', 'expiredAt', 'metadata',
      );
      expect(evts[0].data).to.include({ status: 'expired', amountReceived: '0', amountDue: '10', amountExcess: '0', paymentState: 'unpaid', expiredAt: row.expiredAt!.toISOString() });
      expect((await poolAddressOf(o.address)).status).to.equal('cooldown');
      expect(await eventsOf(org.organizationId, 'order.completed').then((e) => e.filter((x) => (x.data as any).orderId === o.id))).to.have.length(0);
    } finally {
      clock.advance(-min(16));
    }
  });

  it('a counted payment awaiting confirmations holds off expiry', async () => {
    const o = await newOrder('state-hold');
    await counted(o, { status: 'pending', confirmations: 1 });
    await checkpointAt(new Date(o.graceEndsAt.getTime() + 60_000));
    clock.advance(min(30));
    try {
      expect(await recompute(o.id)).to.equal('pending');
      await testDb().update(transfers).set({ status: 'confirmed', confirmations: 3 }).where(eq(transfers.orderId, o.id));
      expect(await recompute(o.id)).to.equal('completed');
    } finally {
      clock.advance(-min(30));
    }
  });
});
