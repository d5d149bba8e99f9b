import { expect } from 'chai';
import { createTestOrg, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, type TestOrg } from '../helpers/harness';
import { checkpointAt, CHAIN, postOrderTimed, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { eventually } from '../helpers/wait';
import { spawnEntry, startTcpProxy, type Spawned, type TcpProxy } from '../helpers/processes';

/**
 * Found by the fault run (issue 32): with PostgreSQL refused for 20 s, order creations answered
 * 500 after up to 10 s each (postgres.js waits out its reconnect back-off, up to 20 s, before it
 * even tries). A request path now gets a fast 503 in the error format with Retry-After, the payment
 * page a "try again" page, and everything works again once the database is back, without a restart.
 */
describe('the API process while PostgreSQL is unreachable (a real API process, the database behind a proxy)', function () {
  this.timeout(120_000);
  let proxy: TcpProxy;
  let api: Spawned;
  let org: TestOrg;
  let base: string;
  let payToken: string;

  before(async () => {
    const dbUrl = new URL(TEST_DATABASE_URL);
    proxy = await startTcpProxy(Number(dbUrl.port || 5432));
    dbUrl.host = new URL(proxy.url).host;
    org = await createTestOrg('Outage org');
    await seedPoolAddresses(org.organizationId, 'evm', 20);
    await checkpointAt(new Date());
    api = spawnEntry('api/main.ts', {
      ...tokenEnv(),
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}dbout`,
      PORT: '0',
      LOG_LEVEL: 'info',
      DATABASE_REQUEST_TIMEOUT_MS: '1500',
    });
    base = `http://127.0.0.1:${JSON.parse(await api.waitFor(/API listening/, 60_000)).port}`;
    const created = await createOrder();
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    payToken = new URL(created.body.paymentUrl ?? created.body.data?.paymentUrl).pathname.split('/')[2];
  });
  after(async () => {
    api?.killGroup('SIGKILL');
    await proxy?.close();
  });

  let refSeq = 0;
  const createOrder = () =>
    postOrderTimed(base, org.keys.member, { orderReference: `outage-${Date.now()}-${++refSeq}`, amount: '10.5', currency: 'USDT', chainId: CHAIN });

  const expectUnavailable = (res: { status: number; retryAfter: string | null; body: any; tookMs: number }) => {
    expect(res.status, JSON.stringify(res.body)).to.equal(503);
    expect(Number(res.retryAfter)).to.be.at.least(1);
    // Style B (the default) error format.
    expect(res.body).to.include({ code: 'SERVICE_UNAVAILABLE', statusCode: 503 });
    expect(res.body.message).to.be.a('string');
  };

  it('refused: order creations answer 503 with Retry-After within a second or two, the status endpoint and page too; all recovers when it returns', async () => {
    await proxy.stop();
    for (let i = 0; i < 6; i++) {
      const res = await createOrder();
      expectUnavailable(res);
      expect(res.tookMs, `attempt ${i}`).to.be.below(2000);
    }
    const started = Date.now();
    const status = await fetch(`${base}/pay/${payToken}/status`);
    expect(status.status).to.equal(503);
    expect(status.headers.get('retry-after')).to.match(/^\d+$/);
    expect(await status.json()).to.include({ error: 'SERVICE_UNAVAILABLE' });
    const page = await fetch(`${base}/pay/${payToken}`);
    expect(page.status).to.equal(503);
    expect(page.headers.get('retry-after')).to.match(/^\d+$/);
    expect(await page.text()).to.match(/reload in a moment/i);
    expect(Date.now() - started).to.be.below(4000);

    await proxy.start();
    await eventually(async () => (await createOrder()).status === 201, 15_000, 'order creation after the database returned');
  });

  it('unanswered (packets dropped): answered 503 at DATABASE_REQUEST_TIMEOUT_MS, not after the OS gives up', async () => {
    // Connections already open keep working; new ones hang. Drop every open one so requests need new ones.
    proxy.blackhole(true);
    await proxy.stop();
    await proxy.start();
    try {
      const res = await createOrder();
      expectUnavailable(res);
      expect(res.tookMs).to.be.below(4000);
    } finally {
      proxy.blackhole(false);
    }
    await eventually(async () => (await createOrder()).status === 201, 20_000, 'order creation after the database answered again');
  });

  it('reset while a new connection is set up (postgres.js\'s array-types query): the process lives on, the request is answered and the next ones succeed', async () => {
    // postgres.js's first query on a new connection has no holder (porsager/postgres#1192): a reset
    // during it was an unhandled rejection that ended the API (found as a flaky failure of this file in CI).
    proxy.resetWhenClientSends('typarray');
    await proxy.stop();
    await proxy.start();
    const lost = /a database connection was lost while it was being set up/;
    await eventually(async () => {
      const res = await createOrder();
      expect(res.status, JSON.stringify(res.body)).to.be.oneOf([201, 503]);
      return lost.test(api.stdout());
    }, 20_000, 'the reset to be met and logged');
    expect(api.child.exitCode).to.equal(null);
    await eventually(async () => (await createOrder()).status === 201, 20_000, 'order creation after the reset');
  });
});
