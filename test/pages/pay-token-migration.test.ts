import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { ensureDatabase, MIGRATIONS_FOLDER } from '../../db/migrate';
import { TEST_DATABASE_URL } from '../helpers/harness';

/** Migration 0003 gives every order that existed before it its own 128-bit payment page token. */
describe('migration 0003: payment page tokens for existing orders', function () {
  this.timeout(60_000);
  const dbUrl = TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/$1_paytoken');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sg-migrations-'));

  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    const admin = postgres(TEST_DATABASE_URL.replace(/\/([^/]+)$/, '/postgres'), { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${new URL(dbUrl).pathname.slice(1)}" with (force)`);
    await admin.end();
  });

  it('backfills distinct base64url tokens, then requires one on every order', async () => {
    // The schema as it was before the migration: the journal cut before it.
    cpSync(MIGRATIONS_FOLDER, dir, { recursive: true });
    const journalPath = path.join(dir, 'meta', '_journal.json');
    const journal = JSON.parse(readFileSync(journalPath, 'utf8'));
    const at = journal.entries.findIndex((e: { tag: string }) => e.tag === '0003_order_pay_token');
    writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, at) }));
    await ensureDatabase(dbUrl);
    const sql = postgres(dbUrl, { max: 1, onnotice: () => {} });
    try {
      await migrate(drizzle(sql), { migrationsFolder: dir });
      await sql`insert into organizations (id, name) values ('org_m', 'Old org')`;
      const [pool] = await sql`insert into pool_addresses (organization_id, protocol, address, mode) values ('org_m', 'evm', '0x00000000000000000000000000000000000000aa', 'self_managed') returning id`;
      await sql`
        insert into orders (id, organization_id, order_reference, amount, currency, chain_id, protocol, address, pool_address_id,
          payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at)
        select 'ord_old' || g, 'org_m', 'old-' || g, 1, 'USDT', 'ethereum-local', 'evm', '0x00000000000000000000000000000000000000aa', ${pool.id},
          10, 5, 3, now(), now()
        from generate_series(1, 50) g`;

      await migrate(drizzle(sql), { migrationsFolder: MIGRATIONS_FOLDER });
      const rows = await sql<{ pay_token: string }[]>`select pay_token from orders`;
      expect(rows).to.have.length(50);
      for (const r of rows) expect(r.pay_token).to.match(/^[A-Za-z0-9_-]{22}$/);
      expect(new Set(rows.map((r) => r.pay_token)).size).to.equal(50);
      const [column] = await sql`select is_nullable from information_schema.columns where table_name = 'orders' and column_name = 'pay_token'`;
      expect(column.is_nullable).to.equal('NO');
    } finally {
      await sql.end();
    }
  });
});
