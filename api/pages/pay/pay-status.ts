import { createHash } from 'node:crypto';
import type { PaymentPageView } from '../../../core/orders/payment-page';

/** GET /pay/<token>/status: only what the page shows that can change, plus the server's clock. */
export interface PaymentStatusJson {
  state: PaymentPageView['state'];
  amount: string;
  amountReceived: string;
  remaining: string;
  excess: string;
  currency: string;
  chainName: string;
  confirmations: PaymentPageView['confirmations'];
  finality: PaymentPageView['finality'];
  expiresAt: string;
  graceEndsAt: string;
  txHash: string | null;
  explorerUrl: string | null;
  redirectUrl: string | null;
  /** Digest of everything above: the page re-renders when it differs from the one it shows. */
  version: string;
  serverTime: string;
}

export function paymentStatusJson(view: PaymentPageView): PaymentStatusJson {
  const shown = {
    state: view.state,
    amount: view.amount,
    amountReceived: view.amountReceived,
    remaining: view.remaining,
    excess: view.excess,
    currency: view.currency,
    chainName: view.chainName,
    confirmations: view.confirmations,
    finality: view.finality,
    expiresAt: view.expiresAt,
    graceEndsAt: view.graceEndsAt,
    txHash: view.txHash,
    explorerUrl: view.explorerUrl,
    redirectUrl: view.redirectUrl,
  };
  const version = createHash('sha256').update(JSON.stringify(shown)).digest('base64url').slice(0, 16);
  return { ...shown, version, serverTime: view.serverTime };
}

/** Whether the order can still change what the page shows (the page stops polling otherwise). */
export function isFinalState(state: PaymentPageView['state']): boolean {
  return state === 'paid' || state === 'expired';
}
