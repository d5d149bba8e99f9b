import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import request from 'supertest';
import { ulid } from 'ulid';
import { closeQueues, createQueues } from '../../core/jobs/catalog';
import { pruneHistory } from '../../core/maintenance/history-retention';
import { idAt } from '../../core/platform/ids';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { buildTestApp, createTestOrg, testConfig, testContext, testDb, TEST_REDIS_PREFIX, type TestOrg } from '../helpers/harness';
import { addJobsAndWait } from '../helpers/run-job';
import { eventually } from '../helpers/wait';

const DAY = 86_400_000;

/** An id of a ULID-keyed table made `at` a given time, as newId would have made it then. */
const idFrom = (prefix: string, at: Date) => `${prefix}_${ulid(at.getTime()).toLowerCase()}`;

/** An endpoint of the organization (written as the API would, without a receiver: nothing is sent here). */
async function endpointOf(org: TestOrg): Promise<string> {
  const id = idFrom('whe', new Date());
  await testDb().execute(sql`insert into webhook_endpoints (id, organization_id, url, events, secret_ciphertext) values (${id}, ${org.organizationId}, 'https://hooks.example/x', '{order.completed}', 'x')`);
  return id;
}

/**
 * An order.completed event made `ageDays` ago and fanned out to the endpoints, one delivery each in
 * the given state with `attempts` attempt rows.
 */
async function historicEvent(org: TestOrg, ageDays: number, deliveries: { endpointId: string; status: 'pending' | 'succeeded' | 'failed'; attempts: number }[], options: { dispatched?: boolean } = {}) {
  const at = new Date(Date.now() - ageDays * DAY);
  const atText = at.toISOString();
  const eventId = idFrom('evt', at);
  const db = testDb();
  await db.execute(sql`insert into events (id, organization_id, type, data, created_at, dispatched_at)
    values (${eventId}, ${org.organizationId}, 'order.completed', ${JSON.stringify({ orderId: `ord_${ageDays}` })}::jsonb, ${atText}::timestamptz, ${options.dispatched === false ? null : atText}::timestamptz)`);
  const deliveryIds: string[] = [];
  for (const d of deliveries) {
    const id = idFrom('whd', at);
    deliveryIds.push(id);
    await db.execute(sql`insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, status, attempt_count, created_at, next_attempt_at)
      values (${id}, ${org.organizationId}, ${eventId}, ${d.endpointId}, ${d.status}, ${d.attempts}, ${atText}::timestamptz, ${d.status === 'pending' ? atText : null}::timestamptz)`);
    for (let n = 1; n <= d.attempts; n++) {
      await db.execute(sql`insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, outcome)
        values (${id}, ${n}, ${atText}::timestamptz, 5, ${d.status === 'succeeded' && n === d.attempts ? 200 : 500}, ${d.status === 'succeeded' && n === d.attempts ? 'succeeded' : 'failed'})`);
    }
  }
  return { eventId, deliveryIds };
}

async function countsOf(eventId: string) {
  const [row] = await testDb().execute<{ events: string; deliveries: string; attempts: string }>(sql`
    select (select count(*) from events where id = ${eventId}) as events,
           (select count(*) from webhook_deliveries where event_id = ${eventId}) as deliveries,
           (select count(*) from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id where d.event_id = ${eventId}) as attempts`);
  return { events: Number(row.events), deliveries: Number(row.deliveries), attempts: Number(row.attempts) };
}

const OPTIONS = { eventDays: 90, batchSize: 2, maxBatches: 1000 };

describe('history retention (events, webhook deliveries and attempts)', () => {
  it('ids made at a time sort between the ids made before and after it', () => {
    const at = new Date('2026-03-01T00:00:00Z');
    const boundary = idAt('evt', at);
    expect(idFrom('evt', new Date(at.getTime() - 1)) < boundary).to.equal(true);
    expect(idFrom('evt', at) >= boundary).to.equal(true);
    expect(idFrom('evt', new Date(at.getTime() + 1)) > boundary).to.equal(true);
  });

  it('deletes delivered events past the window with their deliveries and attempts, and nothing it may not', async () => {
    const org = await createTestOrg('retention');
    const [a, b] = [await endpointOf(org), await endpointOf(org)];
    const delivered = await historicEvent(org, 120, [{ endpointId: a, status: 'succeeded', attempts: 2 }, { endpointId: b, status: 'failed', attempts: 3 }]);
    const gaveUp = await historicEvent(org, 95, [{ endpointId: a, status: 'failed', attempts: 10 }]);
    const noEndpoint = await historicEvent(org, 100, []);
    // Kept: one delivery still pending (a retry may come), not fanned out yet, inside the window.
    const stillPending = await historicEvent(org, 150, [{ endpointId: a, status: 'succeeded', attempts: 1 }, { endpointId: b, status: 'pending', attempts: 4 }]);
    const undispatched = await historicEvent(org, 130, [], { dispatched: false });
    const recent = await historicEvent(org, 30, [{ endpointId: a, status: 'succeeded', attempts: 1 }]);
    const justInside = await historicEvent(org, 89, [{ endpointId: a, status: 'succeeded', attempts: 1 }]);
    // An alert e-mail of an old event not sent yet keeps its event.
    const alerting = await historicEvent(org, 110, []);
    await testDb().execute(sql`insert into alert_emails (event_id, organization_id, status) values (${alerting.eventId}, ${org.organizationId}, 'pending')`);

    const { app } = buildTestApp();
    const listed = async () =>
      ((await request(app).get('/api/v1/webhooks/events').query({ limit: 100 }).set('X-API-Key', org.keys.viewer)).body.data as { id: string }[]).map((e) => e.id);
    expect(await listed()).to.include.members([delivered.eventId, stillPending.eventId, recent.eventId]);

    const removed = await pruneHistory(testDb(), new Date(), OPTIONS);
    expect(removed.events).to.be.at.least(3);

    for (const gone of [delivered, gaveUp, noEndpoint]) expect(await countsOf(gone.eventId), gone.eventId).to.deep.equal({ events: 0, deliveries: 0, attempts: 0 });
    expect(await countsOf(stillPending.eventId)).to.deep.equal({ events: 1, deliveries: 2, attempts: 5 });
    expect(await countsOf(undispatched.eventId)).to.deep.equal({ events: 1, deliveries: 0, attempts: 0 });
    expect(await countsOf(recent.eventId)).to.deep.equal({ events: 1, deliveries: 1, attempts: 1 });
    expect(await countsOf(justInside.eventId)).to.deep.equal({ events: 1, deliveries: 1, attempts: 1 });
    expect(await countsOf(alerting.eventId)).to.deep.equal({ events: 1, deliveries: 0, attempts: 0 });

    const after = await listed();
    expect(after).to.not.include(delivered.eventId);
    expect(after).to.include.members([stillPending.eventId, recent.eventId, justInside.eventId]);

    // Once the pending delivery finishes, its event goes on the next run.
    await testDb().execute(sql`update webhook_deliveries set status = 'succeeded', next_attempt_at = null where id = ${stillPending.deliveryIds[1]}`);
    await pruneHistory(testDb(), new Date(), OPTIONS);
    expect(await countsOf(stillPending.eventId)).to.deep.equal({ events: 0, deliveries: 0, attempts: 0 });
  });

  it('keeps everything when the window is 0 (RETENTION_EVENT_DAYS=0)', async () => {
    const org = await createTestOrg('retention off');
    const old = await historicEvent(org, 3000, [{ endpointId: await endpointOf(org), status: 'succeeded', attempts: 1 }]);
    expect(await pruneHistory(testDb(), new Date(), { ...OPTIONS, eventDays: 0 })).to.deep.equal({ events: 0, deliveries: 0, attempts: 0, alertEmails: 0 });
    expect(await countsOf(old.eventId)).to.deep.equal({ events: 1, deliveries: 1, attempts: 1 });
  });

  it('steps over a run of kept events (more than a batch) to the deletable ones behind them', async () => {
    const org = await createTestOrg('retention cursor');
    const endpoint = await endpointOf(org);
    for (let i = 0; i < 5; i++) await historicEvent(org, 400 - i, [{ endpointId: endpoint, status: 'pending', attempts: 1 }]);
    const behind = await historicEvent(org, 300, [{ endpointId: endpoint, status: 'succeeded', attempts: 1 }]);
    await pruneHistory(testDb(), new Date(), OPTIONS);
    expect(await countsOf(behind.eventId)).to.deep.equal({ events: 0, deliveries: 0, attempts: 0 });
  });

  it('the history-retention job (BullMQ worker) applies RETENTION_EVENT_DAYS', async function () {
    this.timeout(30_000);
    const config = testConfig({ WORKER_QUEUES: 'history-retention', RETENTION_EVENT_DAYS: '10', RETENTION_INTERVAL_MS: '3600000', REDIS_PREFIX: `${TEST_REDIS_PREFIX}retention` });
    const org = await createTestOrg('retention job');
    const endpoint = await endpointOf(org);
    const old = await historicEvent(org, 11, [{ endpointId: endpoint, status: 'succeeded', attempts: 1 }]);
    const young = await historicEvent(org, 9, [{ endpointId: endpoint, status: 'succeeded', attempts: 1 }]);
    let workers: RunningWorkers | null = null;
    const conn = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
    const queues = createQueues(conn, config.redisPrefix);
    try {
      workers = await startWorkerProcess(testContext(config));
      await addJobsAndWait(queues['history-retention']);
      await eventually(async () => (await countsOf(old.eventId)).events === 0, 10_000, 'the old event to go');
      expect(await countsOf(young.eventId)).to.deep.equal({ events: 1, deliveries: 1, attempts: 1 });
    } finally {
      await workers?.close();
      await closeQueues(queues);
      conn.disconnect();
    }
  });

  it('rejects a window that is not a whole number of days', () => {
    expect(() => testConfig({ RETENTION_EVENT_DAYS: 'ninety' })).to.throw(/RETENTION_EVENT_DAYS/);
  });
});
