import { expireDueRefunds } from '../../core/refunds/refunds';
import type { Processor } from './types';

/** Expires refunds not claimed by their expiresAt (refund.expired). */
export const refundExpiryProcessor: Processor<'refund-expiry'> = async (ctx) => expireDueRefunds(ctx);
