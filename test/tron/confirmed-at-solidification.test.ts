import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import type { ServiceContext } from '../../core/service/context';
import { TRON_LOCAL_CHAIN_ID, applyTronLocalState } from '../../core/chains/tron/tron-local-state';
import { bindDepositReference } from '../../core/deposits/bindings';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { resetCheckpoint } from '../../core/detection/scan-position';
import { createOrder } from '../../core/orders/orders';
import { setConfigValue } from '../../core/organizations/org-config';
import { chainHeadObservations, deposits, transfers } from '../../db/schema';
import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { createTestOrg, testConfig, testContext } from '../helpers/harness';
import { orderRow } from '../helpers/evm';
import { seedPoolAddresses } from '../helpers/pool';
import { tronProxy } from '../helpers/tron-proxy';

/**
 * Issue 17: a Tron transfer is confirmed when its block is solidified; `confirmations` on the wire
 * count from the full node's head; an organization's `confirmations.*` raise adds blocks beyond
 * solidification. Checked against tron-local run with other lags than the default, and with its
 * solidification stalled (a provider whose solidified view stops).
 */
describe('tron: confirmed only at solidification, confirmations counted from the full head', function () {
  this.timeout(60_000);
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (stops.length) await stops.pop()!();
  });

  /** A node with a lag, a context whose registry knows it (as `npm start` records it), an org with a pool. */
  async function setUp(lag: number, opts: { env?: Record<string, string>; viaProxy?: boolean } = {}) {
    const node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: lag });
    await node.start();
    stops.push(() => node.stop());
    const proxy = opts.viaProxy ? await tronProxy(() => node.url) : null;
    if (proxy) stops.push(proxy.close);
    const ctx = testContext(testConfig(opts.env ?? {}));
    applyTronLocalState(ctx.registry, { rpcUrl: proxy?.url ?? node.url, genesisHash: node.genesisHash, token: node.token, startedAt: '', solidificationLag: lag });
    const org = await createTestOrg(`tron solidification ${lag}`);
    await seedPoolAddresses(org.organizationId, 'tron', 5);
    node.mine(lag + 2);
    // Each test runs its own chain: scanning starts at its head.
    const head = node.head;
    await ctx.db.transaction((tx) => resetCheckpoint(tx, TRON_LOCAL_CHAIN_ID, { number: head.number, hash: head.hash, parentHash: head.parentHash, timestamp: Math.floor(head.timestamp / 1000) }));
    // What the service saw of the previous test's chain means nothing for this one; it looks at this one's head.
    await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, TRON_LOCAL_CHAIN_ID));
    await runChainScan(ctx, TRON_LOCAL_CHAIN_ID);
    return { node, proxy, ctx, orgId: org.organizationId };
  }
  async function settle(ctx: ServiceContext) {
    const scan = await runChainScan(ctx, TRON_LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, TRON_LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  }
  const transferOf = async (ctx: ServiceContext, txId: string) => (await ctx.db.select().from(transfers).where(eq(transfers.txHash, txId)))[0];

  it('tron-local solidifying 4 blocks behind: required confirmations are 5, and a payment is confirmed when its block is solidified, not before', async () => {
    const { node, ctx, orgId } = await setUp(4);
    const order = await createOrder(ctx, orgId, { orderReference: `sol-4-${Date.now()}`, amount: '1', currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
    expect(order.requiredConfirmations).to.equal(5);
    const tx = node.submit([{ to: order.address, amount: 1_000_000n }]);
    const [paid] = node.mine(1);
    for (let confirmations = 1; confirmations <= 4; confirmations++) {
      await settle(ctx);
      expect(await transferOf(ctx, tx.id)).to.include({ status: 'pending', confirmations });
      expect(node.solidifiedNumber).to.be.lessThan(paid.number);
      expect((await orderRow(ctx, order.id)).status).to.equal('pending');
      node.mine(1);
    }
    await settle(ctx);
    expect(node.solidifiedNumber).to.equal(paid.number);
    expect(await transferOf(ctx, tx.id)).to.include({ status: 'confirmed', confirmations: 5 });
    expect((await orderRow(ctx, order.id)).status).to.equal('completed');
  });

  it('a deposit waits for solidification even when order confirmations are raised by the deployment', async () => {
    const { node, ctx, orgId } = await setUp(4, { env: { CONFIRMATIONS_TRON_LOCAL: '8' } });
    const chain = ctx.registry.get(TRON_LOCAL_CHAIN_ID)!;
    expect([chain.orderConfirmations, chain.depositConfirmations]).to.deep.equal([8, 5]);
    const { binding } = await bindDepositReference(ctx, orgId, { depositReference: `sol-dep-${Date.now()}`, protocol: 'tron' });
    const tx = node.submit([{ to: binding.address, amount: 2_000_000n }]);
    const [paid] = node.mine(1);
    node.mine(3);
    await settle(ctx);
    const [dep] = await ctx.db.select().from(deposits).where(sql`${deposits.transferId} = (select id from transfers where tx_hash = ${tx.id})`);
    expect(dep).to.include({ status: 'pending', requiredConfirmations: 5 });
    expect(await transferOf(ctx, tx.id)).to.include({ status: 'pending', confirmations: 4 });
    node.mine(1);
    await settle(ctx);
    expect(node.solidifiedNumber).to.equal(paid.number);
    const [done] = await ctx.db.select().from(deposits).where(eq(deposits.id, dep.id));
    expect(done.status).to.be.oneOf(['confirmed', 'completed']);
  });

  it('solidification stalls: confirmations keep counting from the full head, nothing is confirmed until the block is solidified; an organization raise counts solidified blocks beyond it', async () => {
    const { node, proxy, ctx, orgId } = await setUp(2, { viaProxy: true });
    await setConfigValue(ctx.db, orgId, 'confirmations.orders', 5); // 2 solidified blocks beyond solidification
    const plain = await bindDepositReference(ctx, orgId, { depositReference: `sol-stall-${Date.now()}`, protocol: 'tron' });
    const raised = await createOrder(ctx, orgId, { orderReference: `sol-raise-${Date.now()}`, amount: '1', currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
    expect(raised.requiredConfirmations).to.equal(5);
    const depTx = node.submit([{ to: plain.binding.address, amount: 1_000_000n }, { to: raised.address, amount: 1_000_000n }]);
    const [paid] = node.mine(1);
    // The provider's solidified view stops just below the payment's block.
    proxy!.state.lagOn = /walletsolidity/;
    proxy!.state.height = paid.number - 1;
    node.mine(9);
    await settle(ctx);
    await settle(ctx);
    const rows = await ctx.db.select().from(transfers).where(eq(transfers.txHash, depTx.id));
    expect(rows.map((r) => [r.status, r.confirmations])).to.deep.equal([['pending', 10], ['pending', 10]]);
    expect((await orderRow(ctx, raised.id)).status).to.equal('pending');

    // Solidified up to the payment's block: the deposit (chain's count) is confirmed, the raised order is not yet.
    proxy!.state.height = paid.number;
    await settle(ctx);
    const [dep] = await ctx.db.select().from(deposits).where(eq(deposits.bindingId, plain.binding.bindingId));
    expect(dep.status).to.be.oneOf(['confirmed', 'completed']);
    expect((await orderRow(ctx, raised.id)).status).to.equal('pending');
    proxy!.state.height = paid.number + 1;
    await settle(ctx);
    expect((await orderRow(ctx, raised.id)).status).to.equal('pending');
    proxy!.state.height = paid.number + 2;
    await settle(ctx);
    expect((await orderRow(ctx, raised.id)).status).to.equal('completed');
    const [t] = await ctx.db.select().from(transfers).where(and(eq(transfers.txHash, depTx.id), eq(transfers.orderId, raised.id)));
    expect(t).to.include({ status: 'confirmed', confirmations: 10 });
  });
});
