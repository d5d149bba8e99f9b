import { expect } from 'chai';
import { databaseBefore, type DatabaseBeforeMigration } from '../helpers/migrations';

/** Migration 0003 gives every order that existed before it its own 128-bit payment page token. */
describe('migration 0003: payment page tokens for existing orders', function () {
  this.timeout(60_000);
  let db: DatabaseBeforeMigration | null = null;

  after(async () => {
    await db?.remove();
  });

  it('backfills distinct base64url tokens, then requires one on every order', async () => {
    db = await databaseBefore('0003_order_pay_token', 'paytoken');
    const { sql } = db;
    await sql`insert into organizations (id, name) values ('org_m', 'Old org')`;
    const [pool] = await sql`insert into pool_addresses (organization_id, protocol, address, mode) values ('org_m', 'evm', '0x00000000000000000000000000000000000000aa', 'self_managed') returning id`;
    await sql`
      insert into orders (id, organization_id, order_reference, amount, currency, chain_id, protocol, address, pool_address_id,
        payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at)
      select 'ord_old' || g, 'org_m', 'old-' || g, 1, 'USDT', 'ethereum-local', 'evm', '0x00000000000000000000000000000000000000aa', ${pool.id},
        10, 5, 3, now(), now()
      from generate_series(1, 50) g`;

    await db.migrateRest();
    const rows = await sql<{ pay_token: string }[]>`select pay_token from orders`;
    expect(rows).to.have.length(50);
    for (const r of rows) expect(r.pay_token).to.match(/^[A-Za-z0-9_-]{22}$/);
    expect(new Set(rows.map((r) => r.pay_token)).size).to.equal(50);
    const [column] = await sql`select is_nullable from information_schema.columns where table_name = 'orders' and column_name = 'pay_token'`;
    expect(column.is_nullable).to.equal('NO');
  });
});
