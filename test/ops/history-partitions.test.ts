import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import { Redis } from 'ioredis';
import postgres from 'postgres';
import request from 'supertest';
import { ulid } from 'ulid';
import * as schema from '../../db/schema';
import { closeQueues, createQueues } from '../../core/jobs/catalog';
import { createPartitionsAhead, dropExpiredPartitions, listHistoryPartitions, MONTHS_AHEAD } from '../../core/maintenance/history-partitions';
import { ManualClock } from '../../core/platform/clock';
import { claimDeliveries } from '../../core/webhooks/claim';
import { applyAttempt, applySucceededAttempts } from '../../core/webhooks/apply';
import { getWebhookEvent, redeliverFailedSince } from '../../core/webhooks/history';
import { idAt } from '../../core/platform/ids';
import { fanOutPendingEvents, relayWebhookEvents } from '../../core/webhooks/relay';
import type { ClaimedDelivery } from '../../core/webhooks/claim';
import type { SendOutcome } from '../../core/webhooks/sender';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { runMigrationOnPopulated } from '../../scripts/bench/partition-migration-run';
import { buildTestApp, createTestOrg, testConfig, testContext, testDb, TEST_DATABASE_URL, TEST_REDIS_PREFIX, type TestOrg } from '../helpers/harness';
import { addJobsAndWait } from '../helpers/run-job';

const DAY = 86_400_000;
/** A receiver's 200 as the sender reports it. */
const OK_SENT: SendOutcome = { statusCode: 200, durationMs: 3, responseExcerpt: 'ok', responseTruncated: false, failure: null, retryAfterMs: null };
const monthStart = (plus: number, from = new Date()) => new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + plus, 1));
const suffixOf = (month: Date) => `p${month.getUTCFullYear()}${String(month.getUTCMonth() + 1).padStart(2, '0')}`;
/** An id made at a given time, as newId would have made it then. */
const idFrom = (prefix: string, at: Date) => `${prefix}_${ulid(at.getTime()).toLowerCase()}`;

async function endpointOf(org: TestOrg): Promise<string> {
  const id = idFrom('whe', new Date());
  await testDb().execute(sql`insert into webhook_endpoints (id, organization_id, url, events, secret_ciphertext) values (${id}, ${org.organizationId}, 'https://hooks.example/x', '{order.completed}', 'x')`);
  return id;
}

/** An order.completed event made at `at`, not yet fanned out (the relay makes its deliveries). */
async function eventAt(org: TestOrg, at: Date): Promise<string> {
  const id = idFrom('evt', at);
  await testDb().execute(sql`insert into events (id, organization_id, type, data, created_at) values (${id}, ${org.organizationId}, 'order.completed', '{"orderId":"ord_x"}'::jsonb, ${at.toISOString()}::timestamptz)`);
  return id;
}

/** Which table (partition) holds each row of the event, its deliveries and their attempts. */
async function homesOf(eventId: string): Promise<string[]> {
  const rows = await testDb().execute<{ home: string }>(sql`
    select tableoid::regclass::text as home from events where id = ${eventId}
    union all select tableoid::regclass::text from webhook_deliveries where event_id = ${eventId}
    union all select a.tableoid::regclass::text from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id where d.event_id = ${eventId}`);
  return rows.map((r) => r.home);
}

const PLAN_DIR = path.join(__dirname, 'history-partition-plans');
const PARTITION = /\b(events|webhook_deliveries|webhook_attempts)_(p\d{6}|before_partitioning)\b/g;

/**
 * A plan with its partitions' months named by their place (this month +n) and its ids and times
 * left out: the same from run to run and month to month.
 */
function normalised(plan: string, base: Date): string {
  return plan
    .replace(/_p(\d{4})(\d{2})(?![0-9])/g, (_m, y: string, mo: string) => {
      const n = (Number(y) - base.getUTCFullYear()) * 12 + Number(mo) - 1 - base.getUTCMonth();
      return `_p<month${n >= 0 ? '+' : ''}${n}>`;
    })
    .replace(/\b(evt|whd|whe|org)_[0-9a-z]{10,26}\b/g, '<$1 id>')
    .replace(/'\d{4}-\d\d-\d\d [0-9:.+]+'/g, "'<time>'");
}

/**
 * What a snapshot keeps of a plan: each node that reads or writes a history table, with the
 * partition it names (which index of the partition the planner picks varies with its statistics).
 */
function partitionsRead(plan: string): string {
  const history = /\b(events|webhook_deliveries|webhook_attempts)(_p<month[+-]\d+>|_before_partitioning)?\b/;
  return plan
    .split('\n')
    .filter((line) => line === '---' || (/ on /.test(line) && history.test(line)))
    .map((line) => (line === '---' ? line : line.trim().replace(/^->\s*/, '').replace(/ using \S+/, '').replace(/^(.*? on \S+)(?: \S+)?$/, '$1').replace(/^[A-Za-z ]*Scan on /, 'reads ')))
    .join('\n');
}

describe('webhook history partitions (monthly, on ranges of the ULID ids)', function () {
  this.timeout(60_000);
  let org: TestOrg;
  let endpoint: string;

  before(async () => {
    org = await createTestOrg('partitions');
    endpoint = await endpointOf(org);
  });

  it('the migration leaves the rows from before, this month and three ahead, no DEFAULT partition, (event, endpoint) unique in each', async () => {
    const months = await listHistoryPartitions(testDb());
    expect(months[0]).to.include({ suffix: 'before_partitioning', from: null });
    expect(months.slice(1).map((m) => m.suffix)).to.deep.equal([0, 1, 2, 3].map((i) => suffixOf(monthStart(i))));
    // Contiguous: each starts where the last ends.
    for (let i = 1; i < months.length; i++) expect(months[i].from).to.equal(months[i - 1].to);
    const [{ defaults }] = await testDb().execute<{ defaults: number }>(sql`
      select count(*)::int as defaults from pg_partitioned_table where partdefid <> 0`);
    expect(defaults).to.equal(0);
    const uniques = await testDb().execute<{ name: string }>(sql`
      select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
       where i.indisunique and pg_get_indexdef(i.indexrelid) like '%(event_id, endpoint_id)%'`);
    expect(uniques.map((u) => u.name).sort()).to.deep.equal(
      ['before_partitioning', ...[0, 1, 2, 3].map((i) => suffixOf(monthStart(i)))].map((s) => `webhook_deliveries_${s}_event_endpoint_uq`).sort(),
    );
  });

  it('fan-out and redelivery put an event, its deliveries and their attempts in the event\'s month, once per endpoint', async () => {
    const month = monthStart(3);
    const eventId = await eventAt(org, new Date(month.getTime() + 5 * DAY));
    const second = await endpointOf(org);
    const deps = { db: testDb(), config: testConfig(), clock: new ManualClock() };
    const { jobs } = await fanOutPendingEvents(deps);
    expect(jobs.length).to.equal(2);
    const claimed = await claimDeliveries(deps, jobs.map((j) => ({ deliveryId: j.deliveryId, attempt: 1 })));
    await applySucceededAttempts(
      deps,
      claimed.map((c) => ({ claimed: c as ClaimedDelivery, sent: OK_SENT, startedAt: new Date() })),
    );
    // Redelivered by hand through the API to one endpoint: the same delivery again, no second row.
    const { app } = buildTestApp();
    const res = await request(app).post(`/api/v1/webhooks/events/${eventId}/redeliver`).query({ endpoint: second }).set('X-API-Key', org.keys.admin);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    const homes = await homesOf(eventId);
    expect(homes.sort()).to.deep.equal(
      ['events', 'webhook_deliveries', 'webhook_deliveries', 'webhook_attempts', 'webhook_attempts'].map((t) => `${t}_${suffixOf(month)}`).sort(),
    );
    // The month's unique index refuses a second delivery of the event to an endpoint.
    const duplicate = await testDb()
      .execute(sql`insert into webhook_deliveries (id, organization_id, event_id, endpoint_id) values (${idFrom('whd', new Date(month.getTime() + 5 * DAY))}, ${org.organizationId}, ${eventId}, ${endpoint})`)
      .then(
        () => null,
        (err: { code?: string; cause?: { code?: string } }) => err.cause?.code ?? err.code,
      );
    expect(duplicate).to.equal('23505');
  });

  it('claims a delivery from before partitioning made long after its event (a redelivery then)', async () => {
    const deps = { db: testDb(), config: testConfig(), clock: new ManualClock() };
    const eventAtTime = new Date(Date.now() - 60 * DAY);
    const eventId = idFrom('evt', eventAtTime);
    await testDb().execute(sql`insert into events (id, organization_id, type, data, created_at, dispatched_at)
      values (${eventId}, ${org.organizationId}, 'order.completed', '{}'::jsonb, ${eventAtTime.toISOString()}::timestamptz, ${eventAtTime.toISOString()}::timestamptz)`);
    const deliveryId = idFrom('whd', new Date(Date.now() - 30 * DAY));
    await testDb().execute(sql`insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, status, next_attempt_at)
      values (${deliveryId}, ${org.organizationId}, ${eventId}, ${endpoint}, 'pending', now())`);
    expect(await homesOf(eventId)).to.deep.equal(['events_before_partitioning', 'webhook_deliveries_before_partitioning']);
    const [claimed] = await claimDeliveries(deps, [{ deliveryId, attempt: 1 }]);
    expect(claimed).to.have.property('deliveryId', deliveryId);
    await testDb().execute(sql`update webhook_deliveries set status = 'succeeded', next_attempt_at = null where id = ${deliveryId}`);
  });

  it('the history-partitions job (BullMQ worker) creates the months ahead that are missing', async () => {
    const last = suffixOf(monthStart(MONTHS_AHEAD));
    for (const t of ['webhook_attempts', 'webhook_deliveries', 'events']) await testDb().execute(sql.raw(`alter table ${t} detach partition ${t}_${last}`));
    for (const t of ['webhook_attempts', 'webhook_deliveries', 'events']) await testDb().execute(sql.raw(`drop table ${t}_${last}`));
    expect((await listHistoryPartitions(testDb())).map((m) => m.suffix)).to.not.include(last);
    const config = testConfig({ WORKER_QUEUES: 'history-partitions', REDIS_PREFIX: `${TEST_REDIS_PREFIX}partitions` });
    let workers: RunningWorkers | null = null;
    const conn = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
    const queues = createQueues(conn, config.redisPrefix);
    try {
      workers = await startWorkerProcess(testContext(config));
      await addJobsAndWait(queues['history-partitions']);
    } finally {
      await workers?.close();
      await closeQueues(queues);
      conn.disconnect();
    }
    expect((await listHistoryPartitions(testDb())).map((m) => m.suffix)).to.include(last);
    // Rows of that month go in again, with (event, endpoint) unique.
    const eventId = await eventAt(org, new Date(monthStart(MONTHS_AHEAD).getTime() + DAY));
    expect(await homesOf(eventId)).to.deep.equal([`events_${last}`]);
    expect(await createPartitionsAhead(testDb(), new Date())).to.deep.equal([]);
  });

  it('the hot statements of a delivery read one month (EXPLAIN snapshots)', async () => {
    const month = monthStart(2);
    const eventId = await eventAt(org, new Date(month.getTime() + 3 * DAY));
    const base = new Date();
    const clock = new ManualClock();
    const sent: { query: string; params: unknown[] }[] = [];
    const client = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {}, debug: (_c, query, params) => sent.push({ query, params: params as unknown[] }) });
    const db = drizzle(client, { schema });
    const deps = { db, config: testConfig(), clock };
    const steps: { name: string; run: () => Promise<unknown>; allMonths?: boolean }[] = [];
    let claimed: ClaimedDelivery | null = null;
    const { jobs } = await fanOutPendingEvents({ ...deps, db: testDb() });
    const deliveryId = jobs.find((j) => true)!.deliveryId;
    await testDb().execute(sql`analyze events`);
    await testDb().execute(sql`analyze webhook_deliveries`);
    await testDb().execute(sql`analyze webhook_attempts`);
    steps.push({
      name: 'claim',
      run: async () => {
        const [c] = await claimDeliveries(deps, [{ deliveryId, attempt: 1 }]);
        claimed = c as ClaimedDelivery;
      },
    });
    steps.push({
      name: 'record-failed-attempt',
      run: () =>
        applyAttempt(deps, claimed!, { ...OK_SENT, statusCode: 500 }, { outcome: 'failed', error: 'HTTP 500', next: { state: 'retry', delayMs: 0 } }, new Date()),
    });
    steps.push({ name: 'claim-not-due', run: () => claimDeliveries(deps, [{ deliveryId, attempt: 1 }]) });
    steps.push({
      name: 'record-succeeded-attempt',
      run: async () => {
        const [c] = await claimDeliveries({ ...deps, db: testDb() }, [{ deliveryId, attempt: 2 }]);
        await applySucceededAttempts(deps, [{ claimed: c as ClaimedDelivery, sent: OK_SENT, startedAt: new Date() }]);
      },
    });
    steps.push({ name: 'read-event', run: () => getWebhookEvent(db, { organizationId: org.organizationId } as never, eventId) });
    // The relay's sweep of due deliveries has no id to prune by: it reads each month's partial index of pending rows.
    steps.push({ name: 'relay-sweep', run: () => relayWebhookEvents(deps), allMonths: true });

    const plans: Record<string, string> = {};
    // Plans as on a production-sized history: the test's tiny partitions would be read whole.
    await client`set enable_seqscan = off`;
    try {
      for (const step of steps) {
        sent.length = 0;
        await step.run();
        const texts: string[] = [];
        for (const { query, params } of [...sent]) {
          if (!/\b(events|webhook_deliveries|webhook_attempts)\b/.test(query) || /^\s*(begin|commit|rollback|savepoint|release)/i.test(query)) continue;
          const rows = await client.unsafe(`explain (costs off) ${query}`, params as never[]);
          texts.push(rows.map((r) => String(r['QUERY PLAN'])).join('\n'));
        }
        sent.length = 0;
        plans[step.name] = texts.join('\n---\n');
        const partitions = new Set(plans[step.name].match(PARTITION) ?? []);
        if (!step.allMonths) {
          expect([...partitions].every((p) => p.endsWith(`_${suffixOf(month)}`)), `${step.name}:\n${plans[step.name]}`).to.equal(true);
          expect(partitions.size, `${step.name}:\n${plans[step.name]}`).to.be.greaterThan(0);
        } else {
          const months = (await listHistoryPartitions(testDb())).map((m) => `webhook_deliveries_${m.suffix}`);
          expect([...partitions].filter((p) => p.startsWith('webhook_deliveries_')).sort()).to.deep.equal(months.sort());
          expect(plans[step.name]).to.match(/webhook_deliveries_due_idx|_due_idx/);
        }
      }
    } finally {
      await client.end({ timeout: 5 });
    }
    for (const [name, plan] of Object.entries(plans)) {
      const file = path.join(PLAN_DIR, `${name}.txt`);
      const text = `${partitionsRead(normalised(plan, base))}\n`;
      if (process.env.UPDATE_SQL_SNAPSHOTS === '1' || !fs.existsSync(file)) {
        fs.mkdirSync(PLAN_DIR, { recursive: true });
        fs.writeFileSync(file, text);
      }
      expect(text, `plan of ${name} (UPDATE_SQL_SNAPSHOTS=1 after a deliberate change)`).to.equal(fs.readFileSync(file, 'utf8'));
    }
  });

  it("the relay's due sweep reads each month's partial index of pending deliveries in a plan cached for any parameters too", async () => {
    const sent: { query: string; params: unknown[] }[] = [];
    const client = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {}, debug: (_c, query, params) => sent.push({ query, params: params as unknown[] }) });
    try {
      await relayWebhookEvents({ db: drizzle(client, { schema }), config: testConfig(), clock: new ManualClock() });
      const sweep = sent.find(({ query }) => /from "webhook_deliveries"/.test(query) && /"next_attempt_at" <=/.test(query));
      expect(sweep, 'the due sweep').to.not.equal(undefined);
      // A generic plan (plan_cache_mode, or a pooler's prepared statements) knows no parameter
      // value: only a predicate written into the text can match a partial index.
      await client`set plan_cache_mode = force_generic_plan`;
      await client`set enable_seqscan = off`;
      await client.unsafe(`prepare due_sweep as ${sweep!.query}`);
      const literal = (v: unknown) => `'${(v instanceof Date ? v.toISOString() : String(v)).replace(/'/g, "''")}'`;
      const rows = await client.unsafe(`explain (costs off) execute due_sweep(${sweep!.params.map(literal).join(', ')})`);
      const plan = rows.map((r) => String(r['QUERY PLAN'])).join('\n');
      const reads = plan.split('\n').filter((line) => / on webhook_deliveries_/.test(line));
      const months = await listHistoryPartitions(testDb());
      expect(reads, plan).to.have.length(months.length);
      for (const line of reads) expect(line, plan).to.match(/Index (Only )?Scan using webhook_deliveries_\w+_(next_attempt_at|due)_idx on /);
    } finally {
      await client.end({ timeout: 5 });
    }
  });

  it('drops a month past the window whole, and keeps one with a pending delivery until it is done', async () => {
    const deps = { db: testDb(), config: testConfig(), clock: new ManualClock() };
    const [m1, m2] = [monthStart(1), monthStart(2)];
    const done = await eventAt(org, new Date(m1.getTime() + 2 * DAY));
    await fanOutPendingEvents(deps);
    await testDb().execute(sql`update webhook_deliveries set status = 'succeeded', next_attempt_at = null where event_id = ${done}`);
    await testDb().execute(sql`update webhook_deliveries set status = 'succeeded', next_attempt_at = null where id >= ${idFrom('whd', m1)} and id < ${idFrom('whd', m2)}`);
    // Month 2: an event whose delivery is still pending.
    const pending = await eventAt(org, new Date(m2.getTime() + 9 * DAY));
    await fanOutPendingEvents(deps);
    await testDb().execute(sql`update events set dispatched_at = now() where dispatched_at is null`);
    expect(await homesOf(done)).to.include(`events_${suffixOf(m1)}`);

    // 90 days after month 2 ends: months 1 and 2 are past the window.
    const later = new Date(monthStart(3).getTime() + 91 * DAY);
    const first = await dropExpiredPartitions(testDb(), later, 90);
    expect(first.dropped).to.include(suffixOf(m1));
    expect(first.kept).to.include(suffixOf(m2));
    expect(await homesOf(done)).to.deep.equal([]);
    const [{ tables }] = await testDb().execute<{ tables: number }>(sql`select count(*)::int as tables from pg_class where relname like ${`%_${suffixOf(m1)}`}`);
    expect(tables).to.equal(0);
    expect((await homesOf(pending)).length).to.be.greaterThan(1);

    // Once nothing is pending the month goes on the next run; a window of 0 keeps everything.
    await testDb().execute(sql`update webhook_deliveries set status = 'failed', next_attempt_at = null where status = 'pending'`);
    expect(await dropExpiredPartitions(testDb(), later, 0)).to.deep.equal({ dropped: [], kept: [] });
    const second = await dropExpiredPartitions(testDb(), later, 90);
    expect(second.dropped).to.include(suffixOf(m2));
    expect(await homesOf(pending)).to.deep.equal([]);
    expect((await listHistoryPartitions(testDb())).map((m) => m.suffix)).to.include(suffixOf(monthStart(3)));
  });

  it('a bulk redelivery leaves alone the deliveries of a month being dropped (its events detached): nothing is requeued into a month that goes', async () => {
    const deps = { db: testDb(), config: testConfig(), clock: new ManualClock() };
    const own = await createTestOrg('partitions bulk redeliver');
    const ownEndpoint = await endpointOf(own);
    const month = monthStart(3);
    const event = await eventAt(own, new Date(month.getTime() + 3 * DAY));
    await fanOutPendingEvents(deps);
    await testDb().execute(sql`update webhook_deliveries set status = 'failed', next_attempt_at = null, last_attempt_at = ${month.toISOString()}::timestamptz where event_id = ${event}`);
    const events = `events_${suffixOf(month)}`;
    // The dropper's first step (dropExpiredPartitions): the month's events are out of the history;
    // its deliveries follow once nothing in the month is owed.
    await testDb().execute(sql`alter table events detach partition ${sql.identifier(events)}`);
    try {
      const caller = { organizationId: own.organizationId, keyId: 'key_test', role: 'admin' as const };
      const { count, jobs } = await redeliverFailedSince(deps, caller, ownEndpoint, new Date(month.getTime() - DAY));
      expect({ count, jobs }).to.deep.equal({ count: 0, jobs: [] });
      const rows = await testDb().execute<{ status: string }>(sql`select status from webhook_deliveries where event_id = ${event}`);
      expect(rows.map((r) => r.status)).to.deep.equal(['failed']);
    } finally {
      await testDb().execute(
        sql`alter table events attach partition ${sql.identifier(events)} for values from (${sql.raw(`'${idAt('evt', month)}'`)}) to (${sql.raw(`'${idAt('evt', monthStart(4))}'`)})`,
      );
    }
  });

  it('migration 0014 on a populated installation keeps every row, and a writer of the previous version waits only for its lock', async function () {
    this.timeout(180_000);
    // 20,000 rows of each table here; `npm run bench:partition-migration` runs the same on a million.
    const run = await runMigrationOnPopulated(`${TEST_DATABASE_URL}_partition_migration`, 20_000);
    expect(run.after).to.deep.equal({ ...run.before, attempts: run.before.attempts + run.writerInserts });
    expect(run.writerInserts).to.be.greaterThan(0);
    const check = postgres(`${TEST_DATABASE_URL}_partition_migration`, { max: 1, onnotice: () => {} });
    try {
      const [old] = await check`select tableoid::regclass::text as home from webhook_deliveries where status = 'pending' order by id limit 1`;
      expect(old.home).to.equal('webhook_deliveries_before_partitioning');
      // New rows go to the month; the attempts' identity goes on after the old rows'.
      const [{ max }] = await check`select max(id)::bigint as max from webhook_attempts`;
      const at = new Date(Date.now() + 20 * 60_000);
      const [{ home }] = await check`insert into events (id, organization_id, type, data) values (${idFrom('evt', at)}, 'org_partition_migration', 'order.completed', '{}')
                                     returning tableoid::regclass::text as home`;
      expect(home).to.equal(`events_${suffixOf(monthStart(0, at))}`);
      const [attempt] = await check`insert into webhook_attempts (delivery_id, attempt_number, started_at, outcome) values (${idFrom('whd', at)}, 1, now(), 'succeeded') returning id, tableoid::regclass::text as home`;
      expect(Number(attempt.id)).to.be.greaterThan(Number(max));
      expect(attempt.home).to.equal(`webhook_attempts_${suffixOf(monthStart(0, at))}`);
    } finally {
      await check.end({ timeout: 5 });
      const admin = postgres(new URL('/postgres', TEST_DATABASE_URL).toString(), { max: 1, onnotice: () => {} });
      await admin.unsafe(`drop database if exists "${new URL(TEST_DATABASE_URL).pathname.slice(1)}_partition_migration" with (force)`);
      await admin.end({ timeout: 5 });
    }
  });
});
