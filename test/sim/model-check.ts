import type postgres from 'postgres';
import type { ChainHistory } from './chain-history';
import { predict, type ModelEndpoint, type ModelOrder, type ModelTransfer } from './model';
import { CONFIRMED_STATUSES, solidificationBreach, transferIdentity, type Holding, type SolidifiedBlock } from './rules';
import type { ReceivedPost } from './webhook-receiver';

/** The project's driver settings may hand timestamps back as strings. */
const ms = (v: Date | string): number => new Date(v).getTime();
/** Events whose number is exact (one per transition); deposit.pending may be skipped by a catch-up. */
const EXACT_EVENTS = ['order.completed', 'order.expired', 'deposit.confirmed'];

export interface ModelCheckInput {
  sql: postgres.Sql;
  /** Every simulated chain's final canonical history. */
  histories: ChainHistory[];
  /** Per chain id: L (HEAD_LAG_SECONDS) of the attribution rule, in seconds (see simulation.ts). */
  lagSeconds: Map<string, number>;
  /** Per solidifying chain (Tron): each height's solidified block and when it was solidified. */
  solidified: Map<string, ReadonlyMap<number, SolidifiedBlock>>;
  endpoints: { id: string; organizationId: string; path: string; events: string[] }[];
  posts: ReceivedPost[];
  /** What GET /orders/:id answered at quiescence: status and amountReceived in base units. */
  apiOrders: Map<string, { status: string; amountReceived: bigint | null }>;
}

/**
 * Feeds the reference model the chain's final canonical history and the facts the service
 * recorded (orders' terms; every assignment of an address to an order or a deposit reference, with
 * its start and end; the evidence of when each transfer's block was mined), and lists every difference between its predictions and the service's answers and deliveries.
 */
export async function compareWithModel(input: ModelCheckInput): Promise<string[]> {
  const { sql } = input;
  const mismatches: string[] = [];
  const poolAddresses = new Set((await sql<{ address: string }[]>`select address from pool_addresses`).map((r) => r.address.toLowerCase()));

  // The evidence of when each recorded transfer was mined (the service's looks at the chain head).
  const evidence = new Map<string, NonNullable<ModelTransfer['evidence']>>();
  for (const r of await sql<{ tx_hash: string; index_in_tx: number; mined_after: Date | string | null; mined_by: Date | string | null; clock_mined_after: Date | string | null; clock_mined_by: Date | string | null }[]>`
    select tx_hash, index_in_tx, mined_after, mined_by, clock_mined_after, clock_mined_by from transfers where status <> 'dropped' and refund_id is null`) {
    evidence.set(transferIdentity({ txHash: r.tx_hash, indexInTx: r.index_in_tx }), {
      minedAfterMs: r.mined_after === null ? null : ms(r.mined_after),
      minedByMs: r.mined_by === null ? null : ms(r.mined_by),
      clockAfterMs: r.clock_mined_after === null ? null : ms(r.clock_mined_after),
      clockByMs: r.clock_mined_by === null ? null : ms(r.clock_mined_by),
    });
  }
  // The model predicts incoming payments; the merchant's refund payments (refund_id set) are
  // refund-oracle.ts's to judge.
  const transfers: ModelTransfer[] = [];
  for (const h of input.histories) {
    for (const t of await h.transfers()) {
      if (poolAddresses.has(t.to)) transfers.push({ ...t, canonical: true, evidence: evidence.get(t.identity) });
    }
  }
  const canonical = new Set(transfers.map((t) => t.identity));
  const rows = await sql<{ chain_id: string; tx_hash: string; index_in_tx: number; status: string; order_id: string | null; deposit_binding_id: string | null; to_address: string; currency: string; amount: string; block_number: string | number; block_hash: string; block_timestamp: Date | string; confirmed_at: Date | string | null }[]>`
    select chain_id, tx_hash, index_in_tx, status, order_id, deposit_binding_id, to_address, currency, amount::text as amount, block_number, block_hash, block_timestamp, confirmed_at
    from transfers where status <> 'dropped' and refund_id is null`;
  // A solidifying chain credits a transfer when its block is solidified, not before.
  for (const r of rows) {
    const solidified = input.solidified.get(r.chain_id);
    if (!solidified || !CONFIRMED_STATUSES.includes(r.status)) continue;
    const breach = solidificationBreach({ blockNumber: Number(r.block_number), blockHash: r.block_hash, confirmedAtMs: r.confirmed_at === null ? null : ms(r.confirmed_at) }, solidified);
    if (breach) mismatches.push(`transfer ${transferIdentity({ txHash: r.tx_hash, indexInTx: r.index_in_tx })} on ${r.chain_id} (${r.status}): ${breach}`);
  }
  for (const r of rows) {
    const identity = transferIdentity({ txHash: r.tx_hash, indexInTx: r.index_in_tx });
    if (canonical.has(identity) || !CONFIRMED_STATUSES.includes(r.status)) continue;
    // Confirmed, then orphaned by a reorg deeper than the confirmations: only the service saw it.
    transfers.push({
      identity,
      chainId: r.chain_id,
      to: r.to_address.toLowerCase(),
      currency: r.currency,
      amount: BigInt(r.amount),
      blockNumber: Number(r.block_number),
      blockTimeMs: ms(r.block_timestamp),
      canonical: false,
      evidence: evidence.get(identity),
    });
  }

  const orderRows = await sql<{ id: string; organization_id: string; address: string; chain_id: string; currency: string; amount: string; grace_ends_at: Date | string }[]>`
    select id, organization_id, address, chain_id, currency, amount::text as amount, grace_ends_at from orders`;
  const bindingRows = await sql<{ id: string; organization_id: string }[]>`select id, organization_id from deposit_bindings`;
  const orders: ModelOrder[] = orderRows.map((o) => ({
    id: o.id,
    organizationId: o.organization_id,
    address: o.address.toLowerCase(),
    chainId: o.chain_id,
    currency: o.currency,
    amount: BigInt(o.amount),
    graceEndsAtMs: ms(o.grace_ends_at),
  }));
  // Attribution is defined on the recorded assignments (design.md §4b "decided from stored facts
  // only"), not on the orders' completion or the bindings' unbind times.
  const assignmentRows = await sql<{ address: string; kind: 'order' | 'deposit'; order_id: string | null; deposit_binding_id: string | null; started_at: Date | string; ended_at: Date | string | null }[]>`
    select p.address, a.kind, a.order_id, a.deposit_binding_id, a.started_at, a.ended_at
    from address_assignments a join pool_addresses p on p.id = a.pool_address_id`;
  const holdings: Holding[] = assignmentRows.map((a) => ({
    holder: a.kind === 'order' ? { kind: 'order' as const, id: a.order_id! } : { kind: 'deposit' as const, id: a.deposit_binding_id! },
    address: a.address.toLowerCase(),
    startMs: ms(a.started_at),
    endMs: a.ended_at === null ? null : ms(a.ended_at),
  }));
  const endpointRows = new Map((await sql<{ id: string; enabled: boolean }[]>`select id, enabled from webhook_endpoints`).map((e) => [e.id, e.enabled]));
  const endpoints: ModelEndpoint[] = input.endpoints.map((e) => ({ ...e, events: e.events.filter((t) => EXACT_EVENTS.includes(t)), enabled: endpointRows.get(e.id) ?? false }));
  const prediction = predict({ transfers, holdings, lagSeconds: input.lagSeconds, orders, bindings: new Map(bindingRows.map((b) => [b.id, b.organization_id])), endpoints });

  // Attribution of every transfer.
  const recorded = new Map(rows.map((r) => [transferIdentity({ txHash: r.tx_hash, indexInTx: r.index_in_tx }), r]));
  for (const [identity, holder] of prediction.attribution) {
    const r = recorded.get(identity);
    if (!r) continue; // a missing record is an invariant violation already
    const got = r.order_id ? `order ${r.order_id}` : r.deposit_binding_id ? `deposit ${r.deposit_binding_id}` : 'nobody';
    const want = holder ? `${holder.kind} ${holder.id}` : 'nobody';
    if (got !== want) mismatches.push(`transfer ${identity} attributed to ${got}, model says ${want}`);
  }
  // Orders: status and amountReceived as the API answers them.
  for (const [id, want] of prediction.orders) {
    const got = input.apiOrders.get(id);
    if (!got) mismatches.push(`order ${id}: no API answer`);
    else if (got.status !== want.status || got.amountReceived !== want.amountReceived) {
      mismatches.push(`order ${id}: API ${got.status} ${got.amountReceived}, model ${want.status} ${want.amountReceived}`);
    }
  }
  // Deposits: one per transfer attributed to the reference.
  const depositRows = await sql<{ binding_id: string; tx_hash: string; index_in_tx: number }[]>`
    select d.binding_id, t.tx_hash, t.index_in_tx from deposits d join transfers t on t.id = d.transfer_id where d.status <> 'dropped'`;
  const gotDeposits = new Map<string, Set<string>>();
  for (const d of depositRows) gotDeposits.set(d.binding_id, (gotDeposits.get(d.binding_id) ?? new Set()).add(transferIdentity({ txHash: d.tx_hash, indexInTx: d.index_in_tx })));
  for (const b of bindingRows) {
    const want = new Set(prediction.deposits.get(b.id) ?? []);
    const got = gotDeposits.get(b.id) ?? new Set();
    const missing = [...want].filter((x) => !got.has(x));
    const extra = [...got].filter((x) => !want.has(x));
    if (missing.length || extra.length) mismatches.push(`deposit reference ${b.id}: missing deposits ${missing.join(',') || '-'}, unexpected ${extra.join(',') || '-'}`);
  }
  // Webhooks: what each endpoint received, as "type subject" keys, against the model.
  const eventKeys = new Map(
    (
      await sql<{ id: string; key: string }[]>`
        select e.id, e.type || ' ' || coalesce(e.data->>'orderId', t.tx_hash || ':' || t.index_in_tx) as key
        from events e left join deposits d on d.id = e.data->>'depositId' left join transfers t on t.id = d.transfer_id
        where e.type = any(${EXACT_EVENTS})`
    )// A deposit's subject is its transfer identity, compared lower-cased (rules.ts transferIdentity: hex
    // hashes of any case, base58 Solana signatures compared as the model writes them).
    .map((r) => [r.id, r.key.replace(/^(\S+) (\S+:\d+)$/, (_m, a: string, b: string) => `${a} ${b.toLowerCase()}`)]),
  );
  for (const ep of input.endpoints) {
    const want = prediction.events.get(ep.id) ?? new Set<string>();
    const got = new Set(input.posts.filter((p) => p.endpoint === ep.path && eventKeys.has(p.eventId)).map((p) => eventKeys.get(p.eventId)!));
    const enabled = endpointRows.get(ep.id) ?? false;
    const extra = [...got].filter((k) => !want.has(k));
    const missing = enabled ? [...want].filter((k) => !got.has(k)) : [];
    if (extra.length) mismatches.push(`endpoint ${ep.id} received events the model does not expect: ${extra.slice(0, 10).join(', ')}`);
    if (missing.length) mismatches.push(`endpoint ${ep.id} never received: ${missing.slice(0, 10).join(', ')}`);
  }
  return mismatches;
}
