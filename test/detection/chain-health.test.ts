import http from 'node:http';
import { expect } from 'chai';
import { and, eq, sql } from 'drizzle-orm';
import request from 'supertest';
import { runChainScan } from '../../core/detection/monitor';
import { getCheckpoint, setCheckpoint } from '../../core/chains/checkpoints';
import { NEVER_ANSWERED_GRACE_MS } from '../../core/detection/chain-health';
import { chainCheckpoints, events } from '../../db/schema';
import { buildTestApp, createTestOrg, knownSecrets, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, type TestApp } from '../helpers/harness';
import { CHAIN, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { closedPort, spawnEntry, type Spawned } from '../helpers/processes';
import { listenOnFreePort, stopWorker } from '../helpers/page-service';
import { eventually } from '../helpers/wait';

/**
 * Health that tells the truth (issue 37): /health judges the chains from the database at the
 * moment of asking, so a chain nobody scans or whose providers never answered is degraded whatever
 * stopped it, even with no worker alive; the stall alert comes from each worker's own timer, not
 * from the scan job whose absence it should notice; and the payment page promises nothing while
 * its chain is degraded.
 */
describe('chain health judged from the database (issue 37)', function () {
  this.timeout(120_000);
  const tokens = tokenEnv();

  async function createOrder(t: TestApp, ownerKey: string) {
    const res = await request(t.app)
      .post('/api/v1/orders')
      .set('X-API-Key', ownerKey)
      .send({ orderReference: `health-${Date.now()}-${Math.random()}`, amount: '5', currency: 'USDT', chainId: CHAIN, paymentWindowMinutes: 10, graceMinutes: 30 });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    const path = new URL(res.body.paymentUrl).pathname;
    knownSecrets.add(path.split('/')[2]);
    return path;
  }

  it('a chain whose providers never answered (a closed port, a provider answering errors) is degraded past the start-up grace; its payment page says detection is delayed, in every language', async () => {
    const failing = http.createServer((_req, res) => {
      res.statusCode = 502;
      res.end('bad gateway');
    });
    const failingPort = await listenOnFreePort(failing);
    try {
      const t = buildTestApp({ env: { ...tokens, CHAIN_STALL_ALERT_SECONDS: '10' } });
      t.deps.registry.setRpcUrls(CHAIN, [`http://127.0.0.1:${await closedPort()}`, `http://127.0.0.1:${failingPort}`]);
      const org = await createTestOrg('never answered');
      await seedPoolAddresses(org.organizationId, 'evm', 3);
      const path = await createOrder(t, org.ownerKey);

      // The scanner tries: no provider answers, so no head is ever stored.
      let failed = false;
      await runChainScan(t.deps, CHAIN).catch(() => (failed = true));
      expect(failed, 'the scan fails').to.equal(true);
      expect(await getCheckpoint(t.deps.db, CHAIN)).to.equal(null);

      // Within the start-up grace: not judged yet, the page as usual.
      const early = await request(t.app).get('/health');
      expect(early.body.checks.chains).to.equal('ok');
      const usual = await request(t.app).get(path);
      expect(usual.text).to.not.include('id="detection-delayed"');
      expect((await request(t.app).get(`${path}/status`)).body.detectionDelayed).to.equal(false);

      t.clock.advance(NEVER_ANSWERED_GRACE_MS + 1000);
      const health = await request(t.app).get('/health');
      expect(health.status, 'still 200: a chain never takes the API out of a load balancer').to.equal(200);
      expect(health.body.status).to.equal('degraded');
      expect(health.body.checks).to.include({ database: 'ok', redis: 'ok', chains: 'degraded' });
      const entry = (health.body.stalledChains as { chainId: string }[]).find((c) => c.chainId === CHAIN);
      expect(entry, JSON.stringify(health.body)).to.include({ chainId: CHAIN, reason: 'never_answered', head: null, checkpoint: null });

      // The payment page: no promise, a true statement instead; the status JSON changes with it.
      const status = await request(t.app).get(`${path}/status`);
      expect(status.body).to.include({ state: 'awaiting', detectionDelayed: true });
      const page = await request(t.app).get(path);
      expect(page.text).to.include('id="detection-delayed"');
      expect(page.text).to.include('are being detected late at the moment');
      const es = await request(t.app).get(`${path}?lang=es`);
      expect(es.text).to.include('se están detectando con retraso');

      // Past the payment window: the grace text promises no recognition either.
      t.clock.advance(11 * 60_000);
      const grace = await request(t.app).get(path);
      expect(grace.text).to.include('data-state="grace"');
      expect(grace.text).to.not.include('will still be recognised');
      expect(grace.text).to.include('this page cannot show a payment you have already sent yet');
      expect((await request(t.app).get(`${path}?lang=es`)).text).to.not.include('se reconocerá igualmente');
    } finally {
      failing.close();
    }
  });

  describe('a chain no scan reaches any more', () => {
    const workers: Spawned[] = [];
    after(async () => {
      await Promise.all(workers.map((w) => stopWorker(w)));
    });

    it('is degraded in /health with no worker alive, and alerted once by the timers of two worker processes that run no scan job', async () => {
      const t = buildTestApp({ env: { ...tokens, CHAIN_STALL_ALERT_SECONDS: '10' } });
      const org = await createTestOrg('not scanned subscribed');
      const hook = await request(t.app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: 'http://127.0.0.1:9/hook', events: ['alert.chain_stalled'] });
      expect(hook.status, JSON.stringify(hook.body)).to.equal(201);
      const stallEvents = () => t.deps.db.select().from(events).where(and(eq(events.organizationId, org.organizationId), eq(events.type, 'alert.chain_stalled')));

      // The chain was scanned up to 11 s ago (past CHAIN_STALL_ALERT_SECONDS), then nothing.
      await setCheckpoint(t.deps.db, { chainId: CHAIN, blockNumber: 100, blockHash: `0x${'cd'.repeat(32)}`, blockTimestamp: new Date() });
      await t.deps.db
        .update(chainCheckpoints)
        .set({ headNumber: 100, headSeenAt: sql`now() - interval '11 seconds'`, scannedAt: sql`now() - interval '11 seconds'` })
        .where(eq(chainCheckpoints.chainId, CHAIN));
      const checkpointRow = async () => (await t.deps.db.select().from(chainCheckpoints).where(eq(chainCheckpoints.chainId, CHAIN)))[0];
      const scannedAt = (await checkpointRow()).scannedAt!;

      // No worker at all: /health says so from the database, though nothing could start an episode.
      const health = await request(t.app).get('/health');
      expect(health.status).to.equal(200);
      expect(health.body.checks.chains).to.equal('degraded');
      expect(health.body.stalledChains).to.deep.include({ chainId: CHAIN, reason: 'not_scanned', since: scannedAt.toISOString(), head: 100, checkpoint: 100 });
      expect(await stallEvents()).to.have.length(0);

      // Two worker processes that run no scan job: their own timers notice, one alert between them.
      const env = (i: number) => ({
        DATABASE_URL: TEST_DATABASE_URL,
        REDIS_URL: TEST_REDIS_URL,
        REDIS_PREFIX: `${TEST_REDIS_PREFIX}health${i}`,
        NETWORK: 'local',
        LOG_LEVEL: 'info',
        WORKER_QUEUES: 'order-expiry',
        CHAIN_STALL_ALERT_SECONDS: '10',
        SCHEDULE_WATCH_INTERVAL_MS: '200',
        ...tokens,
      });
      workers.push(spawnEntry('workers/main.ts', env(1)), spawnEntry('workers/main.ts', env(2)));
      await Promise.all(workers.map((w) => w.waitFor(/workers started/, 90_000)));
      const [sent] = await eventually(async () => {
        const rows = await stallEvents();
        return rows.length > 0 ? rows : null;
      }, 30_000, 'alert.chain_stalled from a worker timer');
      expect(sent.data).to.include({ chainId: CHAIN, reason: 'not_scanned', since: scannedAt.toISOString(), head: 100, checkpoint: 100 });
      // Ten more turns of each timer: still the one episode, one alert, one error line.
      await new Promise((r) => setTimeout(r, 2000));
      expect(await stallEvents()).to.have.length(1);
      const lines = workers.map((w) => w.stdout().split('\n').filter((l) => l.includes(`chain ${CHAIN} is stalled (not_scanned)`)).length);
      expect(lines.reduce((a, b) => a + b, 0), workers.map((w) => w.stdout().slice(-2000)).join('\n----\n')).to.equal(1);
      const row = await checkpointRow();
      expect(row).to.include({ stallReason: 'not_scanned' });
      expect(row.stalledSince!.toISOString()).to.equal(scannedAt.toISOString());
    });
  });
});
