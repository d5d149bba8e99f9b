import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { TRON_LOCAL_CHAIN_ID, applyTronLocalState } from '../../core/chains/tron/tron-local-state';
import { TronAdapter } from '../../core/chains/tron/tron-adapter';
import { TronHttp } from '../../core/chains/tron/tron-http';
import { scanChain } from '../../core/detection/scan';
import { getCheckpoint } from '../../core/chains/checkpoints';
import { createOrder } from '../../core/orders/orders';
import { transfers } from '../../db/schema';
import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { createTestOrg, testContext } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { tronProxy as proxy } from '../helpers/tron-proxy';

describe('tron: a lagging provider never makes a block look empty', function () {
  this.timeout(60_000);
  let node: TronLocalNode;
  let dir: string;
  let ctx: ServiceContext;
  let orgId: string;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tron-lag-'));
    node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: 2 });
    await node.start();
    ctx = testContext();
    applyTronLocalState(ctx.registry, { rpcUrl: node.url, genesisHash: node.genesisHash, token: node.token, startedAt: new Date().toISOString() });
    orgId = (await createTestOrg('tron lagging provider org')).organizationId;
    await seedPoolAddresses(orgId, 'tron', 5);
  });
  after(async () => {
    while (closers.length) await closers.pop()!();
    await node?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('load-balanced provider (TronGrid): the backend answering transaction infos lags and answers {} for the payment block; nothing is skipped, the payment is recorded once it has the block', async () => {
    // Blocks and heads come from an up-to-date backend, transaction infos from one that lags.
    const balanced = await proxy(() => node.url);
    closers.push(balanced.close);
    const chain = ctx.registry.get(TRON_LOCAL_CHAIN_ID)!;
    const adapter = new TronAdapter(chain, new TronHttp(chain.chainId, [balanced.url]));
    node.mine(3);
    await scanChain(ctx, adapter); // the checkpoint starts at the head
    const order = await createOrder(ctx, orgId, { orderReference: `tron-lag-${Date.now()}`, amount: '3', currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
    const tx = node.submit([{ to: order.address, amount: 3_000_000n }]);
    const [paid] = node.mine(1);
    node.mine(2);

    balanced.state.lagOn = /gettransactioninfobyblocknum/;
    balanced.state.height = paid.number - 1;
    for (let i = 0; i < 3; i++) await scanChain(ctx, adapter);
    expect(await ctx.db.select().from(transfers).where(sql`${transfers.txHash} = ${tx.id}`)).to.have.length(0);
    balanced.state.height = Infinity; // the lagging backend catches up
    for (let i = 0; i < 3; i++) await scanChain(ctx, adapter);
    const rows = await ctx.db.select().from(transfers).where(sql`${transfers.txHash} = ${tx.id}`);
    expect(rows.map((r) => [r.orderId, r.blockNumber, r.amount])).to.deep.equal([[order.id, paid.number, 3_000_000n]]);
  });

  it('load-balanced provider: the backend answering block ranges lags and leaves the payment block out of its answer; the range is not recorded in part, the payment is recorded once it has the block', async () => {
    const balanced = await proxy(() => node.url);
    closers.push(balanced.close);
    const chain = ctx.registry.get(TRON_LOCAL_CHAIN_ID)!;
    const adapter = new TronAdapter(chain, new TronHttp(chain.chainId, [balanced.url]));
    await scanChain(ctx, adapter);
    const order = await createOrder(ctx, orgId, { orderReference: `tron-lag3-${Date.now()}`, amount: '5', currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
    const [, before] = node.mine(2); // a block before the payment's, which the lagging backend has
    const tx = node.submit([{ to: order.address, amount: 5_000_000n }]);
    const [paid] = node.mine(1);
    node.mine(2);

    balanced.state.lagOn = /getblockbylimitnext/;
    balanced.state.height = paid.number - 1;
    for (let i = 0; i < 3; i++) await scanChain(ctx, adapter);
    expect(await ctx.db.select().from(transfers).where(sql`${transfers.txHash} = ${tx.id}`)).to.have.length(0);
    expect((await getCheckpoint(ctx.db, TRON_LOCAL_CHAIN_ID))!.blockNumber).to.be.below(before.number);
    balanced.state.height = Infinity;
    for (let i = 0; i < 3; i++) await scanChain(ctx, adapter);
    const rows = await ctx.db.select().from(transfers).where(sql`${transfers.txHash} = ${tx.id}`);
    expect(rows.map((r) => [r.orderId, r.blockNumber, r.amount])).to.deep.equal([[order.id, paid.number, 5_000_000n]]);
  });

  it('two providers: the first fails transaction infos, the next lags and answers {} for the payment block; the payment is recorded once, when a provider that has the block answers', async () => {
    const good = await proxy(() => node.url);
    const lagging = await proxy(() => node.url);
    closers.push(good.close, lagging.close);
    const chain = ctx.registry.get(TRON_LOCAL_CHAIN_ID)!;
    const adapter = new TronAdapter(chain, new TronHttp(chain.chainId, [good.url, lagging.url], { clock: ctx.clock }));
    await scanChain(ctx, adapter);
    const order = await createOrder(ctx, orgId, { orderReference: `tron-lag2-${Date.now()}`, amount: '4', currency: 'USDT', chainId: TRON_LOCAL_CHAIN_ID });
    const tx = node.submit([{ to: order.address, amount: 4_000_000n }]);
    const [paid] = node.mine(1);
    node.mine(2);

    lagging.state.height = paid.number - 1;
    good.state.failOn = /gettransactioninfobyblocknum/;
    for (let i = 0; i < 3; i++) {
      await scanChain(ctx, adapter).catch(() => undefined);
      (ctx.clock as ManualClock).advance(10_000); // past any back-off (at most 10 s)
    }
    good.state.failOn = null;
    lagging.state.height = Infinity;
    for (let i = 0; i < 3; i++) await scanChain(ctx, adapter);
    const rows = await ctx.db.select().from(transfers).where(sql`${transfers.txHash} = ${tx.id}`);
    expect(rows.map((r) => [r.orderId, r.blockNumber, r.amount])).to.deep.equal([[order.id, paid.number, 4_000_000n]]);
  });
});
