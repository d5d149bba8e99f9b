import type { ServiceContext } from '../context';
import { getConfigValue } from '../org-config';
import { presentOrder, type OrderRow, type OrderView } from './order-view';

export interface RedirectDefaults {
  /** default_order_success_url */
  successUrl: string | null;
  /** default_order_cancel_url */
  cancelUrl: string | null;
}

/**
 * Pure: where the payer goes after a finished order, or null. Completed: the order's successUrl
 * (else the organization default) with orderReference, status, amount, currency, chainId and txHash
 * appended; expired: the cancelUrl (else the default) with the same minus txHash; pending, or no URL
 * at all: null. Existing query parameters of the URL are kept; ours replace same-named ones.
 */
export function orderRedirectUrl(order: OrderView, defaults: RedirectDefaults): string | null {
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
    ['chainId', order.chainId],
  ];
  if (completed && order.txHash) params.push(['txHash', order.txHash]);
  for (const [k, v] of params) url.searchParams.set(k, v);
  return url.toString();
}

/** The payer's redirect for an order, reading the organization's default URLs only when needed. */
export async function buildOrderRedirect(ctx: Pick<ServiceContext, 'db' | 'registry' | 'config'>, order: OrderRow): Promise<string | null> {
  if (order.status === 'pending') return null;
  const view = presentOrder(ctx, order);
  const own = order.status === 'completed' ? order.successUrl : order.cancelUrl;
  const defaults: RedirectDefaults = { successUrl: null, cancelUrl: null };
  if (!own) {
    if (order.status === 'completed') defaults.successUrl = await getConfigValue<string | null>(ctx.db, order.organizationId, 'default_order_success_url');
    else defaults.cancelUrl = await getConfigValue<string | null>(ctx.db, order.organizationId, 'default_order_cancel_url');
  }
  return orderRedirectUrl(view, defaults);
}
