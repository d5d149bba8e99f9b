import { and, eq, sql } from 'drizzle-orm';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import { events, orders, transfers } from '../../db/schema';

/** One scan and one confirmation count, as the two repeatable jobs would do. */
export async function settle(ctx: ServiceContext): Promise<void> {
  const scan = await runChainScan(ctx, LOCAL_CHAIN_ID);
  if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
  const conf = await runChainConfirmations(ctx, LOCAL_CHAIN_ID);
  if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
}

export async function orderRow(ctx: ServiceContext, orderId: string) {
  const [row] = await ctx.db.select().from(orders).where(eq(orders.id, orderId));
  return row;
}

export async function orderTransfers(ctx: ServiceContext, orderId: string) {
  return ctx.db.select().from(transfers).where(eq(transfers.orderId, orderId));
}

export async function eventsFor(ctx: ServiceContext, type: string, key: 'orderId' | 'depositId' | 'depositReference' | 'transferId', value: string) {
  return ctx.db
    .select()
    .from(events)
    .where(and(eq(events.type, type), sql`${events.data}->>${key} = ${value}`));
}
