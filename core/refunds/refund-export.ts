import { and, asc, eq, sql } from 'drizzle-orm';
import { refunds } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { AppError, validationError } from '../platform/errors';
import { formatAmount } from '../platform/amounts';
import { openCsvDownload, type CsvDownload } from '../exports/csv-download';
import { safeTransactionBatch } from './refund-payment';
import type { RefundRow } from '../views/refund';

/**
 * Many approved refunds paid at once from the merchant's own wallet (issue 42): an unsigned batch
 * file that common wallets import. Read-only: exporting approves, pays or changes nothing.
 */

export const REFUND_EXPORT_COLUMNS = ['refundId', 'address', 'amount', 'token', 'tokenAddress', 'chain', 'protocol', 'orderId', 'depositReference', 'transferId', 'kind', 'reason'] as const;

/** Transactions in one Safe batch at most: a Safe signs a batch as one multi-send transaction, whose gas grows with it. */
export const SAFE_BATCH_MAX = 200;

/** The approved refunds and payouts as CSV (address, amount, token, chain, …, kind, reason), oldest first, streamed in batches. */
export async function exportApprovedRefundsCsv(ctx: Pick<ServiceContext, 'db' | 'registry'>, organizationId: string, chainId?: string): Promise<CsvDownload> {
  const where = and(eq(refunds.organizationId, organizationId), eq(refunds.status, 'approved'), chainId ? eq(refunds.chainId, chainId) : undefined);
  return openCsvDownload<RefundRow>({
    fileName: 'refunds-approved.csv',
    header: REFUND_EXPORT_COLUMNS,
    readBatch: (after, limit) =>
      ctx.db
        .select()
        .from(refunds)
        .where(and(where, after ? sql`(${refunds.createdAt}, ${refunds.id}) > (${after.createdAt.toISOString()}::timestamptz, ${after.id})` : undefined))
        .orderBy(asc(refunds.createdAt), asc(refunds.id))
        .limit(limit),
    cells: (r) => [
      r.id,
      r.destination,
      formatAmount(r.amount, ctx.registry.tokenDecimals(r.chainId, r.currency)),
      r.currency,
      r.tokenAddress,
      r.chainId,
      r.protocol,
      r.orderId,
      r.depositReference,
      r.transferId,
      r.kind,
      r.reason,
    ],
  });
}

/**
 * The approved refunds of one EVM chain as a Safe Transaction Builder batch: one ERC-20 transfer
 * call per refund, oldest first, at most SAFE_BATCH_MAX. The chain is the one asked for, else the
 * only EVM chain with approved refunds (several: 400, name one).
 */
export async function safeBatchOfApprovedRefunds(ctx: Pick<ServiceContext, 'db' | 'registry' | 'clock'>, organizationId: string, chainId?: string) {
  let chosen = chainId;
  if (chosen === undefined) {
    const chains = await ctx.db
      .selectDistinct({ chainId: refunds.chainId })
      .from(refunds)
      .where(and(eq(refunds.organizationId, organizationId), eq(refunds.status, 'approved'), eq(refunds.protocol, 'evm')));
    if (chains.length > 1) {
      throw validationError(`Approved EVM refunds are on ${chains.map((c) => c.chainId).join(', ')}: a Safe batch is for one chain, give chainId`, [{ field: 'chainId', message: 'required: approved refunds are on several EVM chains' }]);
    }
    chosen = chains[0]?.chainId;
  }
  const chain = chosen === undefined ? undefined : ctx.registry.get(chosen);
  if (chosen !== undefined && (!chain || chain.protocol !== 'evm' || chain.evmChainId === undefined)) {
    throw new AppError('INVALID_CHAIN', `A Safe batch is for an EVM chain; ${chosen} is not one (use format=csv)`);
  }
  const rows = chosen
    ? await ctx.db
        .select()
        .from(refunds)
        .where(and(eq(refunds.organizationId, organizationId), eq(refunds.status, 'approved'), eq(refunds.chainId, chosen)))
        .orderBy(asc(refunds.createdAt), asc(refunds.id))
        .limit(SAFE_BATCH_MAX)
    : [];
  return safeTransactionBatch(
    chain?.evmChainId ?? 0,
    ctx.clock.now(),
    `Stablegate refunds and payouts${chosen ? ` on ${chosen}` : ''}`,
    rows.map((r) => ({ id: r.id, tokenAddress: r.tokenAddress, destination: r.destination!, amount: r.amount })),
  );
}
