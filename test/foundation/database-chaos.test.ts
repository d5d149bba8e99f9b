import { expect } from 'chai';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { events, orders, transfers, webhookDeliveries } from '../../db/schema';
import { resetCheckpointToHead, startTestChain, type TestChain } from '../helpers/anvil';
import { createTestOrg, testContext, testDb, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, type TestOrg } from '../helpers/harness';
import { postgresChaos, seededRandom, type PostgresChaos } from '../helpers/pg-chaos';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, startTcpProxy, type Spawned, type TcpProxy } from '../helpers/processes';
import { eventually } from '../helpers/wait';
import { startReceiver, type Receiver } from '../helpers/webhooks';

/**
 * Found from the outside (issue 37): cutting the database connections while orders were created
 * ended the process, from a deferred write of postgres.js 3.4.9 that found its socket gone
 * (patches/postgres+3.4.9.patch). Here a real API process and a real worker reach Postgres through
 * a proxy that cuts connections at random points of the protocol (while they are opened, mid-query,
 * inside transactions; RST and FIN) while orders are created, paid on a local chain and their
 * webhooks delivered; then the database is cut off for 10 s; then it heals. The seed is printed on
 * failure (CHAOS_SEED=<n> repeats the draw of fates; timing on a loaded machine still varies).
 */
describe('database connections cut at random under a running API and worker (chaos at the driver boundary)', function () {
  this.timeout(150_000);
  const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const REQUEST_TIMEOUT_MS = 2000;
  /** How long any request may take, whatever the database does (issue 37). */
  const ANSWER_BOUND_MS = REQUEST_TIMEOUT_MS + 1000;
  /**
   * Only keeps a hung request from hanging the test (the client's own timeout). Before every
   * database call had a deadline (db/connection-deadline.ts), 1 request in about 1,200 took 10.2 s
   * under these cuts; since, five runs of about 500 requests each answered in at most 1.1 s, and
   * ANSWER_BOUND_MS is asserted.
   */
  const HANG_BOUND_MS = 15_000;
  const CHAOS_MS = 15_000;
  const CUT_MS = 10_000;
  const UNITS = 1_000_000n; // 1 USDT (6 decimals)
  /**
   * Each client waits this long after an order it got, so the orders made depend on the run's
   * length, not on how fast a request is: with the driver's defects fixed, four clients without a
   * pause took the 400 addresses of the pool in the chaos phase, and every later request (the
   * order after the heal too) was a right NO_AVAILABLE_ADDRESSES.
   */
  const PAUSE_AFTER_ORDER_MS = 100;
  const CREATORS = 4;
  /** More than CREATORS clients can take at PAUSE_AFTER_ORDER_MS over the whole run, and one more. */
  const POOL_SIZE = Math.ceil((CREATORS * (CHAOS_MS + CUT_MS + 3000)) / PAUSE_AFTER_ORDER_MS) + 100;

  let chain: TestChain;
  let proxy: TcpProxy;
  let chaos: PostgresChaos;
  let receiver: Receiver;
  let org: TestOrg;
  let api: Spawned;
  let worker: Spawned;
  let base: string;

  let stopMining: (() => Promise<void>) | undefined;
  let setUpMs = 0;
  before(async () => {
    const started = Date.now();
    chain = await startTestChain();
    const ctx = testContext();
    org = await createTestOrg('Chaos org');
    await seedPoolAddresses(org.organizationId, 'evm', POOL_SIZE);
    await resetCheckpointToHead(ctx, chain);
    receiver = await startReceiver();

    const dbUrl = new URL(TEST_DATABASE_URL);
    proxy = await startTcpProxy(Number(dbUrl.port || 5432));
    // Every connection is followed from its start (the pools open theirs at start-up); cuts begin
    // when the chaos is enabled.
    chaos = postgresChaos(seededRandom(seed), { setUpShare: 0.3, perStatement: 0.04, perStatementInTransaction: 0.2 });
    proxy.tap((n) => chaos.tap(n));
    dbUrl.host = new URL(proxy.url).host;
    const env = {
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}chaos`,
      NETWORK: 'local',
      LOG_LEVEL: 'info',
      WEBHOOK_ALLOW_INSECURE: 'true',
      RPC_URLS_ETHEREUM_LOCAL: chain.url,
      TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
      TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
      TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
    };
    // The clients below retry a 503 at once, as many times as it takes: no rate limit in the way.
    api = spawnEntry('api/main.ts', { ...env, PORT: '0', DATABASE_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), RATE_LIMIT_ENABLED: 'false' });
    worker = spawnEntry('workers/main.ts', {
      ...env,
      CHAIN_SCAN_INTERVAL_MS: '200',
      CONFIRMATIONS_INTERVAL_MS: '200',
      WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.4,1,2',
      WEBHOOK_RELAY_INTERVAL_MS: '200',
    });
    base = `http://127.0.0.1:${JSON.parse(await api.waitFor(/API listening/, 60_000)).port}`;
    await worker.waitFor(/workers started/, 60_000);
    const endpoint = await fetch(`${base}/api/v1/webhooks/endpoints`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.keys.admin },
      body: JSON.stringify({ url: `${receiver.url}/hooks`, events: ['order.completed'] }),
    });
    expect(endpoint.status, await endpoint.clone().text()).to.equal(201);
    // Orders are created once the worker looks at the chain: a payment mined before the service's
    // first look since its start is undecidable by design (README "Attribution").
    await eventually(
      async () => {
        const rows = (await testDb().execute(sql`select max(last_seen_at) as at from chain_head_observations where chain_id = ${LOCAL_CHAIN_ID}`)) as unknown as { at: string | Date | null }[];
        return rows[0]?.at != null && Date.now() - new Date(rows[0].at).getTime() < 2_000;
      },
      60_000,
      'the worker looking at the chain',
    );
    setUpMs = Date.now() - started;
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') {
      console.log(`database chaos seed: ${seed} (CHAOS_SEED=${seed} to draw the same fates); cuts: ${JSON.stringify(chaos?.counts)}`);
      console.log(`last answers: ${JSON.stringify(lastAttempts.slice(-6))}`);
      const notable = (p: Spawned | undefined) =>
        (p?.stdout() ?? '')
          .split('\n')
          .filter((l) => /"level":"(warn|error|fatal)"/.test(l) || /"responseTime":\d{4,}/.test(l))
          .slice(-40)
          .join('\n');
      console.log(`API warnings, errors and slow requests:\n${notable(api)}`);
      console.log(`API stderr:\n${api?.stderr().slice(-3000)}\nAPI stdout:\n${api?.stdout().slice(-4000)}\nworker stderr:\n${worker?.stderr().slice(-3000)}`);
    }
  });

  after(async () => {
    for (const p of [api, worker]) p?.killGroup('SIGTERM');
    await Promise.all([api, worker].map((p) => p && Promise.race([p.exited, new Promise((r) => setTimeout(r, 5000))])));
    for (const p of [api, worker]) p?.killGroup('SIGKILL');
    await stopMining?.();
    await proxy?.close();
    await receiver?.close();
    await chain?.stop();
  });

  interface Attempt {
    key: string;
    /** When it was sent, ms after the chaos began. */
    at: number;
    status: number;
    tookMs: number;
    retryAfter: string | null;
    body: any;
  }
  interface Created {
    key: string;
    id: string;
    address: string;
  }

  let lastAttempts: unknown[] = [];
  it('no process exits, every request is answered 201 or 503 and none hangs, nothing is recorded twice, and work resumes without a restart', async () => {
    // A process that exits fails the test at once, with what it printed.
    const exitOf = (p: Spawned, name: string) =>
      p.exited.then((code) => {
        throw new Error(`the ${name} process exited (${code}) under the chaos:\n${p.stderr().slice(-3000)}`);
      });
    const exited = Promise.race([exitOf(api, 'API'), exitOf(worker, 'worker')]);
    exited.catch(() => {});
    await Promise.race([exited, chaosRun()]);
  });

  async function chaosRun(): Promise<void> {
    const attempts: Attempt[] = [];
    lastAttempts = attempts;
    const created: Created[] = [];
    const paid: Created[] = [];
    let seq = 0;
    const chaosStartedAt = Date.now();

    const postOrder = async (key: string): Promise<Attempt> => {
      const started = Date.now();
      try {
        const res = await fetch(`${base}/api/v1/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': org.keys.member, 'idempotency-key': key },
          body: JSON.stringify({ orderReference: key, amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID }),
          // A request past the bound is a failure below; this only keeps a hung one from hanging the test.
          signal: AbortSignal.timeout(HANG_BOUND_MS + 10_000),
        });
        const attempt = { key, at: started - chaosStartedAt, status: res.status, tookMs: Date.now() - started, retryAfter: res.headers.get('retry-after'), body: await res.json() };
        attempts.push(attempt);
        return attempt;
      } catch (err) {
        const attempt = { key, at: started - chaosStartedAt, status: 0, tookMs: Date.now() - started, retryAfter: null, body: String(err) };
        attempts.push(attempt);
        return attempt;
      }
    };

    /** A client creating orders one after another; a 503 is retried with the same Idempotency-Key and body. */
    const creator = async (until: () => boolean) => {
      while (!until()) {
        const key = `chaos-${seed}-${++seq}`;
        for (;;) {
          const a = await postOrder(key);
          if (a.status === 201) {
            created.push({ key, id: a.body.orderId, address: a.body.address });
            await new Promise((r) => setTimeout(r, PAUSE_AFTER_ORDER_MS));
            break;
          }
          if (a.status !== 503 || until()) break;
          await new Promise((r) => setTimeout(r, 100 + Math.floor(Math.random() * 200)));
        }
      }
    };

    const payNext = async () => {
      const order = created.find((c) => !paid.includes(c));
      if (!order) return;
      paid.push(order);
      await chain.pay(order.address, 'USDT', UNITS);
    };

    // Blocks keep coming, so payments gather their confirmations.
    let mining = true;
    const miner = (async () => {
      while (mining) {
        await chain.mine(1);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    // Stopped by `after` too when the run fails early: a miner left running met the stopped chain
    // in the next file's hooks.
    stopMining = async () => {
      mining = false;
      await miner;
    };

    // 1. Chaos: random connections cut while orders are created and paid, and webhooks delivered.
    chaos.enabled = true;
    let phase: 'chaos' | 'cut' | 'healed' = 'chaos';
    const creatorsStopAt = Date.now() + CHAOS_MS + CUT_MS + 3000;
    const creators = Promise.all(Array.from({ length: CREATORS }, () => creator(() => Date.now() > creatorsStopAt)));
    const chaosEnds = Date.now() + CHAOS_MS;
    while (Date.now() < chaosEnds) {
      await payNext();
      await new Promise((r) => setTimeout(r, 400));
    }

    // 2. The database cut off for 10 s (every connection closed, new ones refused); a payment meanwhile.
    chaos.enabled = false;
    phase = 'cut';
    await proxy.stop();
    await payNext();
    await new Promise((r) => setTimeout(r, CUT_MS));

    // 3. Healed.
    await proxy.start();
    phase = 'healed';
    const healedAt = Date.now();
    await creators;
    expect(phase).to.equal('healed');

    // Work resumes without a restart: an order created and paid now is credited and its webhook delivered.
    let after: Created | undefined;
    await eventually(
      async () => {
        const a = await postOrder(`chaos-${seed}-after`);
        if (a.status === 201) after = { key: a.key, id: a.body.orderId, address: a.body.address };
        return after;
      },
      20_000,
      'an order created after the database healed',
      200,
    );
    paid.push(after!);
    created.push(after!);
    await chain.pay(after!.address, 'USDT', UNITS);

    const deliveredOrderIds = () => new Set(receiver.on('/hooks').map((r) => JSON.parse(r.body.toString()).data.orderId as string));
    const ids = paid.map((p) => p.id);
    try {
      await eventually(
        async () => {
          const rows = await testDb().select({ id: orders.id, status: orders.status }).from(orders).where(inArray(orders.id, ids));
          const delivered = deliveredOrderIds();
          return rows.length === ids.length && rows.every((r) => r.status === 'completed') && ids.every((id) => delivered.has(id));
        },
        45_000,
        'every paid order completed and its webhook delivered',
        250,
      );
    } finally {
      await stopMining();
    }

    // No process exited, and none met an uncaught error.
    expect(api.child.exitCode, 'API process').to.equal(null);
    expect(worker.child.exitCode, 'worker process').to.equal(null);
    for (const p of [api, worker]) expect(p.stderr()).to.not.match(/TypeError|uncaught|Unhandled/i);

    // The proxy met every kind of cut.
    const { cuts, kinds } = chaos.counts;
    expect(cuts.setup, JSON.stringify(chaos.counts)).to.be.at.least(1);
    expect(cuts.query, JSON.stringify(chaos.counts)).to.be.at.least(1);
    expect(cuts.transaction, JSON.stringify(chaos.counts)).to.be.at.least(1);
    expect(kinds.rst, JSON.stringify(chaos.counts)).to.be.at.least(1);
    expect(kinds.fin, JSON.stringify(chaos.counts)).to.be.at.least(1);

    // Every request answered 201 or 503 (in the error format, with Retry-After), within the bound.
    const statuses = attempts.reduce<Record<number, number>>((n, a) => ((n[a.status] = (n[a.status] ?? 0) + 1), n), {});
    const firsts = new Set<string>();
    const odd = attempts.filter((a) => {
      const first = !firsts.has(a.key);
      firsts.add(a.key);
      if (a.status === 201 || a.status === 503) return false;
      // Known gap, not this test's to hide (see the report of issue 37): a retry with the key of a
      // request answered 503 may meet what that request left when its own connection was cut at
      // the commit (the order exists: DUPLICATE_ORDER_REFERENCE naming it) or before its key was
      // released (IDEMPOTENCY_IN_PROGRESS until the key is abandoned). Never on a first attempt,
      // and never a second order (checked below).
      return first || !['IDEMPOTENCY_IN_PROGRESS', 'DUPLICATE_ORDER_REFERENCE'].includes(a.body?.code);
    });
    expect(odd, `answers other than 201/503 (of ${JSON.stringify(statuses)}): ${JSON.stringify(odd.slice(0, 5))}`).to.deep.equal([]);
    for (const a of attempts.filter((x) => x.status === 503)) {
      expect(a.body, JSON.stringify(a)).to.include({ code: 'SERVICE_UNAVAILABLE', statusCode: 503 });
      expect(Number(a.retryAfter), JSON.stringify(a)).to.be.at.least(1);
    }
    const overBound = attempts.filter((a) => a.tookMs > ANSWER_BOUND_MS);
    expect(overBound, `answers slower than DATABASE_REQUEST_TIMEOUT_MS + 1 s (${ANSWER_BOUND_MS} ms): ${JSON.stringify(overBound.slice(0, 5))}`).to.deep.equal([]);
    expect(statuses[201], JSON.stringify(statuses)).to.be.at.least(10);
    expect(statuses[503], JSON.stringify(statuses)).to.be.at.least(1);
    const poolEmpty = attempts.filter((a) => a.body?.code === 'NO_AVAILABLE_ADDRESSES');
    expect(poolEmpty, `the pool of ${POOL_SIZE} ran out: the test's sizing, not the service`).to.deep.equal([]);

    // Nothing recorded twice: one order per Idempotency-Key (the key is also the reference), each
    // answered 201 once with the same order; one transfer per payment, credited once; one
    // order.completed and one delivery per paid order.
    const keys = [...new Set(attempts.map((a) => a.key))];
    const stored = await testDb()
      .select({ id: orders.id, reference: orders.orderReference, amountReceived: orders.amountReceived })
      .from(orders)
      .where(and(eq(orders.organizationId, org.organizationId), inArray(orders.orderReference, keys)));
    expect(stored.length).to.equal(new Set(stored.map((o) => o.reference)).size);
    for (const c of created) expect(stored.find((o) => o.reference === c.key)?.id, c.key).to.equal(c.id);
    for (const a of attempts.filter((x) => x.body?.code === 'DUPLICATE_ORDER_REFERENCE')) {
      expect(stored.find((o) => o.reference === a.key)?.id, a.key).to.equal(a.body.existingOrderId);
      expect(created.find((c) => c.key === a.key), `${a.key} answered 201 and then 409`).to.equal(undefined);
    }
    const paidRows = await testDb().select().from(transfers).where(inArray(transfers.orderId, ids));
    expect(paidRows).to.have.length(ids.length);
    for (const o of stored.filter((s) => ids.includes(s.id))) expect(String(o.amountReceived), o.id).to.equal(String(UNITS));
    const completedEvents = await testDb()
      .select({ id: events.id, orderId: sql<string>`${events.data}->>'orderId'` })
      .from(events)
      .where(and(eq(events.type, 'order.completed'), sql`${events.data}->>'orderId' = any(${sql.param(ids)}::text[])`));
    expect(completedEvents).to.have.length(ids.length);
    const deliveries = await testDb()
      .select({ eventId: webhookDeliveries.eventId, status: webhookDeliveries.status })
      .from(webhookDeliveries)
      .where(inArray(webhookDeliveries.eventId, completedEvents.map((e) => e.id)));
    expect(deliveries).to.have.length(ids.length);
    expect(deliveries.every((d) => d.status === 'succeeded')).to.equal(true);
    // How long after healing the work of the outage was done (figures, not assertions).
    const completedAt = await testDb().select({ id: orders.id, at: orders.completedAt }).from(orders).where(inArray(orders.id, ids));
    const lastCompleted = Math.max(...completedAt.map((o) => o.at!.getTime())) - healedAt;
    const lastDelivered = Math.max(...receiver.on('/hooks').map((r) => r.receivedAt)) - healedAt;
    const lastCreatedAt = Date.now();
    console.log(
      `      recovery: last order completed ${(lastCompleted / 1000).toFixed(1)} s, last webhook ${(lastDelivered / 1000).toFixed(1)} s after healing (checked at ${((lastCreatedAt - healedAt) / 1000).toFixed(1)} s)`,
    );
    console.log(
      `      chaos seed ${seed}: ${attempts.length} requests ${JSON.stringify(statuses)}, slowest ${Math.max(...attempts.map((a) => a.tookMs))} ms, ` +
        `${overBound.length} over ${ANSWER_BOUND_MS} ms ${JSON.stringify(overBound.map((a) => [a.status, a.tookMs]))}; ` +
        `${chaos.counts.connections} connections, cuts ${JSON.stringify(chaos.counts.cuts)} ${JSON.stringify(chaos.counts.kinds)}, ${chaos.counts.onAnswer} on the answer; ` +
        `${ids.length} orders paid and delivered; set-up ${(setUpMs / 1000).toFixed(1)} s`,
    );
  }
});
