import { expect } from 'chai';
import request from 'supertest';
import { and, eq, sql } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import type { ManualClock } from '../../core/platform/clock';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { events, transfers } from '../../db/schema';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { dataOf, listOf } from '../helpers/wire';

/**
 * A payout on the local EVM chain (anvil), through the API in both wire formats: created with its
 * destination, approved, paid by the merchant's own wallet after the approval (the looks between
 * them prove it was mined after), then completed with its tx hash and payout.completed. The
 * payment is never read as an incoming one.
 */

const payoutEvents = (ctx: ServiceContext, type: string, id: string) => ctx.db.select().from(events).where(and(eq(events.type, type), sql`${events.data}->>'id' = ${id}`));

describe('payout payments on the local EVM chain (anvil): created with a destination, approved, paid, completed', function () {
  this.timeout(120_000);
  let chain: TestChain;
  const apps: Record<'a' | 'b', TestApp> = {} as Record<'a' | 'b', TestApp>;
  let ctx: ServiceContext;
  let clock: ManualClock;
  let org: TestOrg;
  const settle = async () => {
    const scan = await runChainScan(ctx, LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  };
  const tick = async () => {
    clock.advance(5_000);
    await settle();
    clock.advance(5_000);
  };

  before(async () => {
    chain = await startTestChain();
    apps.b = buildTestApp({ style: 'b' });
    apps.a = buildTestApp({ style: 'a', clock: apps.b.clock });
    ctx = apps.b.deps;
    clock = apps.b.clock;
    useTestChain(ctx.registry, chain);
    useTestChain(apps.a.deps.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    org = await createTestOrg('payout payments evm');
    await seedPoolAddresses(org.organizationId, 'evm', 3);
  });
  after(async () => {
    await chain?.stop();
  });

  for (const style of ['a', 'b'] as const) {
    it(`style ${style.toUpperCase()}: POST /payouts with a destination → approve → the merchant pays → completed with its txHash and payout.completed`, async () => {
      const app = apps[style].app;
      const destination = randomEvmAddress();
      const created = await request(app)
        .post('/api/v1/payouts')
        .set('X-API-Key', org.keys.admin)
        .send({ amount: '40', currency: 'USDT', chainId: LOCAL_CHAIN_ID, reason: `affiliate March (${style})`, destination });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const payout = dataOf(style, created);
      expect(payout).to.include({ kind: 'payout', status: 'claimed', destination });

      // A look before the approval, the approval, a look after it, then the payment: the evidence
      // that the payment was mined after the approval.
      await tick();
      const approved = await request(app).post(`/api/v1/refunds/${payout.id}/approve`).set('X-API-Key', org.keys.owner);
      expect(approved.status, JSON.stringify(approved.body)).to.equal(200);
      expect(dataOf(style, approved).paymentUri).to.include('@31337/transfer');
      await tick();

      const paid = await chain.pay(destination, 'USDT', 40_000_000n);
      await settle();
      const view = async () => dataOf(style, await request(app).get(`/api/v1/refunds/${payout.id}`).set('X-API-Key', org.keys.viewer));
      expect(await view()).to.include({ status: 'approved', amountPaid: '40' });
      await chain.mine(3);
      await settle();
      const done = await view();
      expect(done).to.include({ status: 'completed', amountPaid: '40', txHash: paid.txHash, destination, kind: 'payout' });
      expect(done.completedAt).to.be.a('string');

      const completed = await payoutEvents(ctx, 'payout.completed', payout.id);
      expect(completed).to.have.length(1);
      expect(completed[0].data).to.include({ id: payout.id, kind: 'payout', status: 'completed', txHash: paid.txHash, amount: '40', destination });
      expect(await payoutEvents(ctx, 'refund.completed', payout.id)).to.have.length(0);

      const [recorded] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash));
      expect(recorded).to.include({ refundId: payout.id, counted: true, orderId: null });
      const inbox = listOf(style, await request(app).get('/api/v1/transfers?attributed=false').set('X-API-Key', org.keys.viewer), 'transfers').items;
      expect(inbox.map((t: { refundId: string | null }) => t.refundId)).to.not.include(payout.id);
    });
  }
});
