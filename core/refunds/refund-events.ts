import type { RefundKind } from '../../db/schema';
import type { EventType } from '../events/events';

/**
 * The event of a refund's or a payout's step, named by its kind (issue 42): a payout is not a
 * refund, and a webhook consumer paying affiliates should not have to look inside refund.* events
 * to tell them apart. Both carry the one refund presenter's object (its `kind` says which).
 */
export function refundEventType(kind: RefundKind, step: 'claimed' | 'expired' | 'completed'): EventType {
  return `${kind}.${step}`;
}
