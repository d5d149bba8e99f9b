import { EVENT_TYPES, type EventType } from '../core/events/events';
import { transferUnattributedEventSchema } from '../core/views/transfer';
import { refundSchema } from '../core/views/refund';

/**
 * The events a merchant's endpoint receives, as the OpenAPI 3.1 `webhooks` section: one entry per
 * event type with its envelope (core/webhooks/signing.ts builds the bytes). Alert events carry
 * `timestamp` where the others carry `createdAt`.
 */
const DATA: Record<EventType, { summary: string; data: Record<string, unknown> }> = {
  'order.completed': {
    summary:
      "An order was completed: paid in full and confirmed, or short by no more than the organization's underpayment tolerance (exceptions: underpaid), or by the merchant's decision (resolution manual: a payment attributed by hand, or settled by hand)",
    data: {
      type: 'object',
      description:
        'The order as GET /orders/:orderId shows it (without unattributedPayments), with txHash when a payment completed it; paymentState paid, overpaid (amountExcess says by how much) or, when underpaid or settled by hand, partial or unpaid; resolution automatic or manual with resolvedBy, resolvedAt and resolutionReason. A USD order (currency USD, amounts in dollars): route is the route its completing payment came by, with the token amount (route.amount), and chosenRoutes every route it was given with what each received',
    },
  },
  'order.expired': { summary: 'An order expired unpaid or underpaid', data: { type: 'object', description: 'The order as GET /orders/:orderId shows it; paymentState unpaid or partial (amountDue says what was missing)' } },
  'deposit.pending': { summary: 'A payment to a deposit reference was seen, awaiting confirmations', data: { type: 'object', description: 'The deposit: depositReference, amount, currency, chainId, txHash, metadata' } },
  'deposit.confirmed': { summary: 'A deposit reached its required confirmations', data: { type: 'object', description: 'The deposit: depositReference, amount, currency, chainId, txHash, metadata' } },
  'transfer.unattributed': {
    summary:
      'A payment into one of your pool addresses was recorded unattributed (no_holder: nobody held the address when it was mined; undecidable: the evidence cannot tell whether it was before or after the address changed hands; paid_late: after its order\'s grace, within the late-payment window). Nothing is credited; candidates name who it may have been meant for, for you to review (GET /transfers?attributed=false) and attribute (POST /transfers/{id}/attribute)',
    data: transferUnattributedEventSchema as unknown as Record<string, unknown>,
  },
  'refund.claimed': {
    summary: 'The payer gave a destination on a refund\'s claim page: approve it (POST /refunds/{id}/approve) and pay it from your own wallet',
    data: refundSchema as unknown as Record<string, unknown>,
  },
  'refund.expired': {
    summary:
      'A refund was not claimed before its expiresAt (requested, awaiting_claim or claimed), or was approved and nothing was paid toward it by then (once its chain was scanned past expiresAt): its amount is free to refund again',
    data: refundSchema as unknown as Record<string, unknown>,
  },
  'refund.completed': {
    summary:
      "The merchant's payment of an approved refund was seen and confirmed: a transfer of its token to its claimed destination, mined after its approval, with the chain's confirmations (txHash: the payment that completed it)",
    data: refundSchema as unknown as Record<string, unknown>,
  },
  'payout.claimed': {
    summary: 'The recipient gave a destination on a payout\'s claim link (POST /payouts without a destination): approve it (POST /refunds/{id}/approve) and pay it from your own wallet. A payout created with its destination sends none',
    data: refundSchema as unknown as Record<string, unknown>,
  },
  'payout.expired': {
    summary: 'A payout was not claimed before its expiresAt, or was approved and nothing was paid toward it by then (once its chain was scanned past expiresAt)',
    data: refundSchema as unknown as Record<string, unknown>,
  },
  'payout.completed': {
    summary: 'The same as refund.completed for a payout: its payment to the destination was seen and confirmed',
    data: refundSchema as unknown as Record<string, unknown>,
  },
  'alert.address_pool_low': {
    summary: "Available pool addresses of a protocol fell below the organization's threshold",
    data: {
      type: 'object',
      properties: {
        protocol: { type: 'string', enum: ['evm', 'tron', 'solana'] },
        available: { type: 'integer' },
        total: { type: 'integer' },
        percentage: { type: 'number' },
        threshold: { type: 'number' },
        thresholdType: { type: 'string', enum: ['count', 'percentage'] },
      },
    },
  },
  'alert.webhook_endpoint_disabled': {
    summary: "Another of the organization's endpoints was disabled (410 Gone, or failing for WEBHOOK_DISABLE_AFTER_HOURS); sent to the organization's other subscribed endpoints, never to the disabled one",
    data: {
      type: 'object',
      required: ['endpointId', 'url', 'reason', 'disabledAt', 'lastFailure'],
      properties: {
        endpointId: { type: 'string', example: 'whe_01jd...' },
        url: { type: 'string' },
        reason: { type: 'string', example: 'Receiver answered 410 Gone' },
        disabledAt: { type: 'string', format: 'date-time' },
        lastFailure: {
          type: 'object',
          description: 'The attempt that disabled it',
          properties: {
            eventId: { type: 'string' },
            deliveryId: { type: 'string' },
            attemptNumber: { type: 'integer' },
            attemptedAt: { type: 'string', format: 'date-time' },
            statusCode: { type: ['integer', 'null'] },
            error: { type: ['string', 'null'] },
          },
        },
      },
    },
  },
  'alert.reorg_beyond_confirmations': {
    summary: 'A confirmed transfer was reorganised out deeper than its required confirmations; its credit stays (transfer status reorged, confirmed again if the transaction is mined again)',
    data: {
      type: 'object',
      required: ['chainId', 'transferId', 'txHash', 'blockNumber', 'blockHash', 'depth'],
      properties: {
        chainId: { type: 'string' },
        transferId: { type: 'string', example: 'trf_01jd...' },
        txHash: { type: 'string' },
        blockNumber: { type: 'integer', description: 'The orphaned block' },
        blockHash: { type: 'string', description: 'The orphaned block' },
        depth: {
          type: 'integer',
          description:
            "The transfer's depth below the scan checkpoint when its block left the chain: checkpoint − block + 1, i.e. the confirmations it had then (not the reorganisation's length: a transfer 3 blocks deep, orphaned by a 4-block reorganisation, gives 3)",
        },
        amount: { type: 'string', description: 'Decimal string in token units, like every amount on the wire', example: '10.5' },
        currency: { type: 'string' },
        orderId: { type: ['string', 'null'] },
        depositId: { type: ['string', 'null'] },
        depositReference: { type: ['string', 'null'] },
      },
    },
  },
  'alert.chain_stalled': {
    summary:
      'A chain stopped moving for CHAIN_STALL_ALERT_SECONDS (checkpoint behind a moving head, head stopped, every provider failing, or no scan completed: workers down or job schedules lost); or, with reason looks_stopped, no process could look at its head for HEAD_LOOK_ALERT_AFTER_SECONDS while its addresses were handed out (fast payers of those orders may be left undecidable). Once per episode; a looks_stopped episode is its own',
    data: {
      type: 'object',
      required: ['chainId', 'reason', 'since', 'head', 'checkpoint'],
      properties: {
        chainId: { type: 'string' },
        reason: { type: 'string', enum: ['providers_failing', 'not_scanned', 'head_stalled', 'checkpoint_stalled', 'looks_stopped'] },
        since: { type: 'string', format: 'date-time', description: 'When the episode began (looks_stopped: when the last look at the head before the gap was taken)' },
        head: { type: ['integer', 'null'], description: 'Highest head block the scanner has seen (looks_stopped: the head that last look saw)' },
        checkpoint: { type: ['integer', 'null'], description: 'Last scanned block (null only with looks_stopped, for a chain never scanned)' },
      },
    },
  },
  'webhook.test': { summary: 'POST /webhooks/endpoints/:id/test: sent to that endpoint only', data: { type: 'object', properties: { endpointId: { type: 'string' }, message: { type: 'string' } } } },
};

function envelope(type: EventType, data: Record<string, unknown>) {
  const time = type.startsWith('alert.') ? 'timestamp' : 'createdAt';
  return {
    type: 'object',
    required: ['id', 'type', time, 'data'],
    properties: { id: { type: 'string', example: 'evt_01jd...' }, type: { type: 'string', const: type }, [time]: { type: 'string', format: 'date-time' }, data },
  };
}

export function webhookEventsOpenApi(): Record<string, unknown> {
  const types: EventType[] = [...EVENT_TYPES, 'webhook.test'];
  return Object.fromEntries(
    types.map((type) => [
      type,
      {
        post: {
          summary: DATA[type].summary,
          description:
            'Signed with X-Service-Signature (hex HMAC-SHA-256 of the body with the endpoint secret); X-Service-Event-Id is the id to deduplicate on; X-Service-Timestamp the attempt time. Answer 2xx.',
          tags: ['Webhooks'],
          requestBody: { required: true, content: { 'application/json': { schema: envelope(type, DATA[type].data) } } },
          responses: { '2XX': { description: 'Received' }, '410': { description: 'Gone: disables the endpoint' } },
        },
      },
    ]),
  );
}
