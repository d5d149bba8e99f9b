import { formatAmount } from '../platform/amounts';
import { explorerTxLink, type Currency } from '../chains/registry';
import { walletUri } from '../chains/wallet-uri';
import type { ServiceContext } from '../service/context';
import { decideOrderStatus } from './order-state';
import type { PaymentPageFacts } from './payment-page';
import { buildOrderRedirect } from './redirect';
import { orderDecimals } from '../views/order';

/**
 * What the hosted payment page shows for an order (issue 18), from what core/orders/payment-page.ts
 * read. The state comes from the order's own status and its counted transfers through
 * decideOrderStatus (the one decision), never guessed: a transfer in another token or on another
 * chain is not counted, so the page never mentions it.
 */

export type PaymentPageState =
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
  currency: string;
  chainId: string;
  chainName: string;
  protocol: string;
  address: string;
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

/** The page's view of an order at `now` (pure but for the redirect's default URLs, read only for a final order). */
export async function presentPaymentPage(
  ctx: Pick<ServiceContext, 'db' | 'registry' | 'config'>,
  facts: PaymentPageFacts,
  now: Date,
  chainHealth: { degraded: boolean } = { degraded: false },
): Promise<PaymentPageView> {
  const { order, transfers } = facts;
  const chain = ctx.registry.get(order.chainId);
  const token = chain?.tokens[order.currency as Currency];
  const decimals = orderDecimals(ctx, order);
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
  return {
    state,
    underReview: order.status === 'expired' && (order.latePaidAt !== null || order.unattributedPayments > 0),
    organizationName: facts.organizationName,
    supportContact: facts.supportContact,
    orderReference: order.orderReference,
    currency: order.currency,
    chainId: order.chainId,
    chainName: chain?.name ?? order.chainId,
    protocol: order.protocol,
    address: order.address,
    amount: formatAmount(order.amount, decimals),
    amountReceived: formatAmount(received, decimals),
    remaining: formatAmount(remaining, decimals),
    excess: formatAmount(received > order.amount ? received - order.amount : 0n, decimals),
    walletUri:
      invitesPayment && chain && token
        ? walletUri(chain, token, order.address, { units: remaining, amount: formatAmount(remaining, decimals), id: order.id, label: facts.organizationName, message: `Order ${order.orderReference}` })
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
