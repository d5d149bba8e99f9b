import { expect } from 'chai';
import { callApi } from '../helpers/api-call';
import { eq } from 'drizzle-orm';
import request from 'supertest';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { recordHeadObservation } from '../../core/detection/head-observations';
import { ManualClock } from '../../core/platform/clock';
import { chainHeadObservations } from '../../db/schema';
import { resetCheckpointToHead, startRpcProxy, startTestChain, type RpcProxy, type TestChain } from '../helpers/anvil';
import { buildTestApp, createTestOrg, STYLES, testContext, testDb, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, type TestOrg } from '../helpers/harness';
import { CHAIN, eventsOf, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { eventually } from '../helpers/wait';

/**
 * Alerting on the gap, not after it (issue 39): while no process can look at a chain's head and
 * addresses of it are handed out, the fast payers of those orders may be left undecidable. /health
 * says so per chain (the same body in both wire formats), and after HEAD_LOOK_ALERT_AFTER_SECONDS
 * one warn line and one alert.chain_stalled (reason looks_stopped) per gap go out, with an info
 * line when looks resume (core/detection/head-look-gaps.ts). Looks that stop while nothing is
 * handed out only show as stale.
 */
const HASH = `0x${'ab'.repeat(32)}`;
// One clock for both styles' apps: the hand-outs of the first, made ahead of the wall clock, are
// never after the second's looks (a hand-out of any organization counts). These suites come after
// the real process's, whose looks are dated by the wall clock.
const clock = new ManualClock();

describe('a chain provider that stops answering while a real API process hands out addresses', function () {
  this.timeout(240_000);
  const THRESHOLD_S = 3;
  const STOPPED_LINE = `head looks at chain ${LOCAL_CHAIN_ID} stopped`;
  const RESUMED_LINE = `head looks at chain ${LOCAL_CHAIN_ID} resumed`;

  let chain: TestChain;
  let proxy: RpcProxy;
  let api: Spawned | undefined;
  let base: string;
  let org: TestOrg;
  let quiet: TestOrg;
  let checkpoint: number;

  before(async () => {
    chain = await startTestChain();
    proxy = await startRpcProxy(Number(new URL(chain.url).port));
    org = await createTestOrg('Looks subscribed');
    quiet = await createTestOrg('Looks not subscribed');
    await seedPoolAddresses(org.organizationId, 'evm', 6);
    checkpoint = await resetCheckpointToHead(testContext(), chain);
    api = spawnEntry('api/main.ts', {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}looks`,
      NETWORK: 'local',
      LOG_LEVEL: 'info',
      RATE_LIMIT_ENABLED: 'false',
      PORT: '0',
      RPC_URLS_ETHEREUM_LOCAL: proxy.url,
      TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
      TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
      TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
      HEAD_LOOK_ALERT_AFTER_SECONDS: String(THRESHOLD_S),
    });
    base = `http://127.0.0.1:${JSON.parse(await api.waitFor(/API listening/, 60_000)).port}`;
    const hook = await call('POST', '/webhooks/endpoints', { url: 'http://127.0.0.1:9/hook', events: ['alert.chain_stalled'] });
    expect(hook.id ?? hook.endpointId).to.be.a('string');
  });

  after(async () => {
    api?.killGroup('SIGKILL');
    await proxy?.close();
    await chain?.stop();
  });

  const call = (method: string, path: string, body?: unknown) => callApi(base, org.keys.admin, method, path, body);

  async function health(): Promise<{ status: number; body: any; entry: any }> {
    const res = await fetch(`${base}/health`);
    const body = (await res.json()) as any;
    return { status: res.status, body, entry: (body.chainLooks ?? []).find((c: { chainId: string }) => c.chainId === LOCAL_CHAIN_ID) };
  }

  const looksAlerts = async (organizationId: string) =>
    (await eventsOf(organizationId, 'alert.chain_stalled')).filter((e) => (e.data as { reason?: string }).reason === 'looks_stopped').sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  const lines = (text: string) => api!.stdout().split('\n').filter((l) => l.includes(text));
  const fresh = () =>
    eventually(
      async () => {
        const { entry } = await health();
        return entry?.looks === 'ok' ? entry : null;
      },
      60_000,
      'a fresh look at the chain',
    );

  it('shows the gap in /health, raises one alert per gap within the threshold, logs once, and clears when looks resume', async () => {
    await fresh();

    // The only provider stops answering (a host that drops packets; open connections cut), no orders yet.
    proxy.blackhole(true);
    proxy.cut('rst');
    const stale = await eventually(async () => {
      const h = await health();
      if (process.env.DEBUG_LOOKS) console.log('DEBUG', JSON.stringify(h.entry));
      return h.entry?.looks === 'stale' ? h : null;
    }, 15_000, 'the looks stale');
    expect(stale.status).to.equal(200);
    expect(stale.entry.headLookAgeSeconds).to.be.at.least(THRESHOLD_S);
    // Several turns of the watch: stale looks with nothing handed out alert nobody.
    await new Promise((r) => setTimeout(r, 1500));
    expect(await looksAlerts(org.organizationId)).to.have.length(0);
    expect(lines(STOPPED_LINE)).to.have.length(0);

    // Orders are created: now the gap matters.
    const orderedAt = Date.now();
    await call('POST', '/orders', { orderReference: 'looks-1', amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    const stopped = await health();
    expect(stopped.status, 'a chain never takes the API out of a load balancer').to.equal(200);
    expect(stopped.entry).to.include({ looks: 'stopped', lastLookAt: stale.entry.lastLookAt, head: stale.entry.head });
    expect(stopped.body).to.include({ status: 'degraded' });
    expect(stopped.body.checks.chains).to.equal('degraded');
    const [first] = await eventually(async () => {
      const rows = await looksAlerts(org.organizationId);
      return rows.length > 0 ? rows : null;
    }, 10_000, 'alert.chain_stalled (looks_stopped)');
    expect(first.data).to.deep.equal({ chainId: LOCAL_CHAIN_ID, reason: 'looks_stopped', since: stale.entry.lastLookAt, head: stale.entry.head, checkpoint });
    expect(first.createdAt.getTime() - orderedAt, 'raised at the watch turn after the hand-out').to.be.below(2500);

    // More turns of the watch: still one alert, one warn line; none for an organization not subscribed.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await looksAlerts(org.organizationId)).to.have.length(1);
    expect(await looksAlerts(quiet.organizationId)).to.have.length(0);
    expect(lines(STOPPED_LINE), api!.stdout().slice(-3000)).to.have.length(1);
    expect(JSON.parse(lines(STOPPED_LINE)[0])).to.include({ level: 'warn', chainId: LOCAL_CHAIN_ID, reason: 'looks_stopped', since: stale.entry.lastLookAt });

    // The provider answers again: looks resume, the gap ends with an info line, /health is ok.
    proxy.blackhole(false);
    await fresh();
    await eventually(() => lines(RESUMED_LINE).length === 1, 15_000, 'the resumed line');
    expect(JSON.parse(lines(RESUMED_LINE)[0])).to.include({ level: 'info', chainId: LOCAL_CHAIN_ID, since: stale.entry.lastLookAt });

    // The next gap, this time with orders created as the provider goes down (refused connections):
    // its own alert, at the threshold after its last look.
    const before = (await fresh()).lastLookAt as string;
    await proxy.stop();
    await call('POST', '/orders', { orderReference: 'looks-2', amount: '1', currency: 'USDT', chainId: LOCAL_CHAIN_ID });
    const alerts = await eventually(async () => {
      const rows = await looksAlerts(org.organizationId);
      return rows.length > 1 ? rows : null;
    }, 15_000, 'the second gap alerted');
    const second = alerts[1].data as { since: string };
    expect(new Date(second.since).getTime()).to.be.at.least(new Date(before).getTime());
    const after = alerts[1].createdAt.getTime() - new Date(second.since).getTime();
    expect(after, 'alerted once the last look is HEAD_LOOK_ALERT_AFTER_SECONDS old, not long after').to.be.within(THRESHOLD_S * 1000, THRESHOLD_S * 1000 + 2500);
    expect((await health()).entry.looks).to.equal('stopped');
    await proxy.start();
    await fresh();
    await eventually(() => lines(RESUMED_LINE).length === 2, 15_000, 'the second resumed line');
    expect(lines(STOPPED_LINE)).to.have.length(2);
    expect(await looksAlerts(org.organizationId)).to.have.length(2);
  });
});

for (const style of STYLES) {
  describe(`/health: each chain's looks at its head (style ${style.toUpperCase()})`, () => {
    it('tells how old the newest look is, stale once past the threshold, stopped (the chain degraded) once addresses were handed out since, ok again after a look', async () => {
      const t = buildTestApp({ style, clock, env: { ...tokenEnv(), HEAD_LOOK_ALERT_AFTER_SECONDS: '3' } });
      const org = await createTestOrg(`Looks ${style}`);
      await seedPoolAddresses(org.organizationId, 'evm', 2);
      await testDb().delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, CHAIN));
      const look = async (head: number) => {
        const at = t.clock.now();
        await recordHeadObservation(testDb(), { chainId: CHAIN, head, askedAt: at, answeredAt: at, hash: HASH });
        return at;
      };
      const health = async () => {
        const res = await request(t.app).get('/health');
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        const entry = (res.body.chainLooks as { chainId: string }[]).find((c) => c.chainId === CHAIN);
        expect(entry, JSON.stringify(res.body)).to.not.equal(undefined);
        return { body: res.body, entry: entry as Record<string, unknown> };
      };

      const lookAt = await look(100);
      const fresh = await health();
      expect(Object.keys(fresh.entry)).to.deep.equal(['chainId', 'looks', 'headLookAgeSeconds', 'lastLookAt', 'head']);
      expect(fresh.entry).to.include({ chainId: CHAIN, looks: 'ok', lastLookAt: lookAt.toISOString(), head: 100 });
      expect(fresh.entry.headLookAgeSeconds).to.be.within(0, 1);
      expect(fresh.body.checks.chains).to.equal('ok');
      // A chain never looked at (the other local chains here: nothing answers for them) says so.
      for (const other of (fresh.body.chainLooks as Record<string, unknown>[]).filter((c) => c.chainId !== CHAIN)) {
        expect(other).to.include({ looks: 'stale', headLookAgeSeconds: null, lastLookAt: null, head: null });
      }

      // Past the threshold with nothing handed out: stale, nothing at risk, the chain not degraded.
      t.clock.advance(3500);
      const stale = await health();
      expect(stale.entry).to.include({ looks: 'stale', lastLookAt: lookAt.toISOString(), head: 100 });
      expect(stale.entry.headLookAgeSeconds).to.be.within(3.5, 4.5);
      expect(stale.body.checks.chains).to.equal('ok');

      // A deposit reference of the chain's family bound now: its address is paid on this chain too.
      const bound = await request(t.app).post('/api/v1/deposits/bind').set('X-API-Key', org.keys.admin).send({ depositReference: `looks-${style}`, protocol: 'evm' });
      expect(bound.status, JSON.stringify(bound.body)).to.be.oneOf([200, 201]);
      const stopped = await health();
      expect(stopped.entry).to.include({ looks: 'stopped', lastLookAt: lookAt.toISOString(), head: 100 });
      expect(stopped.body).to.include({ status: 'degraded' });
      expect(stopped.body.checks.chains).to.equal('degraded');

      // A look: ok again.
      await look(101);
      const back = await health();
      expect(back.entry).to.include({ looks: 'ok', head: 101 });
      expect(back.body.checks.chains).to.equal('ok');

      // An order on the chain made after the last look is a hand-out too.
      t.clock.advance(3500);
      expect((await health()).entry.looks).to.equal('stale');
      const order = await request(t.app)
        .post('/api/v1/orders')
        .set('X-API-Key', org.keys.admin)
        .send({ orderReference: `looks-${style}`, amount: '1', currency: 'USDT', chainId: CHAIN });
      expect(order.status, JSON.stringify(order.body)).to.equal(201);
      expect((await health()).entry.looks).to.equal('stopped');
      await look(102);
      expect((await health()).entry.looks).to.equal('ok');
    });
  });
}
