import { sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { formatAmount } from '../platform/amounts';
import type { ChainRegistry } from '../chains/registry';

/**
 * The dashboard's overview figures of one organization: completed orders and confirmed deposits
 * today and this month (UTC) with their volume per currency and chain, and the completed volume
 * per day over 30 days. Orders are found through their creation index: an order completes at most
 * its payment window and grace (a week and a day at most) after it was created.
 */
export interface VolumeLine {
  currency: string;
  chainId: string;
  count: number;
  volume: string;
}

export interface Overview {
  orders: { today: VolumeLine[]; month: VolumeLine[] };
  deposits: { today: VolumeLine[]; month: VolumeLine[] };
  /** Oldest first: 30 UTC days ending today, volume in token units summed across stablecoins. */
  daily: { day: string; volume: number; count: number }[];
}

const LONGEST_ORDER_LIFE_MS = 9 * 24 * 3600_000;

function lines(rows: { currency: string; chain_id: string; n: number | string; total: string }[], registry: ChainRegistry): VolumeLine[] {
  // The registry knows the decimals of every chain table token, configured now or not (tokenDecimals).
  return rows.map((r) => ({
    currency: r.currency,
    chainId: r.chain_id,
    count: Number(r.n),
    volume: formatAmount(BigInt(r.total), registry.tokenDecimals(r.chain_id, r.currency)),
  }));
}

export async function organizationOverview(db: DbOrTx, registry: ChainRegistry, organizationId: string, now: Date): Promise<Overview> {
  const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const thirtyDays = new Date(today.getTime() - 29 * 86_400_000);
  const since = month < thirtyDays ? month : thirtyDays;
  const createdSince = new Date(since.getTime() - LONGEST_ORDER_LIFE_MS);

  const orderRows = await db.execute<{ currency: string; chain_id: string; day: string; n: string; total: string }>(sql`
    select currency, chain_id, to_char(date_trunc('day', completed_at at time zone 'UTC'), 'YYYY-MM-DD') as day, count(*) as n, sum(amount_received)::text as total
    from orders
    where organization_id = ${organizationId} and created_at >= ${createdSince.toISOString()}::timestamptz and status = 'completed' and completed_at >= ${since.toISOString()}::timestamptz
    group by 1, 2, 3`);
  const depositRows = await db.execute<{ currency: string; chain_id: string; day: string; n: string; total: string }>(sql`
    select t.currency, t.chain_id, to_char(date_trunc('day', d.confirmed_at at time zone 'UTC'), 'YYYY-MM-DD') as day, count(*) as n, sum(t.amount)::text as total
    from deposits d join transfers t on t.id = d.transfer_id
    where d.organization_id = ${organizationId} and d.created_at >= ${createdSince.toISOString()}::timestamptz and d.confirmed_at >= ${since.toISOString()}::timestamptz
    group by 1, 2, 3`);

  const dayOf = (d: Date) => d.toISOString().slice(0, 10);
  const sum = (rows: typeof orderRows, from: Date) => {
    const byToken = new Map<string, { currency: string; chain_id: string; n: number; total: string }>();
    for (const r of rows) {
      if (r.day < dayOf(from)) continue;
      const key = `${r.currency}|${r.chain_id}`;
      const cur = byToken.get(key) ?? { currency: r.currency, chain_id: r.chain_id, n: 0, total: '0' };
      cur.n += Number(r.n);
      cur.total = (BigInt(cur.total) + BigInt(r.total)).toString();
      byToken.set(key, cur);
    }
    return lines([...byToken.values()], registry);
  };

  const daily = Array.from({ length: 30 }, (_, i) => ({ day: dayOf(new Date(thirtyDays.getTime() + i * 86_400_000)), volume: 0, count: 0 }));
  const byDay = new Map(daily.map((d) => [d.day, d]));
  for (const r of orderRows) {
    const slot = byDay.get(r.day);
    if (!slot) continue;
    const [line] = lines([{ ...r, total: r.total }], registry);
    slot.volume += Number(line.volume);
    slot.count += Number(r.n);
  }
  return {
    orders: { today: sum(orderRows, today), month: sum(orderRows, month) },
    deposits: { today: sum(depositRows, today), month: sum(depositRows, month) },
    daily,
  };
}
