import { expect } from 'chai';
import { eq } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { bindDepositReference } from '../../core/deposits/bindings';
import { recomputeOrder } from '../../core/orders/order-state';
import { createOrder } from '../../core/orders/orders';
import { deposits, transfers } from '../../db/schema';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { orderTransfers, settle } from '../helpers/evm';
import request from 'supertest';
import { buildTestApp, capturedLogLines, createTestOrg, TEST_REDIS_PREFIX, testContext } from '../helpers/harness';
import { startReceiver, startTestWorkers, eventually, type Receiver } from '../helpers/webhooks';
import { seedPoolAddresses } from '../helpers/pool';

/** The money lines written since `from`, parsed. */
function moneyLines(from: number): { msg: string; level: string; [k: string]: unknown }[] {
  return capturedLogLines
    .slice(from)
    .map((l) => JSON.parse(l))
    .filter((l) => l.money === true);
}

describe('readable money logs (anvil)', function () {
  this.timeout(90_000);
  let chain: TestChain;
  let ctx: ServiceContext;
  let orgId: string;
  let n = 0;

  before(async () => {
    chain = await startTestChain();
    ctx = testContext();
    useTestChain(ctx.registry, chain);
    orgId = (await createTestOrg('money logs org')).organizationId;
    await seedPoolAddresses(orgId, 'evm', 10);
    await resetCheckpointToHead(ctx, chain);
  });
  after(async () => chain?.stop());

  const newOrder = (amount: string, extra: { paymentWindowMinutes?: number; graceMinutes?: number } = {}) =>
    createOrder(ctx, orgId, { orderReference: `money-${++n}-${Date.now()}`, amount, currency: 'USDT', chainId: LOCAL_CHAIN_ID, ...extra });

  it('one info line each for payment seen, payment confirmed and order completed, with the ids to search by', async () => {
    const from = capturedLogLines.length;
    const order = await newOrder('12.5');
    const paid = await chain.pay(order.address, 'USDT', 12_500_000n);
    await chain.mine(2);
    await settle(ctx);
    await settle(ctx);
    const [t] = await orderTransfers(ctx, order.id);
    const lines = moneyLines(from);
    const seen = lines.filter((l) => l.msg === 'payment seen' && l.transferId === t.id);
    expect(seen).to.have.length(1);
    expect(seen[0]).to.include({ level: 'info', organizationId: orgId, orderId: order.id, txHash: paid.txHash, chainId: LOCAL_CHAIN_ID, currency: 'USDT', amount: '12.5', amountUnits: '12500000', attributed: true, counted: true, to: order.address });
    const confirmed = lines.filter((l) => l.msg === 'payment confirmed' && l.transferId === t.id);
    expect(confirmed).to.have.length(1);
    expect(confirmed[0]).to.include({ level: 'info', orderId: order.id, txHash: paid.txHash, amount: '12.5', confirmations: 3 });
    const completed = lines.filter((l) => l.msg === 'order completed' && l.orderId === order.id);
    expect(completed).to.have.length(1);
    expect(completed[0]).to.include({ level: 'info', organizationId: orgId, orderReference: order.orderReference, amount: '12.5', amountReceived: '12.5', txHash: paid.txHash });
    // Settling again writes nothing more for it.
    const again = capturedLogLines.length;
    await settle(ctx);
    expect(moneyLines(again).filter((l) => l.transferId === t.id || l.orderId === order.id)).to.deep.equal([]);
  });

  it('payment dropped by a reorg, and order expired', async () => {
    const from = capturedLogLines.length;
    const order = await newOrder('8', { paymentWindowMinutes: 1, graceMinutes: 0 });
    const paid = await chain.pay(order.address, 'USDT', 3_000_000n);
    await settle(ctx);
    await chain.reorg(1);
    await chain.mine(3);
    await settle(ctx);
    await settle(ctx);
    const dropped = moneyLines(from).filter((l) => l.msg === 'payment dropped');
    expect(dropped.map((l) => l.txHash)).to.include(paid.txHash);
    expect(dropped.find((l) => l.txHash === paid.txHash)).to.include({ level: 'info', orderId: order.id, organizationId: orgId, amount: '3' });

    (ctx.clock as ManualClock).advance(2 * 60_000);
    await chain.rpc('evm_increaseTime', [120]);
    await chain.mine(1);
    await settle(ctx);
    expect(await ctx.db.transaction((tx) => recomputeOrder(tx, ctx, order.id))).to.equal('expired');
    const expired = moneyLines(from).filter((l) => l.msg === 'order expired' && l.orderId === order.id);
    expect(expired).to.have.length(1);
    expect(expired[0]).to.include({ level: 'info', organizationId: orgId, orderReference: order.orderReference, amount: '8', amountReceived: '0' });
  });

  it('deposit pending and deposit confirmed, with the deposit reference', async () => {
    const from = capturedLogLines.length;
    const reference = `money-user-${Date.now()}`;
    const { binding } = await bindDepositReference(ctx, orgId, { depositReference: reference, protocol: 'evm' });
    const paid = await chain.pay(binding.address, 'USDC', 2_000_000n);
    await settle(ctx);
    const [t] = await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash));
    const [dep] = await ctx.db.select().from(deposits).where(eq(deposits.transferId, t.id));
    await chain.mine(dep.requiredConfirmations);
    await settle(ctx);
    await settle(ctx);
    const lines = moneyLines(from);
    for (const msg of ['deposit pending', 'deposit confirmed']) {
      const found = lines.filter((l) => l.msg === msg && l.depositId === dep.id);
      expect(found, msg).to.have.length(1);
      expect(found[0]).to.include({ level: 'info', organizationId: orgId, depositReference: reference, transferId: t.id, txHash: paid.txHash, amount: '2', currency: 'USDC' });
    }
    expect(lines.filter((l) => l.msg === 'payment seen' && l.transferId === t.id)[0]).to.include({ depositBindingId: t.depositBindingId, attributed: true });
  });
});

describe('readable money logs: webhooks', function () {
  this.timeout(60_000);
  let receiver: Receiver;
  let workers: Awaited<ReturnType<typeof startTestWorkers>>['workers'];
  const { app } = buildTestApp({ env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  before(async () => {
    // /flaky fails once then succeeds; /gone answers 410 (the endpoint is disabled).
    receiver = await startReceiver((req) => (req.path === '/gone' ? { status: 410 } : req.path === '/flaky' && req.n === 1 ? { status: 500 } : { status: 200 }));
    // Its own queue prefix: the worker process registers job schedulers that must not run in the
    // queues other suites share (the relay picks the events up from Postgres).
    workers = (await startTestWorkers({ REDIS_PREFIX: `${TEST_REDIS_PREFIX}mlw` })).workers;
  });
  after(async () => {
    await workers?.close();
    await receiver?.close();
  });

  it('webhook failed (with the next attempt time), delivered, and endpoint disabled', async () => {
    const org = await createTestOrg('money webhooks org');
    const from = capturedLogLines.length;
    const endpoint = async (path: string) => {
      const res = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}${path}`, events: ['order.completed'] });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      await request(app).post(`/api/v1/webhooks/endpoints/${res.body.id}/test`).set('X-API-Key', org.keys.admin).expect((r) => expect(r.status).to.be.oneOf([200, 201, 202]));
      return res.body.id as string;
    };
    const flaky = await endpoint('/flaky');
    const gone = await endpoint('/gone');
    const lines = await eventually(async () => {
      const l = moneyLines(from);
      return l.some((x) => x.msg === 'webhook delivered' && x.endpointId === flaky) && l.some((x) => x.msg === 'webhook failed, endpoint disabled' && x.endpointId === gone) ? l : null;
    });
    const failed = lines.find((l) => l.msg === 'webhook failed, will retry' && l.endpointId === flaky)!;
    expect(failed).to.include({ level: 'info', organizationId: org.organizationId, eventType: 'webhook.test', attempt: 1, statusCode: 500 });
    expect(failed.eventId).to.match(/^evt_/);
    expect(failed.deliveryId).to.be.a('string');
    expect(new Date(failed.nextAttemptAt as string).toISOString()).to.equal(failed.nextAttemptAt);
    const delivered = lines.find((l) => l.msg === 'webhook delivered' && l.endpointId === flaky)!;
    expect(delivered).to.include({ level: 'info', eventId: failed.eventId, deliveryId: failed.deliveryId, attempt: 2, statusCode: 200 });
    expect(lines.find((l) => l.msg === 'webhook failed, endpoint disabled' && l.endpointId === gone)).to.include({ statusCode: 410, organizationId: org.organizationId });
  });
});
