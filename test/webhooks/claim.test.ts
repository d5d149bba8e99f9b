import { expect } from 'chai';
import request from 'supertest';
import { emitEvent } from '../../core/events/events';
import { ManualClock } from '../../core/platform/clock';
import { claimLeaseMs, INTERRUPTED_ERROR } from '../../core/webhooks/claim';
import { deliverWebhook } from '../../core/webhooks/delivery';
import { relayWebhookEvents } from '../../core/webhooks/relay';
import { buildTestApp, createTestOrg, testConfig, testContext, testDb, testSql, type TestOrg } from '../helpers/harness';
import { FAST_WEBHOOK_ENV, startReceiver, type Receiver } from '../helpers/webhooks';

// Domain-level races, with no worker running: the guarantees the workers rely on.
describe('webhook delivery claims and relay under concurrency', () => {
  const { app } = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  const ctx = testContext(testConfig(FAST_WEBHOOK_ENV));
  let receiver: Receiver;
  let org: TestOrg;
  before(async () => {
    receiver = await startReceiver((req) => (req.path === '/late' && req.n === 1 ? 'hang' : { status: 200 }));
    org = await createTestOrg('Claim org');
  });
  after(async () => receiver?.close());

  it('lets exactly one of several concurrent attempts send and mark the delivery succeeded', async () => {
    const ep = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/race`, events: ['order.completed'] });
    const test = await request(app).post(`/api/v1/webhooks/endpoints/${ep.body.id}/test`).set('X-API-Key', org.keys.admin);
    const deliveryId = test.body.deliveries[0].id;
    const results = await Promise.all(Array.from({ length: 6 }, () => deliverWebhook(ctx, deliveryId, 1)));
    expect(results.filter((r) => r.outcome === 'succeeded')).to.have.length(1);
    expect(results.filter((r) => r.outcome === 'skipped')).to.have.length(5);
    expect(receiver.on('/race')).to.have.length(1);
    // A late duplicate job of the same attempt, or of the next one, changes nothing.
    expect((await deliverWebhook(ctx, deliveryId, 1)).outcome).to.equal('skipped');
    expect((await deliverWebhook(ctx, deliveryId, 2)).outcome).to.equal('skipped');
    const rows = await testSql()`select status, attempt_count, (select count(*)::int from webhook_attempts a where a.delivery_id = d.id) as attempts from webhook_deliveries d where id = ${deliveryId}`;
    expect(rows[0]).to.deep.equal({ status: 'succeeded', attempt_count: 1, attempts: 1 });
  });

  it('records an attempt that never reported back as interrupted, once, when the next attempt claims it; a late result replaces that record', async () => {
    const ep = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/late`, events: ['order.completed'] });
    const test = await request(app).post(`/api/v1/webhooks/endpoints/${ep.body.id}/test`).set('X-API-Key', org.keys.admin);
    const deliveryId = test.body.deliveries[0].id;
    const clock = new ManualClock();
    const lateCtx = testContext(testConfig(FAST_WEBHOOK_ENV), clock);
    const attempts = async () =>
      (await testSql()`select attempt_number, outcome, status_code, duration_ms, error from webhook_attempts where delivery_id = ${deliveryId} order by attempt_number, id`) as any[];

    const first = deliverWebhook(lateCtx, deliveryId, 1); // the receiver holds this one (as if the worker died)
    await receiver.waitFor(1, { path: '/late' });
    clock.advance(claimLeaseMs(lateCtx.config.webhooks.timeoutMs)); // its lease ends: the relay would start attempt 2
    const seconds = await Promise.all(Array.from({ length: 4 }, () => deliverWebhook(lateCtx, deliveryId, 2)));
    expect(seconds.filter((r) => r.outcome === 'succeeded')).to.have.length(1);
    const whileRunning = await attempts();
    expect(whileRunning.map((a) => [a.attempt_number, a.outcome, a.status_code, a.duration_ms])).to.deep.equal([
      [1, 'interrupted', null, null],
      [2, 'succeeded', 200, whileRunning[1].duration_ms],
    ]);
    expect(whileRunning[0].error).to.equal(INTERRUPTED_ERROR);

    // The first attempt times out after all: its real result replaces the interrupted record and
    // changes nothing else (the delivery belongs to attempt 2 and has succeeded).
    expect((await first).outcome).to.equal('skipped');
    const after = await attempts();
    expect(after.map((a) => [a.attempt_number, a.outcome, a.error])).to.deep.equal([
      [1, 'failed', 'timed out after 1000 ms'],
      [2, 'succeeded', null],
    ]);
    const rows = await testSql()`select status, attempt_count from webhook_deliveries where id = ${deliveryId}`;
    expect(rows[0]).to.deep.equal({ status: 'succeeded', attempt_count: 2 });
  });

  it('fans each event out once per endpoint, however many relays run at once', async () => {
    const a = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/fan-a`, events: ['deposit.pending'] });
    const b = await request(app).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/fan-b`, events: ['deposit.pending'] });
    const emitted = await testDb().transaction(async (tx) => {
      const out = [];
      for (let i = 0; i < 50; i++) out.push(await emitEvent(tx, { organizationId: org.organizationId, type: 'deposit.pending', data: { i } }));
      return out;
    });
    const runs = await Promise.all(Array.from({ length: 4 }, () => relayWebhookEvents(ctx)));
    const created = runs.flatMap((r) => r.jobs.filter((j) => j.attempt === 1));
    const ids = emitted.map((e) => e.id);
    const rows = await testSql()`select event_id, endpoint_id from webhook_deliveries where event_id in ${testSql()(ids)}`;
    expect(rows).to.have.length(100);
    expect(new Set(rows.map((r) => `${r.event_id}/${r.endpoint_id}`)).size).to.equal(100);
    expect(new Set(rows.map((r) => r.endpoint_id))).to.deep.equal(new Set([a.body.id, b.body.id]));
    expect(new Set(created.map((j) => j.deliveryId)).size).to.be.at.least(100);
    const undispatched = await testSql()`select count(*)::int as n from events where id in ${testSql()(ids)} and dispatched_at is null`;
    expect(undispatched[0].n).to.equal(0);
  });
});
