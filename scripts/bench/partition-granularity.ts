/**
 * `npm run bench:partition-granularity`: why the webhook history is partitioned by month, not by
 * day. The same 90 days of history (BENCH_ROWS events, as many deliveries and attempts) in monthly
 * partitions (4 months and 3 ahead: 7 per table) and in daily ones (91 days and 7 ahead: 98 per
 * table); p50/p99 of the delivery path's statements on each: a delivery's claim, the relay (one
 * new event fanned out, the sweep of due deliveries over every partition), an event read with its
 * deliveries, and the history-partitions job's run.
 */
import { performance } from 'node:perf_hooks';
import postgres from 'postgres';
import { createDb } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { loadConfig } from '../../core/platform/config';
import { systemClock } from '../../core/platform/clock';
import { newId } from '../../core/platform/ids';
import { claimDeliveries } from '../../core/webhooks/claim';
import { relayWebhookEvents } from '../../core/webhooks/relay';
import { getWebhookEvent } from '../../core/webhooks/history';
import { createPartitionsAhead, dropExpiredPartitions } from '../../core/maintenance/history-partitions';
import { percentile } from './bench-kit';

const ROWS = Number(process.env.BENCH_ROWS ?? 300_000);
const RUNS = Number(process.env.BENCH_REQUESTS ?? 200);
const BASE = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/sg_bench_granularity';
const DAY = 86_400_000;


async function timed(prepare: () => Promise<string>, run: (v: string) => Promise<unknown>): Promise<string> {
  const samples: number[] = [];
  for (let i = -5; i < RUNS; i++) {
    const v = await prepare();
    const t = performance.now();
    await run(v);
    if (i >= 0) samples.push(performance.now() - t);
  }
  samples.sort((a, b) => a - b);
  return `${percentile(samples, 50).toFixed(2)} / ${percentile(samples, 99).toFixed(2)} ms`;
}

async function measure(granularity: 'month' | 'day'): Promise<Record<string, string>> {
  const url = `${BASE}_${granularity}`;
  const admin = postgres(new URL('/postgres', url).toString(), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${new URL(url).pathname.slice(1)}" with (force)`);
  await admin.end();
  await runMigrations(url);
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const handle = createDb(url, { max: 4 });
  const config = loadConfig({ DATABASE_URL: url, NETWORK: 'testnet', SECRET_ENCRYPTION_KEY: 'ab'.repeat(32), ALLOW_INSECURE_PUBLIC_URL: 'true', LOG_LEVEL: 'silent' });
  const deps = { db: handle.db, config, clock: systemClock };
  try {
    // The periods: the migration's partitions replaced by months or days over the last 91 days and ahead.
    await sql.unsafe(`
      do $$ declare t text; r record; begin
        for r in select c.relname as child, p.relname as parent from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
                  where p.relname in ('events', 'webhook_deliveries', 'webhook_attempts') loop
          execute format('alter table %I detach partition %I', r.parent, r.child);
          execute format('drop table %I', r.child);
        end loop;
      end $$`);
    if (granularity === 'month') {
      await sql.unsafe(`select create_history_partition(date_trunc('month', now()) - make_interval(months => i), date_trunc('month', now()) - make_interval(months => i - 1),
                               to_char(date_trunc('month', now()) - make_interval(months => i), '"p"YYYYMM')) from generate_series(-3, 3) i`);
    } else {
      await sql.unsafe(`select create_history_partition(date_trunc('day', now()) - make_interval(days => i), date_trunc('day', now()) - make_interval(days => i - 1),
                               to_char(date_trunc('day', now()) - make_interval(days => i), '"d"YYYYMMDD')) from generate_series(-7, 90) i`);
    }
    await sql`insert into organizations (id, name) values ('org_granularity', 'Granularity')`;
    await sql`insert into webhook_endpoints (id, organization_id, url, events, secret_ciphertext, created_at)
              values ('whe_granularity', 'org_granularity', 'https://hooks.example/x', '{order.completed}', 'x', now() - interval '100 days')`;
    const now = Date.now();
    const rows = `(select g, (${now} - ${90 * DAY}::bigint * (${ROWS} - g) / ${ROWS})::bigint as t from generate_series(1, ${ROWS}) g) s`;
    const ulid = (prefix: string) => `'${prefix}_' || substr(id_at('x', to_timestamp(t / 1000.0)), 3, 10) || lpad(g::text, 16, '0')`;
    await sql.unsafe(`insert into events (id, organization_id, type, data, created_at, dispatched_at)
      select ${ulid('evt')}, 'org_granularity', 'order.completed', '{}', to_timestamp(t / 1000.0), to_timestamp(t / 1000.0) from ${rows}`);
    await sql.unsafe(`insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, status, attempt_count, created_at)
      select ${ulid('whd')}, 'org_granularity', ${ulid('evt')}, 'whe_granularity', 'succeeded', 1, to_timestamp(t / 1000.0) from ${rows}`);
    await sql.unsafe(`insert into webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, outcome)
      select ${ulid('whd')}, 1, to_timestamp(t / 1000.0), 30, 200, 'succeeded' from ${rows}`);
    await sql`vacuum analyze`;
    const [{ partitions }] = await sql`select count(*)::int as partitions from pg_inherits where inhparent = 'events'::regclass`;
    const oldEvent = (await sql`select id from events order by id limit 1 offset ${Math.floor(ROWS / 3)}`)[0].id as string;
    const out: Record<string, string> = { 'partitions per table': String(partitions) };
    out['delivery claim'] = await timed(
      async () => {
        const eventId = newId('evt');
        const deliveryId = `whd_${eventId.slice(4)}`;
        await sql.unsafe(`insert into events (id, organization_id, type, data, dispatched_at) values ('${eventId}', 'org_granularity', 'order.completed', '{}', now());
          insert into webhook_deliveries (id, organization_id, event_id, endpoint_id, next_attempt_at) values ('${deliveryId}', 'org_granularity', '${eventId}', 'whe_granularity', now())`);
        return deliveryId;
      },
      (deliveryId) => claimDeliveries(deps, [{ deliveryId, attempt: 1 }]),
    );
    out['relay (1 new event)'] = await timed(
      async () => {
        await sql.unsafe(`insert into events (id, organization_id, type, data) values ('${newId('evt')}', 'org_granularity', 'order.completed', '{}')`);
        return '';
      },
      () => relayWebhookEvents(deps),
    );
    out['event read (30 days old)'] = await timed(async () => oldEvent, (eventId) => getWebhookEvent(handle.db, { organizationId: 'org_granularity' } as never, eventId));
    out['partition job run'] = await timed(
      async () => '',
      async () => {
        await createPartitionsAhead(handle.db, new Date());
        await dropExpiredPartitions(handle.db, new Date(), 90);
      },
    );
    return out;
  } finally {
    await sql.end();
    await handle.close();
    const admin = postgres(new URL('/postgres', url).toString(), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${new URL(url).pathname.slice(1)}" with (force)`);
    await admin.end();
  }
}

async function main(): Promise<void> {
  const month = await measure('month');
  const day = await measure('day');
  console.log(`${ROWS.toLocaleString('en-US')} events, deliveries and attempts over 90 days; ${RUNS} runs each; p50 / p99`);
  console.log('| statement | monthly | daily |\n|---|---|---|');
  for (const k of Object.keys(month)) console.log(`| ${k} | ${month[k]} | ${day[k]} |`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
