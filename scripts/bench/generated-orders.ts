import type postgres from 'postgres';

/** SQL expressions of a generated row, over `g` (the row number of generate_series). */
export interface GeneratedRow {
  /** The row's time-ordered id with this prefix. */
  id(prefix: string): string;
  /** The row's organization id. */
  org: string;
  /** The row's moment (timestamptz). */
  at: string;
}

/**
 * Orders `from`..`to` of a benchmark's history, made in Postgres (INSERT … SELECT generate_series):
 * a quarter expired unpaid, the rest completed, on ethereum-sepolia USDT, all on pool address 1.
 */
export async function insertGeneratedOrders(sql: postgres.Sql, row: GeneratedRow, from: number, to: number): Promise<void> {
  const { id, org, at } = row;
  await sql.unsafe(`
    insert into orders (id, organization_id, order_reference, pay_token, amount, amount_received, currency, chain_id, protocol, address, pool_address_id,
                        status, metadata, payment_window_minutes, grace_minutes, required_confirmations, expires_at, grace_ends_at, completed_at, expired_at, created_at, updated_at)
    select ${id('ord')}, ${org}, 'ref-' || g, md5(g::text), 10500000, case when g % 4 = 0 then 0 else 10500000 end, 'USDT', 'ethereum-sepolia', 'evm',
           '0x' || substr(md5('a' || g), 1, 40), 1, case when g % 4 = 0 then 'expired' else 'completed' end, '{}'::jsonb, 30, 15, 12,
           ${at} + interval '30 minutes', ${at} + interval '45 minutes', case when g % 4 = 0 then null else ${at} + interval '2 minutes' end,
           case when g % 4 = 0 then ${at} + interval '45 minutes' end, ${at}, ${at}
    from generate_series(${from}, ${to}) g`);
}
