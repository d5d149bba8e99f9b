import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { bindDepositReference } from '../../core/deposits/bindings';
import { completeDeposit, confirmDeposit, dropDeposit, recordDeposit } from '../../core/deposits/lifecycle';
import type { ServiceContext } from '../../core/service/context';
import { deposits, transfers } from '../../db/schema';
import { createTestOrg, testConfig, testContext, testDb } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { insertTestTransfer } from '../helpers/transfers';
import { eventsOf, tokenEnv } from '../helpers/deposits';

describe('deposit lifecycle (domain transitions)', () => {
  const env = tokenEnv();
  const ctx: ServiceContext = testContext(testConfig(env));
  let org: string;
  let binding: { bindingId: string; address: string };

  async function transferTo(values: Partial<Parameters<typeof insertTestTransfer>[0]> = {}) {
    return insertTestTransfer({
      chainId: 'ethereum-local',
      currency: 'USDC',
      tokenAddress: env.TOKEN_ETHEREUM_LOCAL_USDC,
      amount: 12_345_678n,
      toAddress: binding.address,
      organizationId: org,
      depositBindingId: binding.bindingId,
      blockNumber: 42,
      logIndex: 3,
      confirmations: 1,
      ...values,
    });
  }
  const inTx = <T>(fn: (tx: any) => Promise<T>) => ctx.db.transaction(fn);
  const setConfirmations = (id: string, n: number) => testDb().update(transfers).set({ confirmations: n }).where(eq(transfers.id, id));

  beforeEach(async () => {
    org = (await createTestOrg('Lifecycle org')).organizationId;
    await seedPoolAddresses(org, 'evm', 2);
    const bound = await bindDepositReference(ctx, org, { depositReference: 'user-1', protocol: 'evm', metadata: { userId: 'u1', tier: 2 } });
    binding = { bindingId: bound.binding.bindingId, address: bound.binding.address };
  });

  it('records a pending deposit once, with one deposit.pending carrying the full data', async () => {
    const t = await transferTo();
    const first = await inTx((tx) => recordDeposit(tx, ctx, t.id));
    expect(first?.depositId).to.match(/^dep_[0-9a-z]{26}$/);
    const again = await inTx((tx) => recordDeposit(tx, ctx, t.id));
    expect(again).to.deep.equal(first);

    const rows = await testDb().select().from(deposits).where(eq(deposits.transferId, t.id));
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ status: 'pending', requiredConfirmations: 3, depositReference: 'user-1', bindingId: binding.bindingId, organizationId: org });

    const evs = await eventsOf(org, 'deposit.pending');
    expect(evs).to.have.length(1);
    expect(evs[0].data).to.deep.equal({
      depositId: first!.depositId,
      depositReference: 'user-1',
      amount: '12.345678',
      currency: 'USDC',
      chainId: 'ethereum-local',
      chain: 'ethereum-local',
      protocol: 'evm',
      address: binding.address,
      txHash: t.txHash,
      logIndex: 3,
      blockNumber: 42,
      confirmations: 1,
      requiredConfirmations: 3,
      status: 'pending',
      detectedAt: rows[0].detectedAt.toISOString(),
      confirmedAt: null,
      metadata: { userId: 'u1', tier: 2 },
    });
  });

  it('formats an 18-decimal amount exactly (no float)', async () => {
    const t = await transferTo({ currency: 'DAI', tokenAddress: env.TOKEN_ETHEREUM_LOCAL_DAI, amount: 123_456_789_012_345_678_901_234_567n });
    await inTx((tx) => recordDeposit(tx, ctx, t.id));
    const [ev] = await eventsOf(org, 'deposit.pending');
    expect(ev.data).to.include({ amount: '123456789.012345678901234567', currency: 'DAI' });
  });

  it('returns null, and records nothing, for an unattributed or dropped transfer', async () => {
    const unattributed = await transferTo({ depositBindingId: null });
    expect(await inTx((tx) => recordDeposit(tx, ctx, unattributed.id))).to.equal(null);
    const dropped = await transferTo({ status: 'dropped' });
    expect(await inTx((tx) => recordDeposit(tx, ctx, dropped.id))).to.equal(null);
    expect(await testDb().select().from(deposits).where(eq(deposits.organizationId, org))).to.have.length(0);
    expect(await eventsOf(org)).to.have.length(0);
  });

  it('refuses a transfer whose organization differs from its binding (never credits across tenants)', async () => {
    const other = (await createTestOrg('Other org')).organizationId;
    const t = await transferTo({ organizationId: other });
    let error: unknown;
    await inTx((tx) => recordDeposit(tx, ctx, t.id)).catch((e) => (error = e));
    expect(String(error)).to.match(/belongs to/);
    expect(await testDb().select().from(deposits).where(eq(deposits.transferId, t.id))).to.have.length(0);
  });

  it('confirms only at the required confirmations, once, with one deposit.confirmed', async () => {
    const t = await transferTo();
    await inTx((tx) => recordDeposit(tx, ctx, t.id));
    await setConfirmations(t.id, 2);
    expect(await inTx((tx) => confirmDeposit(tx, ctx, t.id))).to.equal(false);
    expect(await eventsOf(org, 'deposit.confirmed')).to.have.length(0);

    await setConfirmations(t.id, 3);
    expect(await inTx((tx) => confirmDeposit(tx, ctx, t.id))).to.equal(true);
    expect(await inTx((tx) => confirmDeposit(tx, ctx, t.id))).to.equal(false);

    const [row] = await testDb().select().from(deposits).where(eq(deposits.transferId, t.id));
    expect(row.status).to.equal('confirmed');
    expect(row.confirmedAt).to.be.instanceOf(Date);
    const evs = await eventsOf(org, 'deposit.confirmed');
    expect(evs).to.have.length(1);
    expect(evs[0].data).to.include({ depositId: row.id, status: 'confirmed', confirmations: 3, amount: '12.345678', txHash: t.txHash });
    expect((evs[0].data as any).confirmedAt).to.equal(row.confirmedAt!.toISOString());
    expect(await eventsOf(org)).to.have.length(2);
  });

  it('completes a confirmed deposit without an event, and only a confirmed one', async () => {
    const t = await transferTo({ confirmations: 3 });
    await inTx((tx) => recordDeposit(tx, ctx, t.id));
    expect(await inTx((tx) => completeDeposit(tx, ctx, t.id))).to.equal(false);
    await inTx((tx) => confirmDeposit(tx, ctx, t.id));
    expect(await inTx((tx) => completeDeposit(tx, ctx, t.id))).to.equal(true);
    expect(await inTx((tx) => completeDeposit(tx, ctx, t.id))).to.equal(false);
    const [row] = await testDb().select().from(deposits).where(eq(deposits.transferId, t.id));
    expect(row.status).to.equal('completed');
    expect(row.completedAt).to.be.instanceOf(Date);
    expect((await eventsOf(org)).map((e) => e.type)).to.deep.equal(['deposit.pending', 'deposit.confirmed']);
  });

  it('drops a pending deposit (reorg) and never a confirmed one', async () => {
    const a = await transferTo();
    await inTx((tx) => recordDeposit(tx, ctx, a.id));
    expect(await inTx((tx) => dropDeposit(tx, ctx, a.id))).to.equal(true);
    expect(await inTx((tx) => dropDeposit(tx, ctx, a.id))).to.equal(false);
    await testDb().update(transfers).set({ status: 'dropped', confirmations: 5 }).where(eq(transfers.id, a.id));
    expect(await inTx((tx) => confirmDeposit(tx, ctx, a.id))).to.equal(false);
    const recordedAgain = await inTx((tx) => recordDeposit(tx, ctx, a.id));
    expect(recordedAgain?.depositId).to.match(/^dep_/);
    const [dropped] = await testDb().select().from(deposits).where(eq(deposits.transferId, a.id));
    expect(dropped.status).to.equal('dropped');
    expect(dropped.droppedAt).to.be.instanceOf(Date);

    const b = await transferTo({ logIndex: 9, confirmations: 3 });
    await inTx((tx) => recordDeposit(tx, ctx, b.id));
    await inTx((tx) => confirmDeposit(tx, ctx, b.id));
    expect(await inTx((tx) => dropDeposit(tx, ctx, b.id))).to.equal(false);
    const [confirmed] = await testDb().select().from(deposits).where(eq(deposits.transferId, b.id));
    expect(confirmed.status).to.equal('confirmed');
    expect((await eventsOf(org)).map((e) => e.type)).to.deep.equal(['deposit.pending', 'deposit.pending', 'deposit.confirmed']);
  });

  it('does nothing for a transfer without a deposit', async () => {
    const t = await transferTo({ confirmations: 10 });
    expect(await inTx((tx) => confirmDeposit(tx, ctx, t.id))).to.equal(false);
    expect(await inTx((tx) => completeDeposit(tx, ctx, t.id))).to.equal(false);
    expect(await inTx((tx) => dropDeposit(tx, ctx, t.id))).to.equal(false);
  });

  it('records one deposit and one event when two workers record the same transfer at once', async () => {
    const t = await transferTo();
    const results = await Promise.all([1, 2, 3].map(() => inTx((tx) => recordDeposit(tx, ctx, t.id))));
    expect(new Set(results.map((r) => r?.depositId)).size).to.equal(1);
    expect(await testDb().select().from(deposits).where(eq(deposits.transferId, t.id))).to.have.length(1);
    expect(await eventsOf(org, 'deposit.pending')).to.have.length(1);
  });

  it('uses the raised deposit confirmations of the chain (DEPOSIT_CONFIRMATIONS_<CHAIN>)', async () => {
    const raised = testContext(testConfig({ ...env, DEPOSIT_CONFIRMATIONS_ETHEREUM_LOCAL: '7' }));
    const t = await transferTo({ confirmations: 6 });
    await raised.db.transaction((tx) => recordDeposit(tx, raised, t.id));
    const [row] = await testDb().select().from(deposits).where(eq(deposits.transferId, t.id));
    expect(row.requiredConfirmations).to.equal(7);
    expect(await raised.db.transaction((tx) => confirmDeposit(tx, raised, t.id))).to.equal(false);
    await setConfirmations(t.id, 7);
    expect(await raised.db.transaction((tx) => confirmDeposit(tx, raised, t.id))).to.equal(true);
  });
});
