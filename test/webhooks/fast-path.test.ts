import { expect } from 'chai';
import request from 'supertest';
import { emitEvent, EVENTS_CHANNEL } from '../../core/events/events';
import { eq } from 'drizzle-orm';
import { webhookDeliveries } from '../../db/schema';
import type { RunningWorkers } from '../../workers/runtime';
import { buildTestApp, createTestOrg, TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL, testDb, testJobQueue, testSql } from '../helpers/harness';
import { spawnEntry, type Spawned } from '../helpers/processes';
import { eventually, sleep, startReceiver, startTestWorkers, type Receiver } from '../helpers/webhooks';

/**
 * The webhook fast path (workers/event-listener.ts): an event's deliveries are enqueued as soon as
 * its transaction commits, not at the relay's next run; the relay stays the recovery path.
 */
describe('webhook fast path: events reach endpoints without waiting for the relay', function () {
  this.timeout(90_000);
  const { app } = buildTestApp({ style: 'b', env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
  let receiver: Receiver;
  const running: RunningWorkers[] = [];
  const spawned: Spawned[] = [];

  before(async () => {
    receiver = await startReceiver();
  });
  afterEach(async () => {
    for (const s of spawned.splice(0)) s.killGroup('SIGKILL');
    for (const w of running.splice(0)) await w.close();
  });
  after(async () => {
    await receiver?.close();
  });

  async function endpoint(path: string) {
    const org = await createTestOrg(`Fast path ${path}`);
    const created = await request(app)
      .post('/api/v1/webhooks/endpoints')
      .set('X-API-Key', org.keys.admin)
      .send({ url: `${receiver.url}${path}`, events: ['order.completed'] });
    expect(created.status).to.equal(201);
    return org;
  }

  const emit = (organizationId: string, orderId: string) =>
    testDb().transaction((tx) => emitEvent(tx, { organizationId, type: 'order.completed', data: { orderId } }));

  it('delivers a committed event while the relay would not run for another minute', async () => {
    const org = await endpoint('/fast');
    // The relay runs once at start, then not for 60 s: only the fast path can deliver in time.
    const { workers } = await startTestWorkers({ WEBHOOK_RELAY_INTERVAL_MS: '60000' });
    running.push(workers);
    await sleep(300); // the relay's first run is over
    const event = await emit(org.organizationId, 'ord_fast');
    const [req] = await receiver.waitFor(1, { path: '/fast', timeoutMs: 15_000 });
    expect(req.headers['x-service-event-id']).to.equal(event.id);
  });

  it('sends nothing for an event whose transaction rolls back (NOTIFY is delivered on commit only)', async () => {
    const org = await endpoint('/rollback');
    const { workers } = await startTestWorkers({ WEBHOOK_RELAY_INTERVAL_MS: '60000' });
    running.push(workers);
    await testDb()
      .transaction(async (tx) => {
        await emitEvent(tx, { organizationId: org.organizationId, type: 'order.completed', data: { orderId: 'ord_rolled_back' } });
        throw new Error('roll back');
      })
      .catch(() => {});
    const committed = await emit(org.organizationId, 'ord_committed');
    const [req] = await receiver.waitFor(1, { path: '/rollback', timeoutMs: 15_000 });
    expect(req.headers['x-service-event-id']).to.equal(committed.id);
    await sleep(300);
    expect(receiver.on('/rollback')).to.have.length(1);
  });

  it('when the listening process is killed between the commit and the enqueue, the relay delivers within WEBHOOK_RELAY_INTERVAL_MS + 1 s', async () => {
    const org = await endpoint('/killed');
    const relayIntervalMs = 1000;
    // The process that would enqueue: its fast path listens, its relay would not run for a minute.
    const listening = spawnEntry('workers/main.ts', {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: TEST_REDIS_PREFIX,
      NETWORK: 'local',
      START_LOCAL_CHAIN: 'false',
      LOG_LEVEL: 'info',
      WORKER_QUEUES: 'webhook-relay',
      WEBHOOK_ALLOW_INSECURE: 'true',
      WEBHOOK_RELAY_INTERVAL_MS: '60000',
    });
    spawned.push(listening);
    await listening.waitFor(/"webhookFastPath":true.*workers started/, 60_000);
    // The recovery path: the relay every second, no fast path of its own.
    const { workers } = await startTestWorkers({ WEBHOOK_RELAY_INTERVAL_MS: String(relayIntervalMs), WEBHOOK_FAST_PATH: 'false' });
    running.push(workers);
    await sleep(300);

    // Frozen, it receives the notification but cannot act on it; then it dies without enqueueing.
    listening.killGroup('SIGSTOP');
    const event = await emit(org.organizationId, 'ord_killed');
    const committedAt = Date.now();
    listening.killGroup('SIGKILL');

    const [req] = await receiver.waitFor(1, { path: '/killed', timeoutMs: 15_000 });
    expect(req.headers['x-service-event-id']).to.equal(event.id);
    expect(req.receivedAt - committedAt).to.be.at.most(relayIntervalMs + 1000);
  });

  it('closing the worker process, as SIGTERM does (workers/main.ts), ends its LISTEN connection', async () => {
    const listeners = async () =>
      (await testSql()`select count(*)::int as n from pg_stat_activity where datname = current_database() and query ilike ${`%listen "${EVENTS_CHANNEL}"%`}`)[0].n as number;
    // A process killed by an earlier test leaves none for long.
    await eventually(async () => (await listeners()) === 0, 10_000, 'no LISTEN connection before');
    const { workers } = await startTestWorkers();
    expect(await listeners()).to.equal(1);
    await workers.close();
    await eventually(async () => (await listeners()) === 0, 5000, 'the LISTEN connection closed on shutdown');
  });

  it('when both the fast path and the relay enqueue one event, the receiver gets exactly one POST per (event, endpoint)', async () => {
    const org = await endpoint('/both');
    // The relay every 50 ms, re-enqueueing every delivery due for 100 ms: it enqueues the same
    // attempts the fast path enqueued, over and over, while they are queued and being sent.
    const { workers } = await startTestWorkers({ WEBHOOK_RELAY_INTERVAL_MS: '50', WEBHOOK_REQUEUE_AFTER_MS: '100' });
    running.push(workers);
    const emitted = [];
    for (let i = 0; i < 20; i++) emitted.push(await emit(org.organizationId, `ord_both_${i}`));
    await receiver.waitFor(20, { path: '/both', timeoutMs: 30_000 });

    // And every first attempt once more by hand, after it succeeded: the claim refuses a finished delivery.
    // The receiver counts a POST before it answers, and the worker records the attempt only once the
    // answer is in: wait for the records, not just the POSTs.
    const recorded = () => testDb().select().from(webhookDeliveries).where(eq(webhookDeliveries.organizationId, org.organizationId));
    await eventually(async () => (await recorded()).every((d) => d.status !== 'pending'), 15_000, 'every attempt recorded').catch(() => {});
    const deliveries = await recorded();
    expect(deliveries.map((d) => d.status)).to.deep.equal(Array(20).fill('succeeded'));
    await testJobQueue().enqueueWebhookDeliveries(deliveries.map((d) => ({ deliveryId: d.id, attempt: 1, delayMs: 0 })));

    // An observation window: a duplicate would come from an attempt enqueued twice, sent at once.
    await sleep(1000);
    const ids = receiver.on('/both').map((r) => r.headers['x-service-event-id']);
    expect(ids).to.have.length(20);
    expect(new Set(ids)).to.deep.equal(new Set(emitted.map((e) => e.id)));
  });
});
