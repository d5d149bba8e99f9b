import { formatAmount } from '../platform/amounts';
import { explorerTxLink, USD_DECIMALS, type Currency } from '../chains/registry';
import { walletUri } from '../chains/wallet-uri';
import type { ServiceContext } from '../service/context';
import { decideOrderStatus, inUsdUnits } from './order-state';
import type { PaymentPageFacts } from './payment-page';
import { buildOrderRedirect } from './redirect';
import { orderDecimals, usdInTokenUnits } from '../views/order';

/**
 * What the hosted payment page shows for an order (issue 18), from what core/orders/payment-page.ts
 * read. The state comes from the order's own status and its counted transfers through
 * decideOrderStatus (the one decision), never guessed: a transfer in another token or on another
 * chain is not counted, so the page never mentions it.
 */

export type PaymentPageState =
  /** A USD order with no route chosen yet, window open: the payer picks token and network. */
  | 'choosing'
  /** Window open, nothing counted yet. */
  | 'awaiting'
  /** Window open, counted payments below the amount: send the remainder. */
  | 'underpaid'
  /** Counted payments reach the amount, not all confirmed yet (any time before the order is final). */
  | 'confirming'
  /** Window over, grace running, the order not final: do not pay now, a sent payment still counts. */
  | 'grace'
  | 'paid'
  | 'expired';

export interface PaymentPageView {
  state: PaymentPageState;
  /**
   * Expired, but a payment reached its address after it ended (paidLate) or was left unattributed
   * naming it: the merchant reviews it (issue 40), so the page says "payment seen, being reviewed"
   * instead of "expired".
   */
  underReview: boolean;
  organizationName: string;
  /** Where a payer asks for help: an e-mail address or an http(s) URL, null when none is set. */
  supportContact: string | null;
  /** The merchant's reference of the order, so a payer can tell which order the page is for. */
  orderReference: string;
  /** The token to pay in (a USD order: its current route's; USD until one is chosen). Amounts below are in it. */
  currency: string;
  chainId: string | null;
  chainName: string | null;
  protocol: string | null;
  address: string | null;
  /** A USD order: its price in dollars (the amounts above are in its route's token); null for a token order. */
  priceUsd: string | null;
  /**
   * A USD order the payer may still choose or switch the route of (pending, window open, nothing
   * received yet): every route it offers, the current one marked; null otherwise.
   */
  routeChoice: { value: string; currency: string; chainName: string; amount: string; current: boolean }[] | null;
  /** A USD order: payments counted by a route other than the current one (the payer switched after paying by it). */
  otherRoutePayments: { currency: string; chainName: string; address: string; amount: string }[];
  amount: string;
  amountReceived: string;
  /** amount − received when positive, else "0". */
  remaining: string;
  /** received − amount when positive, else "0" (overpayment). */
  excess: string;
  /** Wallet link (and QR content) for what is still to pay; null when the page does not invite payment. */
  walletUri: string | null;
  /** Confirming: the least-confirmed counted payment's confirmations of the required ones. */
  confirmations: { current: number; required: number } | null;
  /** 'solidified' on chains where a payment waits for solidification rather than counting blocks. */
  finality: 'confirmations' | 'solidified';
  expiresAt: string;
  graceEndsAt: string;
  /** The server's clock when this was read (the page's countdown syncs to it). */
  serverTime: string;
  txHash: string | null;
  explorerUrl: string | null;
  /** Paid: the successUrl with the order's query; expired: the cancelUrl (core/orders/redirect.ts). */
  redirectUrl: string | null;
  /**
   * The order's chain is degraded (core/detection/chain-health.ts: not scanned lately, providers
   * failing or never answered) while the order can still change: the page promises no recognition
   * then, it says detection is delayed.
   */
  detectionDelayed: boolean;
}

/** USD units in a route token's units, rounded as asked (what is due up, what arrived down). */
function inRouteToken(usd: bigint, decimals: number, round: 'up' | 'down'): bigint {
  return round === 'up' ? usdInTokenUnits(usd, decimals) : usd / 10n ** BigInt(USD_DECIMALS - decimals);
}

/** The page's view of an order at `now` (pure but for the redirect's default URLs, read only for a final order). */
export async function presentPaymentPage(
  ctx: Pick<ServiceContext, 'db' | 'registry' | 'config'>,
  facts: PaymentPageFacts,
  now: Date,
  chainHealth: { degraded: boolean } = { degraded: false },
): Promise<PaymentPageView> {
  const { order } = facts;
  const chain = order.chainId === null ? undefined : ctx.registry.get(order.chainId);
  const routeToken = order.routes ? order.routeCurrency : order.currency;
  const token = routeToken ? chain?.tokens[routeToken as Currency] : undefined;
  // A USD order: the decision in USD units, the page in its route's token (none chosen: dollars).
  const transfers = order.routes ? inUsdUnits(ctx, facts.transfers) : facts.transfers;
  const decimals = order.routes && token ? token.decimals : orderDecimals(ctx, order);
  const shown = (units: bigint, round: 'up' | 'down') => formatAmount(order.routes && token ? inRouteToken(units, token.decimals, round) : units, decimals);
  // No checkpoint: the page never declares expiry itself; only the order's status does.
  const decision = decideOrderStatus(order, transfers, null, now);
  const received = decision.amountReceived;
  const remaining = order.amount > received ? order.amount - received : 0n;
  const inWindow = now.getTime() < order.expiresAt.getTime();

  let state: PaymentPageState;
  if (order.status === 'completed') state = 'paid';
  else if (order.status === 'expired') state = 'expired';
  else if (received >= order.amount) state = 'confirming';
  else if (!inWindow) state = 'grace';
  else if (order.routes && order.chainId === null) state = 'choosing';
  else state = received > 0n ? 'underpaid' : 'awaiting';

  let confirmations: PaymentPageView['confirmations'] = null;
  if (state === 'confirming') {
    const pending = transfers.filter((t) => t.status === 'pending');
    const current = pending.length > 0 ? Math.min(...pending.map((t) => t.confirmations)) : order.requiredConfirmations;
    // A recorded transfer is in a block, so it has at least one confirmation (head − block + 1)
    // even before the confirmations job has counted it.
    confirmations = { current: Math.max(1, Math.min(current, order.requiredConfirmations)), required: order.requiredConfirmations };
  }

  const invitesPayment = state === 'awaiting' || state === 'underpaid';
  const txHash = state === 'paid' ? order.txHash : null;
  const remainingShown = shown(remaining, 'up');
  const chainNameOf = (chainId: string) => ctx.registry.get(chainId)?.name ?? chainId;
  return {
    state,
    underReview: order.status === 'expired' && (order.latePaidAt !== null || order.unattributedPayments > 0),
    organizationName: facts.organizationName,
    supportContact: facts.supportContact,
    orderReference: order.orderReference,
    currency: routeToken ?? order.currency,
    chainId: order.chainId,
    chainName: chain?.name ?? order.chainId,
    protocol: order.protocol,
    address: order.address,
    priceUsd: order.routes ? formatAmount(order.amount, USD_DECIMALS) : null,
    routeChoice:
      order.routes && (state === 'choosing' || (state === 'awaiting' && order.status === 'pending'))
        ? order.routes.map((r) => ({
            value: `${r.currency}@${r.chainId}`,
            currency: r.currency,
            chainName: chainNameOf(r.chainId),
            amount: formatAmount(usdInTokenUnits(order.amount, ctx.registry.tokenDecimals(r.chainId, r.currency)), ctx.registry.tokenDecimals(r.chainId, r.currency)),
            current: r.chainId === order.chainId && r.currency === order.routeCurrency,
          }))
        : null,
    otherRoutePayments: (order.chosenRoutes ?? [])
      .filter((r) => r.received !== '0' && !(r.chainId === order.chainId && r.currency === order.routeCurrency))
      .map((r) => ({ currency: r.currency, chainName: chainNameOf(r.chainId), address: r.address, amount: formatAmount(BigInt(r.received), ctx.registry.tokenDecimals(r.chainId, r.currency)) })),
    amount: shown(order.amount, 'up'),
    amountReceived: shown(received, 'down'),
    remaining: remainingShown,
    excess: shown(received > order.amount ? received - order.amount : 0n, 'down'),
    walletUri:
      invitesPayment && chain && token && order.address
        ? walletUri(chain, token, order.address, {
            units: order.routes ? usdInTokenUnits(remaining, token.decimals) : remaining,
            amount: remainingShown,
            id: order.id,
            label: facts.organizationName,
            message: `Order ${order.orderReference}`,
          })
        : null,
    confirmations,
    finality: chain?.finality.kind === 'solidified' ? 'solidified' : 'confirmations',
    expiresAt: order.expiresAt.toISOString(),
    graceEndsAt: order.graceEndsAt.toISOString(),
    serverTime: now.toISOString(),
    txHash,
    explorerUrl: txHash && chain ? explorerTxLink(chain, txHash) : null,
    redirectUrl: state === 'paid' || state === 'expired' ? await buildOrderRedirect(ctx, order) : null,
    detectionDelayed: chainHealth.degraded && state !== 'paid' && state !== 'expired',
  };
}
