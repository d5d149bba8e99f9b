import { expect } from 'chai';
import request from 'supertest';
import { getAddress } from 'ethers';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { randomEvmAddress } from '../helpers/pool';
import { settle } from '../helpers/evm';
import { dataOf } from '../helpers/wire';

/**
 * One normalised address form decides every match: pool addresses imported in lower case are
 * stored checksummed, the chain reports recipients checksummed, and an order and a deposit
 * reference on such addresses are credited (scan matching and deposit recording agree).
 */
describe('pool addresses imported in lower case are matched and credited (anvil)', function () {
  this.timeout(90_000);
  let chain: TestChain;
  let t: TestApp;
  let ctx: ServiceContext;
  let org: TestOrg;
  const imported = [randomEvmAddress(), randomEvmAddress()];

  before(async () => {
    chain = await startTestChain();
    t = buildTestApp();
    ctx = t.deps;
    useTestChain(ctx.registry, chain);
    org = await createTestOrg('address forms org');
    const csv = ['address,protocol,derivation_index,master_public_key', ...imported.map((a) => `${a.toLowerCase()},evm,,`)].join('\n');
    const res = await request(t.app).post('/api/v1/address-pool/import').set('X-API-Key', org.keys.admin).send({ protocol: 'evm', mode: 'self_managed', addresses: csv });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    await resetCheckpointToHead(ctx, chain);
  });
  after(async () => chain?.stop());

  it('credits an order and a deposit reference paid to them', async () => {
    const created = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', org.keys.admin)
      .send({ orderReference: `forms-${Date.now()}`, amount: '1.5', currency: 'USDC', chainId: LOCAL_CHAIN_ID });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const order = dataOf('b', created);
    const bound = await request(t.app).post('/api/v1/deposits/bind').set('X-API-Key', org.keys.admin).send({ depositReference: `forms-${Date.now()}`, protocol: 'evm' });
    expect(bound.status, JSON.stringify(bound.body)).to.be.oneOf([200, 201]);
    const binding = dataOf('b', bound);
    // Both hold the imported addresses, in the checksum form.
    expect([order.address, binding.address].sort()).to.deep.equal([...imported].sort());
    expect(order.address).to.equal(getAddress(order.address));

    await chain.mine(1);
    await settle(ctx);
    // The chain does not care about case: pay the lower-case forms.
    await chain.pay(order.address.toLowerCase(), 'USDC', 1_500_000n);
    await chain.pay(binding.address.toLowerCase(), 'USDC', 2_250_000n);
    await chain.mine(6);
    await settle(ctx);
    await settle(ctx);

    const after = dataOf('b', await request(t.app).get(`/api/v1/orders/${order.orderId}`).set('X-API-Key', org.keys.viewer).expect(200));
    expect(after).to.include({ status: 'completed', amountReceived: '1.5' });
    const listed = await request(t.app).get(`/api/v1/deposits?depositReference=${encodeURIComponent(binding.depositReference)}`).set('X-API-Key', org.keys.viewer);
    expect(listed.status, JSON.stringify(listed.body)).to.equal(200);
    const items = (listed.body.data ?? listed.body.items) as { status: string; amount: string; toAddress?: string; address?: string }[];
    expect(items, JSON.stringify(listed.body)).to.have.length(1);
    expect(items[0]).to.include({ status: 'confirmed', amount: '2.25' });
  });
});
