import { sql, type SQL } from 'drizzle-orm';
import { orders } from '../../db/schema';

/**
 * How much of an order has been paid, derived from amount and amountReceived (base units of the
 * same token, so compared exactly): merchants read it instead of comparing decimal strings. It
 * counts what amountReceived counts (pending and confirmed transfers), and says nothing of status:
 * a `partial` order may still complete if the rest arrives, an `overpaid` one completed.
 */
export const PAYMENT_STATES = ['unpaid', 'partial', 'paid', 'overpaid'] as const;
export type PaymentState = (typeof PAYMENT_STATES)[number];

export function paymentStateOf(amount: bigint, received: bigint): PaymentState {
  if (received <= 0n) return 'unpaid';
  if (received < amount) return 'partial';
  return received === amount ? 'paid' : 'overpaid';
}

/** The same rule as a condition on the orders table (the list filter). */
export function paymentStateCondition(state: PaymentState): SQL {
  switch (state) {
    case 'unpaid':
      return sql`${orders.amountReceived} <= 0`;
    case 'partial':
      return sql`(${orders.amountReceived} > 0 and ${orders.amountReceived} < ${orders.amount})`;
    case 'paid':
      return sql`${orders.amountReceived} = ${orders.amount}`;
    case 'overpaid':
      return sql`${orders.amountReceived} > ${orders.amount}`;
  }
}
