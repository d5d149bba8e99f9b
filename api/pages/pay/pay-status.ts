import { createHash } from 'node:crypto';
import type { PaymentPageView } from '../../../core/orders/payment-page-view';

/** GET /pay/<token>/status: only what the page shows that can change, plus the server's clock. */
export interface PaymentStatusJson {
  state: PaymentPageView['state'];
  amount: string;
  amountReceived: string;
  remaining: string;
  excess: string;
  currency: string;
  chainName: string | null;
  /** A USD order: its price in dollars, and the routes the payer may pick (a choice or a switch re-renders the page). */
  priceUsd: string | null;
  routes: string[] | null;
  confirmations: PaymentPageView['confirmations'];
  finality: PaymentPageView['finality'];
  expiresAt: string;
  graceEndsAt: string;
  txHash: string | null;
  explorerUrl: string | null;
  redirectUrl: string | null;
  /** The order's chain is degraded: the page says detection is delayed (PaymentPageView.detectionDelayed). */
  detectionDelayed: boolean;
  /** Expired with a payment seen after it ended: "being reviewed" (PaymentPageView.underReview). */
  underReview: boolean;
  /** Digest of everything above: the page re-renders when it differs from the one it shows. */
  version: string;
  serverTime: string;
}

export function paymentStatusJson(view: PaymentPageView): PaymentStatusJson {
  const shown = shownOf(view);
  return { ...shown, version: versionOf(JSON.stringify(shown)), serverTime: view.serverTime };
}

/**
 * The same answer as JSON text, serialized once: the digest is taken over the shown fields' JSON
 * and `version` and `serverTime` are appended to it (the endpoint answers every poll of every open
 * page; serializing twice and building a second object were a visible share of its CPU).
 */
export function paymentStatusText(view: PaymentPageView): string {
  const shownJson = JSON.stringify(shownOf(view));
  return `${shownJson.slice(0, -1)},"version":${JSON.stringify(versionOf(shownJson))},"serverTime":${JSON.stringify(view.serverTime)}}`;
}

function versionOf(shownJson: string): string {
  return createHash('sha256').update(shownJson).digest('base64url').slice(0, 16);
}

function shownOf(view: PaymentPageView): Omit<PaymentStatusJson, 'version' | 'serverTime'> {
  return {
    state: view.state,
    amount: view.amount,
    amountReceived: view.amountReceived,
    remaining: view.remaining,
    excess: view.excess,
    currency: view.currency,
    chainName: view.chainName,
    priceUsd: view.priceUsd,
    routes: view.routeChoice?.map((r) => `${r.value}${r.current ? '*' : ''}`) ?? null,
    confirmations: view.confirmations,
    finality: view.finality,
    expiresAt: view.expiresAt,
    graceEndsAt: view.graceEndsAt,
    txHash: view.txHash,
    explorerUrl: view.explorerUrl,
    redirectUrl: view.redirectUrl,
    detectionDelayed: view.detectionDelayed,
    underReview: view.underReview,
  };
}

/** Whether the order can still change what the page shows (the page stops polling otherwise). */
export function isFinalState(state: PaymentPageView['state']): boolean {
  return state === 'paid' || state === 'expired';
}
