import { expect } from 'chai';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from '../../db/schema';
import { listTransfers } from '../../core/transfers/transfers';
import { listOrders } from '../../core/orders/orders';
import { createTestOrg, testContext, testSql, TEST_DATABASE_URL } from '../helpers/harness';

/**
 * The plans of the list endpoints' page statements on a merchant with history: the newest-first
 * page reads the (organization_id, created_at, id) index backwards and stops after the page, instead
 * of sorting every row of the organization (bench:scale measured seconds at 250,000 transfers); a
 * deep page skips its offset in the index alone (index-only scan), a status filter has its own
 * index in the same order, and the total reads the kept counts, not the rows
 * (0016_list_counts.sql). The statements are those the service sends (captured from the driver),
 * explained with their parameters.
 */
describe('list plans on a merchant with history', function () {
  this.timeout(60_000);
  let organizationId: string;

  before(async () => {
    organizationId = (await createTestOrg('plans')).organizationId;
    const sql = testSql();
    await sql.unsafe(`
      insert into transfers (id, chain_id, protocol, currency, token_address, amount, from_address, to_address, tx_hash, index_in_tx, log_index,
                             block_number, block_hash, block_timestamp, confirmations, status, organization_id, created_at)
      select 'trf_plan' || lpad(g::text, 22, '0'), 'ethereum-local', 'evm', 'USDT', '0x' || repeat('ab', 20), 1000, '0x' || repeat('cd', 20),
             '0x' || repeat('ef', 20), '0x' || md5('plan' || g) || md5('tx' || g), 0, 0, g, '0x' || md5('b' || g) || md5('h' || g),
             now() - (g || ' minutes')::interval, 12, 'confirmed', '${organizationId}', now() - (g || ' minutes')::interval
      from generate_series(1, 20000) g`);
    await sql.unsafe(`
      insert into orders (id, organization_id, order_reference, pay_token, amount, currency, chain_id, protocol, address, pool_address_id, status,
                          payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at, created_at)
      select 'ord_plan' || lpad(g::text, 22, '0'), '${organizationId}', 'plan-' || g, md5('pt' || g), 1000, 'USDT', 'ethereum-local', 'evm',
             '0x' || repeat('ef', 20), 1, case when g % 4 = 0 then 'expired' else 'completed' end, 10, 5, 3,
             now() - (g || ' minutes')::interval, now() - (g || ' minutes')::interval, now() - (g || ' minutes')::interval
      from generate_series(1, 20000) g`);
    // As autovacuum leaves them: the visibility map set, so the index alone answers.
    await sql`vacuum analyze transfers`;
    await sql`vacuum analyze orders`;
  });

  /** The statements `run` sends, each explained (text plan) with its parameters. */
  async function plansOf(run: (db: ReturnType<typeof drizzle<typeof schema>>) => Promise<unknown>): Promise<string[]> {
    const sent: { query: string; params: unknown[] }[] = [];
    let capturing = true;
    const client = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {}, types: {}, debug: (_c, query, params) => capturing && sent.push({ query, params: params as unknown[] }) });
    try {
      await run(drizzle(client, { schema }));
      capturing = false;
      const plans: string[] = [];
      for (const { query, params } of sent) {
        const rows = await client.unsafe(`explain ${query}`, params as never[]);
        plans.push(rows.map((r) => String(r['QUERY PLAN'])).join('\n'));
      }
      return plans;
    } finally {
      await client.end({ timeout: 5 });
    }
  }

  /** The page statement's plan: the one that reads the listed rows by their ids. */
  function pageOf(plans: string[], table = 'transfers'): string {
    const page = plans.find((p) => new RegExp(`using ${table}_pkey on ${table}\\b`).test(p));
    expect(page, plans.join('\n---\n')).to.not.equal(undefined);
    return page!;
  }

  /** The count statement's plan: a sum of the kept counts, never a read of the listed table. */
  function expectCountFromCounters(plans: string[], counts: string, table: string): void {
    const count = plans.find((p) => /Aggregate/.test(p.split('\n')[0]));
    expect(count, plans.join('\n---\n')).to.match(new RegExp(`on ${counts}`));
    expect(count).to.not.match(new RegExp(`on ${table}\\b`));
  }

  it('GET /transfers, newest first: the index backwards, ids from the index alone, no sort of the organization; the total from the counts', async () => {
    const plans = await plansOf((db) => listTransfers({ db, registry: testContext().registry }, organizationId, { page: 1, limit: 20, sortBy: 'detectedAt', sortOrder: 'desc' }));
    const page = pageOf(plans);
    expect(page).to.match(/Index Only Scan Backward using transfers_org_detected_idx on transfers/);
    expect(page).to.not.match(/Seq Scan on transfers/);
    expectCountFromCounters(plans, 'transfer_counts', 'transfers');
  });

  it('GET /transfers, oldest first: the same index forwards', async () => {
    const plans = await plansOf((db) => listTransfers({ db, registry: testContext().registry }, organizationId, { page: 1, limit: 20, sortBy: 'detectedAt', sortOrder: 'asc' }));
    expect(pageOf(plans)).to.match(/Index Only Scan using transfers_org_detected_idx on transfers/);
  });

  it('GET /transfers?status=, a deep page: the status index from the edge of the page\'s day (counts per day), the rest of the offset skipped in the index', async () => {
    const plans = await plansOf((db) => listTransfers({ db, registry: testContext().registry }, organizationId, { page: 400, limit: 20, sortBy: 'detectedAt', sortOrder: 'desc', status: 'confirmed' }));
    const page = pageOf(plans);
    expect(page).to.match(/Index Only Scan Backward using transfers_org_status_detected_idx on transfers/);
    // From the edge of the page's day (found in the counts per day), not from the list's head.
    expect(page).to.match(/Index Cond: .*created_at < /);
    expect(plans.some((p) => /WindowAgg/.test(p) && /on transfer_counts/.test(p)), plans.join('\n---\n')).to.equal(true);
    expect(page).to.not.match(/Seq Scan on transfers/);
    expectCountFromCounters(plans, 'transfer_counts', 'transfers');
  });

  it('GET /orders, a deep page and a status filter: index-only scans in the list order; the totals from the counts', async () => {
    const ctx = testContext();
    const deep = await plansOf((db) => listOrders({ db, registry: ctx.registry }, organizationId, { page: 500, limit: 20, sortBy: 'createdAt', sortOrder: 'desc' }));
    expect(pageOf(deep, 'orders')).to.match(/Index Only Scan Backward using orders_org_created_idx on orders/);
    expect(pageOf(deep, 'orders')).to.match(/Index Cond: .*created_at < /);
    expectCountFromCounters(deep, 'order_counts', 'orders');
    const expired = await plansOf((db) => listOrders({ db, registry: ctx.registry }, organizationId, { page: 100, limit: 20, sortBy: 'createdAt', sortOrder: 'desc', status: 'expired' }));
    expect(pageOf(expired, 'orders')).to.match(/Index Only Scan Backward using orders_org_status_created_idx on orders/);
    expectCountFromCounters(expired, 'order_counts', 'orders');
  });
});
