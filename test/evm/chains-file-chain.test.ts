import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import request from 'supertest';
import { ManualClock } from '../../core/platform/clock';
import { recomputeOrder } from '../../core/orders/order-state';
import { createService } from '../../core/service/service';
import { StartupError } from '../../core/platform/startup-errors';
import { buildTestApp, createTestOrg, STYLES, TEST_DATABASE_URL, testConfig, testLogger, type TestApp, type TestOrg } from '../helpers/harness';
import { ROOT } from '../helpers/processes';
import { resetCheckpointToHead, startTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { dataOf } from '../helpers/wire';
import { eventsFor, orderRow, settle } from '../helpers/evm';

/** A second local EVM chain configured like BNB Smart Chain: evmChainId 56, USDT of 18 decimals. */
const BSC = 'bsc-local';
const AMOUNT = '12.345678901234567891';
const UNITS = 12_345_678_901_234_567_891n;

/** A chains file with one local EVM chain whose one token the test chain runs. */
function chainsFile(chain: TestChain, decimals = 18, spec = { chainId: BSC, name: 'Local BNB Smart Chain (anvil)', evmChainId: 56, currency: 'USDT' }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-chains-'));
  const file = path.join(dir, 'chains.yaml');
  fs.writeFileSync(
    file,
    `chains:
  - chainId: ${spec.chainId}
    name: ${spec.name}
    network: local
    evmChainId: ${spec.evmChainId}
    rpcUrls: [${chain.url}]
    blockTimeMs: 3000
    orderConfirmations: 3
    finality: { kind: depth, blocks: 15 }
    tokens:
      ${spec.currency}: { address: "${chain.tokens[spec.currency]}", decimals: ${decimals} }
`,
  );
  return file;
}

describe('18-decimal USDT on a chain from the chains file (a second anvil, like BSC)', function () {
  this.timeout(120_000);
  let chain: TestChain;
  let org: TestOrg;
  const apps = {} as Record<'a' | 'b', TestApp>;
  const clock = new ManualClock();

  before(async () => {
    chain = await startTestChain({ evmChainId: 56, tokens: [{ currency: 'USDT', name: 'Tether USD (BSC test)', decimals: 18 }] });
    const file = chainsFile(chain);
    for (const style of STYLES) apps[style] = buildTestApp({ style, clock, env: { CHAINS_FILE: file } });
    org = await createTestOrg('BSC org');
    await seedPoolAddresses(org.organizationId, 'evm', 10);
    await resetCheckpointToHead(apps.b.deps, chain, BSC);
  });
  after(async () => chain?.stop());

  const ctx = () => apps.b.deps;

  async function newOrder(extra: Record<string, unknown> = {}): Promise<{ id: string; address: string; paymentUrl: string }> {
    const res = await request(apps.b.app)
      .post('/api/v1/orders')
      .set('X-API-Key', org.keys.owner)
      .send({ orderReference: `bsc-${Date.now()}-${Math.random()}`, amount: AMOUNT, currency: 'USDT', chainId: BSC, ...extra });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    expect(res.body.amount).to.equal(AMOUNT);
    return { id: res.body.orderId, address: res.body.address, paymentUrl: res.body.paymentUrl };
  }

  /** The order's amounts in both wire formats, and its payment page's HTML. */
  async function amountsEverywhere(order: { id: string; paymentUrl: string }) {
    const wire: Record<string, { amount: string; amountReceived: string; amountDue: string; amountExcess: string; status: string }> = {};
    for (const style of STYLES) {
      const res = await request(apps[style].app).get(`/api/v1/orders/${order.id}`).set('X-API-Key', org.keys.viewer);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const data = dataOf(style, res);
      wire[style] = { amount: data.amount, amountReceived: data.amountReceived, amountDue: data.amountDue, amountExcess: data.amountExcess, status: data.status };
    }
    const page = await request(apps.b.app).get(new URL(order.paymentUrl).pathname);
    expect(page.status).to.equal(200);
    return { wire, page: page.text };
  }

  it('GET /chains lists the file chain with its 18-decimal USDT', async () => {
    const res = await request(apps.b.app).get('/api/v1/chains').set('X-API-Key', org.keys.viewer);
    const bsc = res.body.data.find((c: { chainId: string }) => c.chainId === BSC);
    expect(bsc).to.deep.include({ evmChainId: 56, family: 'evm' });
    expect(bsc.currencies).to.deep.equal([{ currency: 'USDT', token: chain.tokens.USDT, decimals: 18 }]);
  });

  it('exact payment: every amount on the wire (A and B), in order.completed and on the page is exact', async () => {
    const order = await newOrder();
    const before = await amountsEverywhere(order);
    for (const style of STYLES) expect(before.wire[style]).to.deep.include({ amount: AMOUNT, amountReceived: '0', amountDue: AMOUNT });
    expect(before.page).to.include(AMOUNT);
    const paid = await chain.pay(order.address, 'USDT', UNITS);
    await chain.mine(2);
    await settle(ctx(), BSC);
    expect((await orderRow(ctx(), order.id)).amountReceived).to.equal(UNITS);
    const after = await amountsEverywhere(order);
    for (const style of STYLES) expect(after.wire[style]).to.deep.equal({ amount: AMOUNT, amountReceived: AMOUNT, amountDue: '0', amountExcess: '0', status: 'completed' });
    expect(after.page).to.include(AMOUNT);
    const [completed] = await eventsFor(ctx(), 'order.completed', 'orderId', order.id);
    expect(completed.data).to.include({ amount: AMOUNT, amountReceived: AMOUNT, currency: 'USDT', chainId: BSC, txHash: paid.txHash });
  });

  it('overpayment by one base unit: completed, the excess is 0.000000000000000001 everywhere', async () => {
    const order = await newOrder();
    await chain.pay(order.address, 'USDT', UNITS + 1n);
    await chain.mine(2);
    await settle(ctx(), BSC);
    const received = '12.345678901234567892';
    const { wire, page } = await amountsEverywhere(order);
    for (const style of STYLES) expect(wire[style]).to.deep.equal({ amount: AMOUNT, amountReceived: received, amountDue: '0', amountExcess: '0.000000000000000001', status: 'completed' });
    expect(page).to.include(received);
    const [completed] = await eventsFor(ctx(), 'order.completed', 'orderId', order.id);
    expect(completed.data).to.include({ amount: AMOUNT, amountReceived: received });
  });

  it('underpayment by one base unit: pending with 0.000000000000000001 due, then expired with the exact amount received', async () => {
    const order = await newOrder({ paymentWindowMinutes: 1, graceMinutes: 0 });
    await chain.pay(order.address, 'USDT', UNITS - 1n);
    await chain.mine(2);
    await settle(ctx(), BSC);
    const received = '12.34567890123456789';
    const pending = await amountsEverywhere(order);
    for (const style of STYLES) expect(pending.wire[style]).to.deep.equal({ amount: AMOUNT, amountReceived: received, amountDue: '0.000000000000000001', amountExcess: '0', status: 'pending' });
    expect(pending.page).to.include(received).and.to.include('0.000000000000000001');
    // The window and grace pass on the clock and the chain; the scan moves past them.
    clock.advance(2 * 60_000);
    await chain.rpc('evm_increaseTime', [120]);
    await chain.mine(1);
    await settle(ctx(), BSC);
    expect(await ctx().db.transaction((tx) => recomputeOrder(tx, ctx(), order.id))).to.equal('expired');
    const expiredNow = await amountsEverywhere(order);
    for (const style of STYLES) expect(expiredNow.wire[style]).to.deep.include({ amount: AMOUNT, amountReceived: received, status: 'expired' });
    const [expired] = await eventsFor(ctx(), 'order.expired', 'orderId', order.id);
    expect(expired.data).to.include({ amount: AMOUNT, amountReceived: received });
  });

  it('a file whose decimals differ from the chain stops the start, naming the line', async () => {
    const config = testConfig({ CHAINS_FILE: chainsFile(chain, 6), START_LOCAL_CHAIN: 'false' });
    let failure: unknown;
    await createService(config, { migrate: false, logger: testLogger() }).then(
      (service) => service.close(),
      (err: unknown) => (failure = err),
    );
    expect(failure).to.be.instanceOf(StartupError);
    expect((failure as Error).message).to.include(`CHAINS_FILE ${config.chainsFile} line 11: ${BSC} USDT at ${chain.tokens.USDT} reports decimals 18, the registry expects 6`);
    // The right decimals: the service starts with the chain in its registry.
    const service = await createService(testConfig({ CHAINS_FILE: chainsFile(chain), START_LOCAL_CHAIN: 'false' }), { migrate: false, logger: testLogger() });
    try {
      expect(service.ctx.registry.get(BSC)!.tokens.USDT!.decimals).to.equal(18);
    } finally {
      await service.close();
    }
  });
});

describe('npm run pay on a chain from the chains file (a custom token: EURC, 6 decimals)', function () {
  this.timeout(120_000);
  const CHAIN_ID = 'eurc-local';
  let chain: TestChain;
  let app: TestApp;
  let org: TestOrg;
  let file: string;

  before(async () => {
    chain = await startTestChain({ evmChainId: 31338, tokens: [{ currency: 'EURC', name: 'Euro Coin (test)', decimals: 6 }] });
    // pay waits for its transfer's receipt: this chain mines each transaction as it comes.
    await chain.rpc('evm_setAutomine', [true]);
    file = chainsFile(chain, 6, { chainId: CHAIN_ID, name: 'Local EURC chain (anvil)', evmChainId: 31338, currency: 'EURC' });
    app = buildTestApp({ env: { CHAINS_FILE: file } });
    org = await createTestOrg('EURC org');
    await seedPoolAddresses(org.organizationId, 'evm', 3);
    await resetCheckpointToHead(app.deps, chain, CHAIN_ID);
  });
  after(async () => chain?.stop());

  it('the service lists the chain; an order in EURC on it is paid with npm run pay and completes', async () => {
    const chains = await request(app.app).get('/api/v1/chains').set('X-API-Key', org.keys.viewer);
    expect(chains.body.data.find((c: { chainId: string }) => c.chainId === CHAIN_ID).currencies).to.deep.equal([{ currency: 'EURC', token: chain.tokens.EURC, decimals: 6 }]);
    const created = await request(app.app).post('/api/v1/orders').set('X-API-Key', org.keys.owner).send({ orderReference: `eurc-${Date.now()}`, amount: '7.25', currency: 'EURC', chainId: CHAIN_ID });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const orderId: string = created.body.orderId;
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', DATABASE_URL: TEST_DATABASE_URL, CHAINS_FILE: file };
    const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile('npm', ['run', '--silent', 'pay', '--', orderId, '7.25'], { cwd: ROOT, env, timeout: 90_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(out.code, out.stderr).to.equal(0);
    expect(out.stdout).to.match(new RegExp(`^Sent 7\\.25 EURC to ${created.body.address}`));
    await chain.mine(2);
    await settle(app.deps, CHAIN_ID);
    const row = await orderRow(app.deps, orderId);
    expect(row).to.include({ status: 'completed', amountReceived: 7_250_000n, currency: 'EURC', chainId: CHAIN_ID });
    const [completed] = await eventsFor(app.deps, 'order.completed', 'orderId', orderId);
    expect(completed.data).to.include({ amount: '7.25', amountReceived: '7.25', currency: 'EURC' });
  });
});
