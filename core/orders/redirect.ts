import { formatAmount } from '../platform/amounts';
import type { ServiceContext } from '../service/context';
import { getConfigValue } from '../organizations/org-config';
import { orderDecimals, type OrderRow, type OrderView } from '../views/order';

export interface RedirectDefaults {
  /** default_order_success_url */
  successUrl: string | null;
  /** default_order_cancel_url */
  cancelUrl: string | null;
}

/** What a redirect carries of an order, as on the wire (the amount a decimal string). */
export type RedirectFields = Pick<OrderView, 'orderReference' | 'status' | 'amount' | 'currency' | 'chainId' | 'txHash' | 'successUrl' | 'cancelUrl'>;

/** What the redirect builder reads of a stored order (the hosted page reads no more than this of it). */
export type RedirectOrder = Pick<
  OrderRow,
  'organizationId' | 'orderReference' | 'status' | 'amount' | 'currency' | 'chainId' | 'txHash' | 'successUrl' | 'cancelUrl'
>;

/**
 * Pure: where the payer goes after a finished order, or null. Completed: the order's successUrl
 * (else the organization default) with orderReference, status, amount, currency, chainId and txHash
 * appended; expired: the cancelUrl (else the default) with the same minus txHash; pending, or no URL
 * at all: null. Existing query parameters of the URL are kept; ours replace same-named ones.
 */
export function orderRedirectUrl(order: RedirectFields, defaults: RedirectDefaults): string | null {
  if (order.status === 'pending') return null;
  const completed = order.status === 'completed';
  const base = completed ? order.successUrl ?? defaults.successUrl : order.cancelUrl ?? defaults.cancelUrl;
  if (!base) return null;
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    return null;
  }
  const params: [string, string][] = [
    ['orderReference', order.orderReference],
    ['status', order.status],
    ['amount', order.amount],
    ['currency', order.currency],
    // A USD order that never chose a route has no chain.
    ...(order.chainId === null ? [] : [['chainId', order.chainId] as [string, string]]),
  ];
  if (completed && order.txHash) params.push(['txHash', order.txHash]);
  for (const [k, v] of params) url.searchParams.set(k, v);
  return url.toString();
}

/** The payer's redirect for an order, reading the organization's default URLs only when needed. */
export async function buildOrderRedirect(ctx: Pick<ServiceContext, 'db' | 'registry'>, order: RedirectOrder): Promise<string | null> {
  if (order.status === 'pending') return null;
  // The amount formatted as presentOrder does (the wire's decimal string).
  const fields: RedirectFields = { ...order, amount: formatAmount(order.amount, orderDecimals(ctx, order)), txHash: order.txHash ?? undefined };
  const own = order.status === 'completed' ? order.successUrl : order.cancelUrl;
  const defaults: RedirectDefaults = { successUrl: null, cancelUrl: null };
  if (!own) {
    if (order.status === 'completed') defaults.successUrl = await getConfigValue<string | null>(ctx.db, order.organizationId, 'default_order_success_url');
    else defaults.cancelUrl = await getConfigValue<string | null>(ctx.db, order.organizationId, 'default_order_cancel_url');
  }
  return orderRedirectUrl(fields, defaults);
}
