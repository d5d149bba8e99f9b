import { sql, type SQL } from 'drizzle-orm';
import { orders } from '../../db/schema';
import type { PaymentState } from '../views/order';

/** paymentStateOf's rule (core/views/order.ts) as a condition on the orders table (the list filter). */
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
