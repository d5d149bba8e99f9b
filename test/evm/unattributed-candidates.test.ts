import { expect } from 'chai';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import { createOrder } from '../../core/orders/orders';
import { bindDepositReference, unbindDepositReference } from '../../core/deposits/bindings';
import type { RunningWorkers } from '../../workers/runtime';
import { buildTestApp, createTestOrg, testContext, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, payWhileScannerHeld, settle } from '../helpers/evm';
import { startHoldingProxy } from '../helpers/holding-proxy';
import { startReceiver, startTestWorkers, type Receiver } from '../helpers/webhooks';
import { dataOf, expectError, listOf } from '../helpers/wire';

/**
 * Issue 40's first slice, through the public interface on anvil: a transfer recorded unattributed
 * keeps who it could have been meant for (candidates), GET /transfers shows them and filters by
 * attributed / unattributedReason in both wire formats, and transfer.unattributed reaches a
 * subscribed endpoint. The attribution decision itself is the one attribution-cases.test.ts checks.
 */
describe('unattributed transfers: candidates, filters and transfer.unattributed (anvil)', function () {
  this.timeout(180_000);
  let chain: TestChain;
  const apps: Record<'a' | 'b', TestApp> = {} as Record<'a' | 'b', TestApp>;
  let ctx: ServiceContext;
  let org: TestOrg;
  let receiver: Receiver;
  let workers: RunningWorkers | null = null;
  const found: { strayId?: string; undecidableId?: string; previousOrderId?: string; undecidableOrg?: TestOrg } = {};

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const newOrder = (c: ServiceContext, organizationId: string, amount = '2') =>
    createOrder(c, organizationId, { orderReference: `cand-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, amount, currency: 'USDT', chainId: LOCAL_CHAIN_ID });
  const get = (style: 'a' | 'b', key: string, path: string) => request(apps[style].app).get(`/api/v1${path}`).set('X-API-Key', key);

  before(async () => {
    chain = await startTestChain();
    apps.b = buildTestApp({ style: 'b' });
    apps.a = buildTestApp({ style: 'a' });
    ctx = apps.b.deps;
    useTestChain(ctx.registry, chain);
    await resetCheckpointToHead(ctx, chain);
    org = await createTestOrg('unattributed candidates');
    receiver = await startReceiver();
    const created = await request(apps.b.app)
      .post('/api/v1/webhooks/endpoints')
      .set('X-API-Key', org.keys.admin)
      .send({ url: `${receiver.url}/unattributed`, events: ['transfer.unattributed'] });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
  });
  after(async () => {
    await workers?.close();
    await receiver?.close();
    await chain?.stop();
  });

  it('no_holder: a payer paying a completed order again, into the idle address, names that order as the previous holder', async () => {
    const [z] = await seedPoolAddresses(org.organizationId, 'evm', 1);
    await settle(ctx);
    const order = await newOrder(ctx, org.organizationId);
    expect(order.address).to.equal(z);
    await chain.pay(z, 'USDT', 2_000_000n);
    await chain.mine(3);
    await settle(ctx);
    expect((await orderRow(ctx, order.id)).status).to.equal('completed');
    found.previousOrderId = order.id;

    // The address is idle (cooling down); a look at the head below the next block, then the second payment.
    apps.b.clock.advance(5_000);
    await settle(ctx);
    apps.b.clock.advance(5_000);
    const stray = await chain.pay(z, 'USDT', 1_500_000n);
    await chain.mine(3);
    await settle(ctx);

    const list = await get('b', org.keys.viewer, `/transfers?txHash=${stray.txHash}`);
    expect(list.status, JSON.stringify(list.body)).to.equal(200);
    const [t] = list.body.data;
    expect(t).to.include({ attribution: null, unattributedReason: 'no_holder', orderId: null, counted: false, amount: '1.5' });
    expect(t.candidates).to.have.length(1);
    expect(t.candidates[0]).to.include({ kind: 'order', relation: 'previous', orderId: order.id, depositReference: null, bindingId: null });
    expect(t.candidates[0].heldFrom).to.equal(order.createdAt.toISOString());
    expect(t.candidates[0].heldUntil).to.be.a('string');
    found.strayId = t.id;
    // The order stays as it was: nothing is credited from a candidate.
    expect(await orderRow(ctx, order.id)).to.include({ status: 'completed', amountReceived: 2_000_000n });

    // The attributed payment carries no candidates.
    const own = (await get('b', org.keys.viewer, `/transfers?orderId=${order.id}`)).body.data;
    expect(own).to.have.length(1);
    expect(own[0]).to.include({ attribution: 'order' });
    expect(own[0].candidates).to.deep.equal([]);

    // Description A: the same candidates in its envelope, on the list and the transfer.
    const one = dataOf('a', await get('a', org.keys.viewer, `/transfers/${t.id}`));
    expect(one.candidates).to.deep.equal(t.candidates);
    const { items } = listOf('a', await get('a', org.keys.viewer, '/transfers?attributed=false'), 'transfers');
    expect(items.map((x: { id: string }) => x.id)).to.deep.equal([t.id]);
    expect(items[0].candidates).to.deep.equal(t.candidates);
  });

  it('no_holder after an unbind: the candidate is the deposit reference with its binding', async () => {
    const other = await createTestOrg('unattributed candidates deposit');
    await seedPoolAddresses(other.organizationId, 'evm', 1);
    const reference = `cand-user-${Date.now()}`;
    const { binding } = await bindDepositReference(ctx, other.organizationId, { depositReference: reference, protocol: 'evm' });
    await settle(ctx);
    await unbindDepositReference(ctx, other.organizationId, { depositReference: reference, protocol: 'evm' });
    apps.b.clock.advance(5_000);
    await settle(ctx);
    apps.b.clock.advance(5_000);
    const stray = await chain.pay(binding.address, 'USDT', 3_000_000n);
    await chain.mine(3);
    await settle(ctx);
    for (const style of ['a', 'b'] as const) {
      const { items } = listOf(style, await get(style, other.keys.viewer, `/transfers?txHash=${stray.txHash}`), 'transfers');
      expect(items).to.have.length(1);
      expect(items[0]).to.include({ attribution: null, unattributedReason: 'no_holder', depositReference: null, amount: '3' });
      expect(items[0].candidates).to.have.length(1);
      expect(items[0].candidates[0]).to.include({ kind: 'deposit', relation: 'previous', orderId: null, depositReference: reference, bindingId: binding.bindingId });
    }
  });

  it('undecidable: a payment mined while the scanner is held, before an order takes the fresh address, names that order as possible', async () => {
    const proxy = await startHoldingProxy(chain.url);
    const held = testContext();
    useTestChain(held.registry, chain, [proxy.url]);
    try {
      await resetCheckpointToHead(held, chain);
      const other = await createTestOrg('unattributed candidates undecidable');
      found.undecidableOrg = other;
      const [z] = await seedPoolAddresses(other.organizationId, 'evm', 1);
      await settle(held);
      // Case 2 of attribution-cases.test.ts, without pushed heads.
      const { stray, result: order } = await payWhileScannerHeld(held, chain, proxy, z, 500_000n, () => newOrder(held, other.organizationId, '2'));
      expect(order.address).to.equal(z);
      await chain.mine(3);
      await settle(held);

      for (const style of ['a', 'b'] as const) {
        const { items } = listOf(style, await get(style, other.keys.viewer, `/transfers?txHash=${stray.txHash}`), 'transfers');
        expect(items).to.have.length(1);
        expect(items[0]).to.include({ attribution: null, unattributedReason: 'undecidable', orderId: null, amount: '0.5' });
        expect(items[0].candidates).to.have.length(1);
        expect(items[0].candidates[0]).to.include({ kind: 'order', relation: 'possible', orderId: order.id, heldUntil: null, heldFrom: order.createdAt.toISOString() });
        found.undecidableId = items[0].id;
      }
      // Never the order's.
      expect(await orderRow(held, order.id)).to.include({ status: 'pending', amountReceived: 0n });
    } finally {
      proxy.release();
      await proxy.close();
    }
  });

  it('filters attributed and unattributedReason in both formats; bad values are the format\'s 400', async () => {
    const other = found.undecidableOrg!;
    for (const style of ['a', 'b'] as const) {
      const ids = async (key: string, qs: string) => {
        const res = await get(style, key, `/transfers?${qs}`);
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        return listOf(style, res, 'transfers').items.map((x: { id: string }) => x.id);
      };
      expect(await ids(org.keys.viewer, 'attributed=false')).to.deep.equal([found.strayId]);
      expect(await ids(org.keys.viewer, 'attributed=false&unattributedReason=no_holder')).to.deep.equal([found.strayId]);
      expect(await ids(org.keys.viewer, 'unattributedReason=undecidable')).to.deep.equal([]);
      const attributed = await ids(org.keys.viewer, 'attributed=true');
      expect(attributed).to.have.length(1);
      expect(attributed).to.not.include(found.strayId);
      expect(await ids(other.keys.viewer, 'attributed=false&unattributedReason=undecidable')).to.deep.equal([found.undecidableId]);
      expect(await ids(other.keys.viewer, 'unattributedReason=no_holder')).to.deep.equal([]);
      // Another organization's unattributed transfers are never listed.
      expect(await ids(other.keys.viewer, 'attributed=false')).to.not.include(found.strayId);

      expectError(style, await get(style, org.keys.viewer, '/transfers?attributed=maybe'), 400, 'VALIDATION_ERROR', 'ValidationError');
      expectError(style, await get(style, org.keys.viewer, '/transfers?unattributedReason=late'), 400, 'VALIDATION_ERROR', 'ValidationError');
    }
    // Documented: the filters and the candidates in the OpenAPI document.
    const doc = (await request(apps.b.app).get('/api/v1/openapi.json')).body;
    const params = doc.paths['/api/v1/transfers'].get.parameters.map((p: { name: string }) => p.name);
    expect(params).to.include.members(['attributed', 'unattributedReason']);
    expect(doc.webhooks).to.have.property('transfer.unattributed');
  });

  it('transfer.unattributed reaches the subscribed endpoint: reason, amount, currency, chain, tx hash, sender, recipient, block and candidates', async () => {
    ({ workers } = await startTestWorkers());
    const [req] = await receiver.waitFor(1, { path: '/unattributed', timeoutMs: 30_000 });
    const body = JSON.parse(req.body.toString('utf8'));
    expect(body).to.include({ type: 'transfer.unattributed' });
    expect(body.id).to.match(/^evt_/);
    const transfer = (await get('b', org.keys.viewer, `/transfers/${found.strayId}`)).body;
    expect(body.data).to.deep.equal({
      transferId: found.strayId,
      reason: 'no_holder',
      amount: '1.5',
      currency: 'USDT',
      chainId: LOCAL_CHAIN_ID,
      txHash: transfer.txHash,
      from: transfer.from,
      to: transfer.to,
      blockNumber: transfer.blockNumber,
      blockTimestamp: transfer.blockTimestamp,
      candidates: transfer.candidates,
    });
    expect(body.data.candidates[0]).to.include({ orderId: found.previousOrderId, relation: 'previous' });
    // Only that one: the other organization has no endpoint, and attributed payments emit none.
    await sleep(1_000);
    expect(receiver.on('/unattributed')).to.have.length(1);
  });
});
