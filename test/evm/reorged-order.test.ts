import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import { transfers } from '../../db/schema';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { eventsFor, settle } from '../helpers/evm';
import { dataOf } from '../helpers/wire';

/**
 * A completed order whose paying transaction is reorganised out deeper than its confirmations and
 * mined again in another block: the order stays completed with one order.completed, and its
 * txHash/blockNumber on the wire follow the transfer to the block it is in now.
 */
describe('a completed order whose payment is re-mined after a deep reorg (anvil)', function () {
  this.timeout(90_000);
  let chain: TestChain;
  let t: TestApp;
  let ctx: ServiceContext;
  let org: TestOrg;

  before(async () => {
    chain = await startTestChain();
    t = buildTestApp();
    ctx = t.deps;
    useTestChain(ctx.registry, chain);
    org = await createTestOrg('reorged order org');
    await seedPoolAddresses(org.organizationId, 'evm', 2);
    await resetCheckpointToHead(ctx, chain);
  });
  after(async () => chain?.stop());

  const raw = (hash: string) => chain.rpc<string>('eth_getRawTransactionByHash', [hash]);
  const getOrder = async (id: string) => dataOf('b', await request(t.app).get(`/api/v1/orders/${id}`).set('X-API-Key', org.keys.viewer).expect(200));

  it('keeps the order completed and shows the block the transfer was re-mined in', async () => {
    const created = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', org.keys.admin)
      .send({ orderReference: `reorged-${Date.now()}`, amount: '3', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const orderId = dataOf('b', created).orderId as string;
    const address = dataOf('b', created).address as string;
    await chain.mine(1);
    await settle(ctx);
    const pay = await chain.sendMint(address, 'USDT', 3_000_000n);
    await chain.mine(1);
    const paid = (await chain.provider.getTransactionReceipt(pay))!;
    await settle(ctx);
    await chain.mine(6);
    await settle(ctx);
    const completed = await getOrder(orderId);
    expect(completed).to.include({ status: 'completed', txHash: pay, blockNumber: paid.blockNumber });

    // Everything from the payment's block replaced; the payment re-mined two blocks later.
    const depth = (await chain.head()) - paid.blockNumber + 1;
    await chain.reorg(depth, [[await raw(pay), 2]]);
    const moved = (await chain.provider.getTransactionReceipt(pay))!;
    expect(moved.blockNumber).to.not.equal(paid.blockNumber);
    await settle(ctx);
    await chain.mine(2);
    await settle(ctx);
    await settle(ctx);

    const [transfer] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, pay));
    expect(transfer).to.include({ status: 'confirmed', blockNumber: moved.blockNumber, blockHash: moved.blockHash, orderId });
    const after = await getOrder(orderId);
    expect(after).to.include({ status: 'completed', txHash: pay, blockNumber: moved.blockNumber });
    expect(after.confirmations, 'the confirmations counted at completion').to.equal(completed.confirmations);
    expect(await eventsFor(ctx, 'order.completed', 'orderId', orderId)).to.have.length(1);
  });
});
