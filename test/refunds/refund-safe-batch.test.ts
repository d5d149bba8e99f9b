import { expect } from 'chai';
import request from 'supertest';
import { inArray } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { refunds } from '../../db/schema';
import { buildTestApp, createTestOrg, type TestApp, type TestOrg, TEST_REDIS_PREFIX } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import { paidOrder } from '../helpers/refunds';

/**
 * Issue 42's batch export, replayed: ten approved EVM refunds give a Safe Transaction Builder batch
 * whose transactions, sent as they are from the development payer wallet on anvil (as a Safe would
 * execute them), complete all ten, each with its own transaction.
 */
describe('refunds: the Safe Transaction Builder batch of ten approved refunds, replayed on anvil, completes all ten', function () {
  this.timeout(120_000);
  let chain: TestChain;
  let t: TestApp;
  let org: TestOrg;
  const settle = async () => {
    const scan = await runChainScan(t.deps, LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(t.deps, LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  };

  before(async () => {
    chain = await startTestChain();
    t = buildTestApp({ style: 'b', env: { PUBLIC_BASE_URL: 'https://pay.example.com', REDIS_PREFIX: `${TEST_REDIS_PREFIX}rsb` } });
    useTestChain(t.deps.registry, chain);
    await resetCheckpointToHead(t.deps, chain);
    org = await createTestOrg('Safe batch');
    await seedPoolAddresses(org.organizationId, 'evm', 12);
  });
  after(async () => chain?.stop());

  it('issue, claim and approve ten; export format=safe; replay its transactions; all ten completed', async () => {
    const api = (method: 'get' | 'post', path: string) => request(t.app)[method](`/api/v1${path}`).set('X-API-Key', org.keys.admin);
    const ids: string[] = [];
    const destinations: string[] = [];
    for (let i = 0; i < 10; i++) {
      const order = await paidOrder(t, org, '10', 10_000_000n + BigInt(i + 1) * 100_000n);
      const issued = await api('post', `/orders/${order.orderId}/refunds`).send({ reason: `excess ${i}` });
      expect(issued.status, JSON.stringify(issued.body)).to.equal(201);
      const destination = randomEvmAddress();
      const claimed = await request(t.app).post(new URL(issued.body.claimUrl).pathname).set('Content-Type', 'application/json').send({ destination, confirmation: destination });
      expect(claimed.status, JSON.stringify(claimed.body)).to.equal(200);
      expect((await api('post', `/refunds/${issued.body.id}/approve`)).status).to.equal(200);
      ids.push(issued.body.id);
      destinations.push(destination);
    }
    // A look at the head after the approvals: the batch is mined after them by the evidence.
    t.clock.advance(5_000);
    await settle();
    t.clock.advance(5_000);

    const exported = await api('get', '/refunds/export').query({ status: 'approved', format: 'safe' });
    expect(exported.status, JSON.stringify(exported.body)).to.equal(200);
    const batch = exported.body as { chainId: string; transactions: { to: string; value: string; data: string }[] };
    expect(batch.chainId).to.equal('31337');
    expect(batch.transactions).to.have.length(10);

    // The payer wallet holds the tokens (as the merchant's Safe would) and executes the batch as it is.
    const payer = await chain.payer.getAddress();
    await chain.sendMint(payer, 'USDT', 100_000_000n);
    await chain.mine(1);
    for (const tx of batch.transactions) {
      expect(tx.to).to.equal(chain.tokens.USDT);
      await chain.payer.sendTransaction({ to: tx.to, data: tx.data, value: BigInt(tx.value), gasLimit: 200_000 });
    }
    await chain.mine(1);
    await settle();
    await chain.mine(3);
    await settle();

    const rows = await t.deps.db.select().from(refunds).where(inArray(refunds.id, ids));
    expect(rows).to.have.length(10);
    for (const r of rows) {
      expect(r.status, r.id).to.equal('completed');
      expect(r.amountPaid).to.equal(r.amount);
      expect(r.txHash).to.match(/^0x[0-9a-f]{64}$/);
    }
    expect(new Set(rows.map((r) => r.txHash)).size).to.equal(10);
    expect(rows.map((r) => r.destination).sort()).to.deep.equal([...destinations].sort());
  });
});
