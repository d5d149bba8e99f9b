import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { createTestOrg, testContext, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, type TestOrg } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { seedPoolAddresses } from '../helpers/pool';
import { postOrderTimed } from '../helpers/orders';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { eventually } from '../helpers/wait';

/** How long the database stays silent (DB_BLACK_HOLE_MS; the run: 35 s). */
const BLACK_HOLE_MS = Number(process.env.DB_BLACK_HOLE_MS ?? 35_000);
const REQUEST_TIMEOUT_MS = 2000;
const WORKER_TIMEOUT_MS = 5000;
/** A request during the silence is answered within the API's bound and a second (the acceptance). */
const ANSWER_WITHIN_MS = REQUEST_TIMEOUT_MS + 1000;
const ORDERS = 5;

/**
 * Found by the fault run (issue 37): with a proxy that keeps every open connection but forwards
 * nothing for 35 s, then heals, a POST /orders and a payment page's status poll answered after
 * 301 s (the client gave up), the workers logged nothing for 7 minutes after the database was back
 * and five paid orders stayed pending until the workers were replaced. Every database call now has
 * a deadline (db/connection-deadline.ts): the API answers 503 with Retry-After within its bound,
 * and the workers' calls fail within theirs, so their jobs are retried and go on once it answers.
 */
describe('API and worker processes while PostgreSQL is silent (connections kept open, nothing forwarded), then back', function () {
  this.timeout(BLACK_HOLE_MS + 150_000);
  let chain: TestChain;
  let proxy: TcpProxy;
  let api: Spawned;
  let worker: Spawned;
  let org: TestOrg;
  let base: string;

  before(async () => {
    chain = await startTestChain();
    const ctx = testContext();
    useTestChain(ctx.registry, chain);
    org = await createTestOrg('Black-hole org');
    await seedPoolAddresses(org.organizationId, 'evm', 20);
    await resetCheckpointToHead(ctx, chain);
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(TEST_DATABASE_URL).port || 5432) });
    const env = {
      DATABASE_URL: proxy.urlFor(TEST_DATABASE_URL),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}blackhole`,
      NETWORK: 'local',
      START_LOCAL_CHAIN: 'false',
      LOG_LEVEL: 'info',
      PORT: '0',
      DATABASE_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      DATABASE_WORKER_TIMEOUT_MS: String(WORKER_TIMEOUT_MS),
      CHAIN_SCAN_INTERVAL_MS: '200',
      CONFIRMATIONS_INTERVAL_MS: '200',
      RPC_URLS_ETHEREUM_LOCAL: chain.url,
      TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
      TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
      TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
    };
    api = spawnEntry('api/main.ts', env);
    worker = spawnEntry('workers/main.ts', env);
    base = `http://127.0.0.1:${JSON.parse(await api.waitFor(/API listening/, 60_000)).port}`;
    await worker.waitFor(/workers started/, 60_000);
    // Orders are created once the worker looks at the chain: a payment mined before the service's
    // first look since its start is undecidable by design (README "Attribution").
    await eventually(
      async () => {
        const rows = (await ctx.db.execute(sql`select max(last_seen_at) as at from chain_head_observations where chain_id = ${LOCAL_CHAIN_ID}`)) as unknown as { at: string | Date | null }[];
        return rows[0]?.at != null && Date.now() - new Date(rows[0].at).getTime() < 1_000;
      },
      60_000,
      'the worker looking at the chain',
    );
  });
  after(async () => {
    api?.killGroup('SIGKILL');
    worker?.killGroup('SIGKILL');
    await proxy?.close();
    await chain?.stop();
  });

  let refSeq = 0;
  const createOrder = () =>
    postOrderTimed(base, org.keys.member, { orderReference: `black-hole-${Date.now()}-${++refSeq}`, amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
  const pollStatus = async (token: string) => {
    const started = Date.now();
    const res = await fetch(`${base}/pay/${token}/status`);
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json(), tookMs: Date.now() - started };
  };
  const getOrder = async (id: string) => {
    const res = await fetch(`${base}/api/v1/orders/${id}`, { headers: { 'x-api-key': org.keys.member } });
    return { status: res.status, body: await res.json() };
  };

  it('answers 503 with Retry-After within the bound during the silence; afterwards the worker resumes by itself and the orders paid before it complete', async () => {
    const paid: { id: string; token: string }[] = [];
    for (let i = 0; i < ORDERS; i++) {
      const created = await createOrder();
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      await chain.pay(created.body.address, 'USDT', 1_000_000n);
      paid.push({ id: created.body.orderId, token: new URL(created.body.paymentUrl).pathname.split('/')[2] });
    }
    // Paid (one block, in the mempool no longer) but not yet confirmed: the confirmations come during the silence.

    proxy.partition();
    const silentFrom = Date.now();
    const answers: { what: string; status: number; retryAfter: string | null; tookMs: number }[] = [];
    while (Date.now() - silentFrom < BLACK_HOLE_MS - ANSWER_WITHIN_MS - 1000) {
      await chain.mine(1);
      const order = await createOrder();
      answers.push({ what: 'POST /orders', ...order });
      const status = await pollStatus(paid[answers.length % ORDERS].token);
      answers.push({ what: 'GET /pay/:token/status', ...status });
      await new Promise((r) => setTimeout(r, 2000));
    }
    const healedAfter = BLACK_HOLE_MS - (Date.now() - silentFrom);
    if (healedAfter > 0) await new Promise((r) => setTimeout(r, healedAfter));
    proxy.heal();
    const healedAt = Date.now();

    const report = answers.map((a) => `${a.what} ${a.status} in ${a.tookMs} ms`).join('; ');
    console.log(`      during ${BLACK_HOLE_MS} ms of silence: ${report}`);
    for (const a of answers) {
      expect(a.status, `${a.what}: ${report}`).to.equal(503);
      expect(Number(a.retryAfter), `${a.what} Retry-After`).to.be.at.least(1);
      expect(a.tookMs, `${a.what}: ${report}`).to.be.at.most(ANSWER_WITHIN_MS);
    }
    expect(answers.filter((a) => a.what === 'POST /orders').length).to.be.at.least(2);

    // Within a minute of the database's return, with no restart, the orders paid before it complete.
    await eventually(
      async () => {
        await chain.mine(1);
        const rows = await Promise.all(paid.map((p) => getOrder(p.id)));
        return rows.every((r) => r.status === 200 && r.body.status === 'completed' && r.body.paymentState === 'paid');
      },
      60_000,
      'the five orders paid before the silence completed',
      500,
    ).catch((err: Error) => {
      // The local Tron and Solana chains are not running here: their failing jobs are noise.
      const lines = worker.stdout().split('\n').filter((l) => !/tron-local|solana-local/.test(l));
      throw new Error(`${err.message}\nworker stdout:\n${lines.join('\n').slice(-6000)}\nworker stderr:\n${worker.stderr().slice(-2000)}`);
    });
    console.log(`      after the database returned: the five orders completed in ${Date.now() - healedAt} ms`);
    expect(api.child.exitCode).to.equal(null);
    expect(worker.child.exitCode).to.equal(null);
    const again = await createOrder();
    expect(again.status, JSON.stringify(again.body)).to.equal(201);
    expect(again.tookMs).to.be.below(ANSWER_WITHIN_MS);
  });
});
