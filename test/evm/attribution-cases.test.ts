import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { createOrder } from '../../core/orders/orders';
import { setConfigValue } from '../../core/organizations/org-config';
import { chainHeadObservations, transfers } from '../../db/schema';
import { startHeadWakeups } from '../../workers/head-wakeups';
import { createTestOrg, testContext } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, payWhileScannerHeld, settle } from '../helpers/evm';
import { eventually } from '../helpers/wait';
import { startHoldingProxy } from '../helpers/holding-proxy';

/**
 * The two cases of issue 25 against a local chain (anvil):
 *   1. a short cooldown and a chain clock behind the service's: the next order's payment is never
 *      credited to the previous order (the address waits the effective cooldown S; attribution goes
 *      by what the scanner saw, not by block timestamps);
 *   2. a payment mined while the service's RPC is held, before an order takes the address: never
 *      credited to that order, visible as unattributed — with and without the WebSocket head
 *      subscription.
 */
describe('attribution cases: short cooldown with a lagging chain clock, a held scanner (anvil)', function () {
  this.timeout(120_000);
  let chain: TestChain;

  before(async () => {
    chain = await startTestChain();
  });
  after(async () => chain?.stop());

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const newOrder = (ctx: ServiceContext, organizationId: string, amount = '2') =>
    createOrder(ctx, organizationId, { orderReference: `case-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, amount, currency: 'USDT', chainId: LOCAL_CHAIN_ID });

  for (const lagSeconds of [9.9, 25]) {
    it(`case 1: cooldown 0, chain clock ${lagSeconds} s behind: the new order is credited, the previous one is not`, async () => {
      const ctx = testContext();
      const clock = ctx.clock as ManualClock;
      useTestChain(ctx.registry, chain);
      // The service's clock runs ahead of the chain's by the lag.
      clock.advance(lagSeconds * 1000);
      await chain.rpc('evm_setTime', [Math.floor(Date.now() / 1000)]);
      await resetCheckpointToHead(ctx, chain);
      const org = await createTestOrg(`case 1 ${lagSeconds}`);
      const [z] = await seedPoolAddresses(org.organizationId, 'evm', 1);
      await setConfigValue(ctx.db, org.organizationId, 'address_pool.cooldown_minutes', 0);
      await settle(ctx);

      const a1 = await newOrder(ctx, org.organizationId);
      expect(a1.address).to.equal(z);
      await chain.pay(z, 'USDT', 2_000_000n);
      await chain.mine(3);
      await settle(ctx);
      expect((await orderRow(ctx, a1.id)).status).to.equal('completed');

      // 28 ms later: the address is not handed out again (a configured 0 is raised to S).
      clock.advance(28);
      let refused: unknown = null;
      await newOrder(ctx, org.organizationId).catch((err) => (refused = err));
      expect(String(refused)).to.include('No available evm address');

      // S later, B1 gets Z; its payer pays at once, in a block stamped before A1 even began.
      clock.advance(ctx.registry.get(LOCAL_CHAIN_ID)!.attributionSkewSeconds * 1000);
      await settle(ctx);
      const b1 = await newOrder(ctx, org.organizationId);
      expect(b1.address).to.equal(z);
      const paid = await chain.pay(z, 'USDT', 2_000_000n);
      const block = (await chain.provider.getBlock(paid.blockNumber))!;
      expect(block.timestamp * 1000, 'stamped before A1 began').to.be.lessThan(a1.createdAt.getTime());
      await chain.mine(3);
      await settle(ctx);

      const [row] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash));
      expect(row).to.include({ orderId: b1.id, counted: true, unattributedReason: null });
      expect(await orderRow(ctx, b1.id)).to.include({ status: 'completed', amountReceived: 2_000_000n });
      expect(await orderRow(ctx, a1.id)).to.include({ status: 'completed', amountReceived: 2_000_000n });
    });
  }

  for (const withSubscription of [false, true]) {
    it(`case 2: a payment mined while the service's RPC is held, before an order takes the fresh address, is not the order's (${withSubscription ? 'with' : 'without'} the WebSocket head subscription)`, async () => {
      const proxy = await startHoldingProxy(chain.url);
      const ctx = testContext();
      useTestChain(ctx.registry, chain, [proxy.url]);
      let heads: { close(): Promise<void> } | null = null;
      try {
        await resetCheckpointToHead(ctx, chain);
        const org = await createTestOrg(`case 2 ${withSubscription}`);
        const [z] = await seedPoolAddresses(org.organizationId, 'evm', 1);
        await settle(ctx);
        if (withSubscription) {
          // Pushed heads straight from the node (only the HTTP RPC is held).
          ctx.registry.setWsUrls(LOCAL_CHAIN_ID, [chain.url.replace(/^http/, 'ws')]);
          heads = startHeadWakeups(ctx, ['chain-scan']);
          await sleep(500);
          await chain.mine(1);
          const pushed = await chain.head();
          await eventually(async () => (await ctx.db.select().from(chainHeadObservations).where(eq(chainHeadObservations.headNumber, pushed))).length > 0, 10_000, 'a pushed head recorded');
        }

        // The scanner's connection is held (no error); meanwhile 0.5 USDT lands on Z and the head moves on.
        const { stray, result: order } = await payWhileScannerHeld(ctx, chain, proxy, z, 500_000n, async (paid) => {
          if (withSubscription) {
            await eventually(async () => (await ctx.db.select().from(chainHeadObservations).where(eq(chainHeadObservations.headNumber, paid.blockNumber))).length > 0, 10_000, 'the stray payment\'s head pushed');
          }
          // Then an order gets Z.
          return newOrder(ctx, org.organizationId, '2');
        });
        expect(order.address).to.equal(z);
        await chain.mine(3);
        await settle(ctx);

        const [row] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, stray.txHash));
        expect(row, 'recorded').to.not.equal(undefined);
        // With pushed heads the service saw the block before the order began (no_holder); without,
        // its last look was too old to tell (undecidable). Either way: never the order's.
        expect(row).to.include({ orderId: null, depositBindingId: null, counted: false, unattributedReason: withSubscription ? 'no_holder' : 'undecidable' });
        expect(await orderRow(ctx, order.id)).to.include({ status: 'pending', amountReceived: 0n });

        // The order's own payment, after the scanner looked again, is credited.
        const own = await chain.pay(z, 'USDT', 2_000_000n);
        await chain.mine(3);
        await settle(ctx);
        const [ownRow] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, own.txHash));
        expect(ownRow).to.include({ orderId: order.id, unattributedReason: null });
        expect(await orderRow(ctx, order.id)).to.include({ status: 'completed', amountReceived: 2_000_000n });
      } finally {
        await heads?.close();
        proxy.release();
        await proxy.close();
      }
    });
  }
});
