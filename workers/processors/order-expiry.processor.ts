import { expireDueOrders } from '../../core/orders/order-expiry';
import type { Processor } from './types';

/** Expires pending orders whose grace period is over and whose chain was scanned past it. */
export const orderExpiryProcessor: Processor<'order-expiry'> = async (ctx) => expireDueOrders(ctx);
