import http from 'node:http';
import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { runChainScan } from '../../core/detection/monitor';
import { currentRangeSize } from '../../core/detection/scan';
import { eventuallySucceeds } from '../helpers/wait';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { getCheckpoint } from '../../core/chains/checkpoints';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { recomputeOrder } from '../../core/orders/order-state';
import { createOrder } from '../../core/orders/orders';
import { setConfigValue } from '../../core/organizations/org-config';
import { transfers } from '../../db/schema';
import { closedPort } from '../helpers/processes';
import { createTestOrg, testContext } from '../helpers/harness';
import { resetCheckpointToHead, startRpcProxy, startTestChain, useTestChain, type RpcProxy, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { eventsFor, orderRow, settle } from '../helpers/evm';

describe('evm scanning through failing providers (anvil)', function () {
  this.timeout(60_000);
  let chain: TestChain;
  let orgId: string;
  let n = 0;

  before(async () => {
    chain = await startTestChain();
    orgId = (await createTestOrg('resilience org')).organizationId;
    await seedPoolAddresses(orgId, 'evm', 20);
  });
  after(async () => chain?.stop());

  const newOrder = (ctx: ServiceContext, amount: string, extra: { paymentWindowMinutes?: number; graceMinutes?: number } = {}) =>
    createOrder(ctx, orgId, { orderReference: `res-${++n}-${Date.now()}`, amount, currency: 'USDT', chainId: LOCAL_CHAIN_ID, ...extra });

  /**
   * Scans until a scan succeeds (the provider's back-off may still be running). One run may take
   * all it needs: under the job's 5 s budget a loaded machine ends it before the head, and the
   * ranges counted would be the machine's speed, not the range shrinking.
   */
  async function scanUntilOk(ctx: ServiceContext, withinMs = 15_000) {
    return eventuallySucceeds(() => runChainScan(ctx, LOCAL_CHAIN_ID, 60_000), withinMs, 200);
  }

  it('provider down for a while, then back: no block skipped, the paid order never expires meanwhile, then completes', async () => {
    let proxy: RpcProxy | null = null;
    try {
      proxy = await startRpcProxy(chain.anvil.port);
      const ctx = testContext();
      const clock = ctx.clock as ManualClock;
      useTestChain(ctx.registry, chain, [proxy.url]);
      await resetCheckpointToHead(ctx, chain);
      const order = await newOrder(ctx, '4', { paymentWindowMinutes: 1, graceMinutes: 0 });
      await runChainScan(ctx, LOCAL_CHAIN_ID);
      const before = (await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!;

      await proxy.stop();
      // The payment lands while the scanner cannot see the chain.
      const paid = await chain.pay(order.address, 'USDT', 4_000_000n);
      await chain.mine(40);
      let failed = 0;
      for (let i = 0; i < 3; i++) {
        try {
          await runChainScan(ctx, LOCAL_CHAIN_ID);
        } catch (err) {
          expect((err as Error).name).to.equal('RpcUnavailableError');
          failed++;
        }
      }
      expect(failed).to.equal(3);
      expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber).to.equal(before.blockNumber);
      // Past the grace end by the clock, but the scanner is behind: the order must stay pending.
      clock.advance(3 * 60_000);
      await chain.rpc('evm_increaseTime', [180]);
      await chain.mine(1);
      expect(await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, order.id))).to.equal('pending');
      await chain.rpc('evm_setTime', [Math.floor(Date.now() / 1000) + 181]);

      await proxy.start();
      await scanUntilOk(ctx);
      expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber).to.equal(await chain.head());
      const [t] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash));
      expect(t).to.include({ orderId: order.id, counted: true, blockNumber: paid.blockNumber });
      await settle(ctx);
      const row = await orderRow(ctx, order.id);
      expect(row.status).to.equal('completed');
      expect(await eventsFor(ctx, 'order.expired', 'orderId', order.id)).to.have.length(0);
      expect(await eventsFor(ctx, 'order.completed', 'orderId', order.id)).to.have.length(1);
    } finally {
      await proxy?.close();
    }
  });

  it('rotates to the next RPC URL when the first one is dead', async () => {
    const ctx = testContext();
    useTestChain(ctx.registry, chain, [`http://127.0.0.1:${await closedPort()}`, chain.url]);
    await resetCheckpointToHead(ctx, chain);
    const order = await newOrder(ctx, '1');
    const paid = await chain.pay(order.address, 'USDT', 1_000_000n);
    await runChainScan(ctx, LOCAL_CHAIN_ID);
    const [t] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash));
    expect(t.orderId).to.equal(order.id);
  });

  it('shrinks the block range when the provider refuses a wide eth_getLogs, and still skips nothing', async () => {
    // A provider that answers eth_getLogs only for ranges of at most 8 blocks (-32005, like Infura).
    const server = http.createServer(async (req, res) => {
      let body = '';
      for await (const chunk of req) body += chunk;
      const msg = JSON.parse(body);
      if (msg.method === 'eth_getLogs') {
        const [{ fromBlock, toBlock }] = msg.params;
        if (Number(toBlock) - Number(fromBlock) + 1 > 8) {
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32005, message: 'query exceeds max block range 8' } }));
          return;
        }
      }
      const upstream = await fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      res.setHeader('content-type', 'application/json');
      res.end(await upstream.text());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const ctx = testContext();
      useTestChain(ctx.registry, chain, [`http://127.0.0.1:${(server.address() as { port: number }).port}`]);
      await resetCheckpointToHead(ctx, chain);
      const order = await newOrder(ctx, '2');
      await chain.mine(30);
      const first = await chain.pay(order.address, 'USDT', 1_000_000n);
      await chain.mine(17);
      const second = await chain.pay(order.address, 'USDT', 1_000_000n);
      const run = await scanUntilOk(ctx);
      // 50 blocks in ranges of at most 8.
      expect(run).to.have.property('ranges').at.least(7);
      expect(currentRangeSize(ctx, LOCAL_CHAIN_ID)).to.be.at.most(32);
      const rows = await ctx.db.select().from(transfers).where(eq(transfers.orderId, order.id));
      expect(rows.map((r) => r.txHash).sort()).to.deep.equal([first.txHash, second.txHash].sort());
      expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber).to.equal(await chain.head());
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it('an organization can raise required confirmations, never lower them', async () => {
    const ctx = testContext();
    useTestChain(ctx.registry, chain);
    const org = (await createTestOrg('strict org')).organizationId;
    await seedPoolAddresses(org, 'evm', 2);
    await setConfigValue(ctx.db, org, 'confirmations.orders', 5);
    const strict = await createOrder(ctx, org, { orderReference: `strict-${Date.now()}`, amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    expect(strict.requiredConfirmations).to.equal(5);
    await setConfigValue(ctx.db, org, 'confirmations.orders', 1);
    const lax = await createOrder(ctx, org, { orderReference: `lax-${Date.now()}`, amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    expect(lax.requiredConfirmations).to.equal(3);
    await resetCheckpointToHead(ctx, chain);
    await chain.pay(strict.address, 'USDT', 1_000_000n);
    await chain.mine(3); // 4 confirmations
    await settle(ctx);
    expect((await orderRow(ctx, strict.id)).status).to.equal('pending');
    await chain.mine(1); // 5
    await settle(ctx);
    expect((await orderRow(ctx, strict.id)).status).to.equal('completed');
  });
});
