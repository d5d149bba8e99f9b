import { expect } from 'chai';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { vacuumQueueTables } from '../../core/maintenance/vacuum-queue-tables';
import { closeQueues, createQueues } from '../../core/jobs/catalog';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { eventually } from '../helpers/wait';
import { createTestOrg, testConfig, testContext, testDb, TEST_REDIS_PREFIX } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { addJobsAndWait } from '../helpers/run-job';
import { newId } from '../../core/platform/ids';

interface TableStats {
  dead: number;
  vacuums: number;
}

async function tableStats(table: string): Promise<TableStats> {
  const [row] = await testDb().execute<{ dead: string; vacuums: string }>(
    sql`select n_dead_tup as dead, vacuum_count as vacuums from pg_stat_user_tables where relname = ${table} and schemaname = current_schema()`,
  );
  return { dead: Number(row.dead), vacuums: Number(row.vacuums) };
}

/** Statistics reach pg_stat_user_tables within about a second of a transaction's end. */
async function waitForStats(check: (s: TableStats) => boolean, what: string, table = 'pool_addresses'): Promise<TableStats> {
  let stats = await tableStats(table);
  await eventually(async () => check((stats = await tableStats(table))), 10_000, `${table} statistics to show ${what}`, 100).catch(() => {
    throw new Error(`${table} statistics never showed ${what}: ${JSON.stringify(stats)}`);
  });
  return stats;
}

/** Takes addresses out of the pool the way allocation does (an update each), leaving dead rows. */
async function churnPool(organizationId: string, addresses: number): Promise<void> {
  await seedPoolAddresses(organizationId, 'evm', addresses);
  await testDb().execute(sql`update pool_addresses set status = 'allocated' where organization_id = ${organizationId} and status = 'available'`);
  await testDb().execute(sql`update pool_addresses set status = 'available' where organization_id = ${organizationId} and status = 'allocated'`);
}

describe('table maintenance: vacuuming the queue-like tables', () => {
  it('vacuums a queue table once its dead rows reach the threshold, and leaves it alone below', async () => {
    const org = await createTestOrg('churned pool');
    await churnPool(org.organizationId, 200);
    const before = await waitForStats((s) => s.dead >= 200, '200 dead rows');

    const untouched = await vacuumQueueTables(testDb(), { minDeadRows: 100_000_000 });
    expect(untouched).to.deep.equal([]);

    const vacuumed = await vacuumQueueTables(testDb(), { minDeadRows: 200 });
    expect(vacuumed).to.include('pool_addresses');
    const after = await waitForStats((s) => s.vacuums > before.vacuums, 'a vacuum');
    expect(after.dead).to.be.below(before.dead);
  });

  it('vacuums a month of the partitioned history (events) where Postgres counts its dead rows: on the partition, not the parent', async () => {
    const org = await createTestOrg('dispatched events');
    // Events fanned out as the relay does (inserted undispatched, then marked dispatched): each leaves a dead row in its month.
    const ids = Array.from({ length: 200 }, () => newId('evt'));
    for (const id of ids) {
      await testDb().execute(sql`insert into events (id, organization_id, type, data) values (${id}, ${org.organizationId}, 'order.completed', '{}'::jsonb)`);
    }
    await testDb().execute(sql`update events set dispatched_at = now() where id = any(${sql.param(ids)}::text[])`);
    const [{ month }] = await testDb().execute<{ month: string }>(sql`select tableoid::regclass::text as month from events where id = ${ids[0]}`);
    expect(month).to.match(/^events_(p\d{6}|before_partitioning)$/);
    const before = await waitForStats((s) => s.dead >= 200, '200 dead rows', month);

    const vacuumed = await vacuumQueueTables(testDb(), { minDeadRows: 200 });
    expect(vacuumed).to.include(month);
    expect(vacuumed).not.to.include('events');
    const after = await waitForStats((s) => s.vacuums > before.vacuums, 'a vacuum', month);
    expect(after.dead).to.be.below(before.dead);
  });

  it('the table-maintenance job (BullMQ worker) runs it with VACUUM_MIN_DEAD_ROWS', async function () {
    this.timeout(30_000);
    const config = testConfig({
      WORKER_QUEUES: 'table-maintenance',
      TABLE_MAINTENANCE_INTERVAL_MS: '3600000',
      VACUUM_MIN_DEAD_ROWS: '100',
      REDIS_PREFIX: `${TEST_REDIS_PREFIX}maint`,
    });
    const org = await createTestOrg('churned pool (job)');
    await churnPool(org.organizationId, 150);
    const before = await waitForStats((s) => s.dead >= 150, '150 dead rows');
    let workers: RunningWorkers | null = null;
    const conn = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
    const queues = createQueues(conn, config.redisPrefix);
    try {
      workers = await startWorkerProcess(testContext(config));
      await addJobsAndWait(queues['table-maintenance']);
      await waitForStats((s) => s.vacuums > before.vacuums, 'a vacuum by the job');
    } finally {
      await workers?.close();
      await closeQueues(queues);
      conn.disconnect();
    }
  });
});
