import { sql } from 'drizzle-orm';
import { columnsReader, prepareStatement } from '../../db/client';
import { orders } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import type { TransferFacts } from './order-state';
import { PAY_TOKEN_PATTERN } from './pay-token';

/**
 * What the hosted payment page reads of an order, by its URL token (issue 18): the order, its
 * organization's name and its counted transfers. core/orders/payment-page-view.ts presents them.
 */

type PageRow = Record<string, unknown> & { organization_name: string; support_contact: string | null; counted_transfers: RawTransfer[] };
type RawTransfer = {
  id: string; chainId: string; currency: string; amount: string; status: TransferFacts['status']; confirmations: number;
  txHash: string; logIndex: number; blockNumber: number; blockTimestamp: string;
};

/**
 * What the page reads of an order: what it shows, decides the state with and redirects with
 * (core/orders/redirect.ts), and its id (the status endpoint's memory forgets an order by it,
 * core/orders/payment-page-cache.ts). Not the rest (metadata above all: a JSON document to parse and
 * collect on every poll of every open page).
 */
const PAGE_ORDER = columnsReader(orders, [
  'id', 'organizationId', 'orderReference', 'status', 'amount', 'currency', 'chainId', 'protocol', 'address',
  'successUrl', 'cancelUrl', 'requiredConfirmations', 'createdAt', 'expiresAt', 'graceEndsAt', 'txHash',
  // Issue 40: an expired order with a payment seen after it ended says "being reviewed", not "expired".
  'latePaidAt', 'unattributedPayments',
  // Issue 41: a USD order's routes (offered and given) and its current route's token.
  'routes', 'chosenRoutes', 'routeCurrency',
]);
export type PageOrder = ReturnType<typeof PAGE_ORDER.read>;

/**
 * The order of a token, its organization's name and support contact and its counted non-dropped transfers, in one
 * round trip (the status endpoint runs it on every poll). The token's unique index finds the order.
 * Hand-written for that: one prepared statement with the transfers aggregated as JSON; its text is
 * snapshotted (test/foundation/hand-written-sql.test.ts).
 */
const pageStatement = prepareStatement<{ token: string }>('orders.payment_page', sql`
  select ${sql.raw(PAGE_ORDER.names.map((name) => `o.${name}`).join(', '))}, org.name as organization_name, org.support_contact,
    coalesce((
      select json_agg(json_build_object('id', t.id, 'chainId', t.chain_id, 'currency', t.currency, 'amount', t.amount::text,
        'status', t.status, 'confirmations', t.confirmations, 'txHash', t.tx_hash, 'logIndex', t.log_index,
        'blockNumber', t.block_number, 'blockTimestamp', t.block_timestamp))
      from transfers t where t.order_id = o.id and t.counted and t.status <> 'dropped'
    ), '[]'::json) as counted_transfers
  from orders o join organizations org on org.id = o.organization_id
  where o.pay_token = ${sql.placeholder('token')}`);

export interface PaymentPageFacts {
  order: PageOrder;
  organizationName: string;
  /**
   * The organization's support contact. The status endpoint's memory of open orders
   * (payment-page-cache.ts) keeps these facts without hearing of a rename; its JSON shows neither
   * the name nor the contact, and the page itself (GET /pay/<token>) always reads them afresh.
   */
  supportContact: string | null;
  transfers: TransferFacts[];
}

/** Null for an unknown (or malformed) token. */
export async function findPaymentPage(ctx: Pick<ServiceContext, 'db'>, token: string): Promise<PaymentPageFacts | null> {
  if (!PAY_TOKEN_PATTERN.test(token)) return null;
  const [row] = await pageStatement.run<PageRow>(ctx.db, { token });
  if (!row) return null;
  return {
    order: PAGE_ORDER.read(row),
    organizationName: row.organization_name,
    supportContact: row.support_contact,
    // The statement reads the counted ones only.
    transfers: row.counted_transfers.map((t) => ({ ...t, amount: BigInt(t.amount), blockTimestamp: new Date(t.blockTimestamp), counted: true })),
  };
}
