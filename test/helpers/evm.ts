import { and, eq, sql } from 'drizzle-orm';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import type { ServiceContext } from '../../core/service/context';
import { events, orders, transfers } from '../../db/schema';
import type { TestChain } from './anvil';

/** One scan and one confirmation count of a chain (ethereum-local unless told), as the two repeatable jobs would do. */
export async function settle(ctx: ServiceContext, chainId: string = LOCAL_CHAIN_ID): Promise<void> {
  const scan = await runChainScan(ctx, chainId);
  if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
  const conf = await runChainConfirmations(ctx, chainId);
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

/**
 * Case 2 of issue 25 (attribution-cases.test.ts): the scanner's connection is held (no error) by
 * `proxy` while `units` of USDT land on `address` and the head moves on; `meanwhile` runs (an
 * order takes the address) before the hold is released and the held scan completes.
 */
export async function payWhileScannerHeld<T>(
  ctx: ServiceContext,
  chain: TestChain,
  proxy: { hold(): void; release(): void },
  address: string,
  units: bigint,
  meanwhile: (stray: { txHash: string; blockNumber: number }) => Promise<T>,
): Promise<{ stray: { txHash: string; blockNumber: number }; result: T }> {
  proxy.hold();
  const scanning = settle(ctx);
  await new Promise((r) => setTimeout(r, 2_100));
  const stray = await chain.pay(address, 'USDT', units);
  await chain.mine(1);
  const result = await meanwhile(stray);
  proxy.release();
  await scanning;
  return { stray, result };
}
