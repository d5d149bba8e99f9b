import { expect } from 'chai';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import * as schema from '../../db/schema';
import { listTransfers } from '../../core/transfers/transfers';
import { createTestOrg, testSql, TEST_DATABASE_URL } from '../helpers/harness';

/**
 * The plans of the list endpoints' page statements on a merchant with history: the newest-first
 * page reads the (organization_id, created_at) index backwards and stops after the page, instead
 * of sorting every row of the organization (bench:scale measured seconds at 250,000 transfers).
 * The statements are those the service sends (captured from the driver), explained with their
 * parameters.
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
    await sql`analyze transfers`;
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

  it('GET /transfers, newest first: an index scan backwards, no sort of the organization', async () => {
    const plans = await plansOf((db) => listTransfers(db, organizationId, { page: 1, limit: 20, sortBy: 'detectedAt', sortOrder: 'desc' }));
    const page = plans.find((p) => /Limit/.test(p) && !/Aggregate/.test(p.split('\n')[0]));
    expect(page, plans.join('\n---\n')).to.not.equal(undefined);
    expect(page).to.match(/Index Scan Backward using transfers_org_detected_idx on transfers/);
    expect(page).to.not.match(/Seq Scan on transfers/);
  });

  it('GET /transfers, oldest first: the same index forwards', async () => {
    const plans = await plansOf((db) => listTransfers(db, organizationId, { page: 1, limit: 20, sortBy: 'detectedAt', sortOrder: 'asc' }));
    const page = plans.find((p) => /Limit/.test(p) && !/Aggregate/.test(p.split('\n')[0]));
    expect(page, plans.join('\n---\n')).to.match(/Index Scan using transfers_org_detected_idx on transfers/);
  });
});
