import { parseUnits } from 'ethers';
import type postgres from 'postgres';
import type { ChainHistory } from './chain-history';
import { CANONICAL_FINAL_STATUS, CONFIRMED_STATUSES, statusAllowedWhenOrphaned, transferIdentity } from './rules';
import type { ReceivedPost } from './webhook-receiver';

const DECIMALS: Record<string, number> = { USDT: 6, USDC: 6, DAI: 18 };

export interface InvariantInput {
  sql: postgres.Sql;
  /** Every simulated chain's final canonical history. */
  histories: ChainHistory[];
  endpoints: { id: string; organizationId: string; path: string; events: string[] }[];
  posts: ReceivedPost[];
  /** Wall times (ms) of worker kills and Redis restarts: a repeated 2xx delivery near one is at-least-once, not a bug. */
  faultTimes: number[];
  orgKeys: Record<string, string>;
  api: (key: string, method: string, path: string) => Promise<{ status: number; body: Record<string, unknown> }>;
}

export interface InvariantResult {
  violations: string[];
  mismatches: string[];
  webhooks: { expected: number; delivered: number; duplicated: number; posts: number };
  /** What GET /orders/:id answered for every order (for the reference model's comparison). */
  apiOrders: Map<string, { status: string; amountReceived: bigint | null }>;
}

interface TransferRow {
  id: string;
  tx_hash: string;
  index_in_tx: number;
  status: string;
  amount: string;
  to_address: string;
  organization_id: string | null;
  order_id: string | null;
  deposit_binding_id: string | null;
  counted: boolean;
  credited: boolean;
}

/** The invariants of issue 16, checked at quiescence against the chain's final canonical history. */
export async function checkInvariants(input: InvariantInput): Promise<InvariantResult> {
  const violations: string[] = [];
  const mismatches: string[] = [];
  const { sql } = input;
  const limit = (list: string[], label: string, items: string[]) => {
    for (const i of items.slice(0, 20)) list.push(`${label}: ${i}`);
    if (items.length > 20) list.push(`${label}: … and ${items.length - 20} more`);
  };

  // --- every canonical transfer into a pool address is recorded exactly once ----------------------
  const pool = new Map((await sql<{ address: string; organization_id: string }[]>`select address, organization_id from pool_addresses`).map((r) => [r.address.toLowerCase(), r.organization_id]));
  const canonical = new Map<string, { to: string; amount: bigint; org: string }>();
  for (const h of input.histories) {
    for (const t of await h.transfers()) {
      const org = pool.get(t.to);
      if (org) canonical.set(t.identity, { to: t.to, amount: t.amount, org });
    }
  }
  // Incoming payments only: the merchant's refund payments (refund_id set, into destinations that are
  // no pool address) are judged by refund-oracle.ts, which also checks none is attributed to anything.
  const rows = await sql<TransferRow[]>`
    select id, tx_hash, index_in_tx, status, amount::text as amount, to_address, organization_id, order_id, deposit_binding_id, counted, credited from transfers where refund_id is null`;
  const live = new Map<string, TransferRow[]>();
  for (const r of rows) {
    if (r.status === 'dropped') continue;
    const k = transferIdentity({ txHash: r.tx_hash, indexInTx: r.index_in_tx });
    live.set(k, [...(live.get(k) ?? []), r]);
  }
  const missed: string[] = [];
  const twice: string[] = [];
  const wrong: string[] = [];
  for (const [k, log] of canonical) {
    const recorded = live.get(k) ?? [];
    if (recorded.length === 0) missed.push(k);
    else if (recorded.length > 1) twice.push(`${k} as ${recorded.map((r) => r.id).join(', ')}`);
    for (const r of recorded) {
      if (r.status !== CANONICAL_FINAL_STATUS) wrong.push(`${r.id} (${k}) is ${r.status} at quiescence`);
      if (BigInt(r.amount) !== log.amount) wrong.push(`${r.id} amount ${r.amount}, chain says ${log.amount}`);
      if (r.to_address.toLowerCase() !== log.to) wrong.push(`${r.id} to ${r.to_address}, chain says ${log.to}`);
      if (r.organization_id !== log.org) wrong.push(`${r.id} organization ${r.organization_id}, the address belongs to ${log.org}`);
    }
  }
  limit(violations, 'transfer on chain not recorded', missed);
  limit(violations, 'transfer recorded more than once', twice);
  limit(violations, 'transfer recorded wrongly', wrong);
  const orphanBad: string[] = [];
  for (const [k, recorded] of live) {
    if (canonical.has(k)) continue;
    for (const r of recorded) if (!statusAllowedWhenOrphaned(r.status)) orphanBad.push(`${r.id} (${k}) is ${r.status} but its log is not on the chain`);
  }
  limit(violations, 'orphaned transfer', orphanBad);
  limit(
    violations,
    'transfer attributed twice',
    rows.filter((r) => r.order_id && r.deposit_binding_id).map((r) => r.id),
  );
  limit(
    violations,
    'credited transfer without an order or deposit reference',
    rows.filter((r) => r.credited && !r.order_id && !r.deposit_binding_id).map((r) => r.id),
  );
  limit(
    violations,
    'dropped transfer credited',
    rows.filter((r) => r.credited && r.status === 'dropped').map((r) => r.id),
  );

  // --- deposits: one per transfer, following its transfer --------------------------------------
  const depositRows = await sql<{ id: string; transfer_id: string; binding_id: string; status: string }[]>`select id, transfer_id, binding_id, status from deposits`;
  const byTransfer = new Map(rows.map((r) => [r.id, r]));
  const depositBad: string[] = [];
  const depositOf = new Map<string, string>();
  for (const d of depositRows) {
    const t = byTransfer.get(d.transfer_id);
    if (depositOf.has(d.transfer_id)) depositBad.push(`${d.transfer_id} has deposits ${depositOf.get(d.transfer_id)} and ${d.id}`);
    depositOf.set(d.transfer_id, d.id);
    if (!t) {
      depositBad.push(`${d.id} points at a missing transfer`);
      continue;
    }
    if (t.deposit_binding_id !== d.binding_id) depositBad.push(`${d.id} is on binding ${d.binding_id}, its transfer on ${t.deposit_binding_id}`);
    const expected = t.status === 'dropped' ? ['dropped'] : CONFIRMED_STATUSES.includes(t.status) ? ['confirmed', 'completed'] : ['pending'];
    if (!expected.includes(d.status)) depositBad.push(`${d.id} is ${d.status}, its transfer ${t.id} is ${t.status}`);
  }
  for (const r of rows) {
    if (r.deposit_binding_id && r.status !== 'dropped' && !depositOf.has(r.id)) depositBad.push(`transfer ${r.id} attributed to ${r.deposit_binding_id} has no deposit`);
  }
  limit(violations, 'deposit', depositBad);

  // --- orders: completed ones are paid, expired ones are not; amountReceived adds up ----------
  const orderRows = await sql<{ id: string; organization_id: string; status: string; amount: string; amount_received: string; currency: string }[]>`
    select id, organization_id, status, amount::text as amount, amount_received::text as amount_received, currency from orders`;
  const sums = new Map<string, { confirmed: bigint; all: bigint }>();
  for (const r of rows) {
    if (!r.order_id || !r.counted || r.status === 'dropped') continue;
    const s = sums.get(r.order_id) ?? { confirmed: 0n, all: 0n };
    s.all += BigInt(r.amount);
    if (CONFIRMED_STATUSES.includes(r.status)) s.confirmed += BigInt(r.amount);
    sums.set(r.order_id, s);
  }
  const orderBad: string[] = [];
  const orderMismatch: string[] = [];
  for (const o of orderRows) {
    const s = sums.get(o.id) ?? { confirmed: 0n, all: 0n };
    const amount = BigInt(o.amount);
    if (o.status === 'completed' && s.confirmed < amount) orderBad.push(`${o.id} completed with confirmed counted ${s.confirmed} < ${amount}`);
    if (o.status === 'expired' && s.confirmed >= amount) orderBad.push(`${o.id} expired with confirmed counted ${s.confirmed} >= ${amount}`);
    if (BigInt(o.amount_received) !== s.all) orderMismatch.push(`${o.id} amountReceived ${o.amount_received}, counted transfers add up to ${s.all}`);
  }
  limit(violations, 'order', orderBad);
  limit(mismatches, 'order total', orderMismatch);

  // --- the API answers what the database holds -------------------------------------------------
  const apiMismatch: string[] = [];
  const apiOrders = new Map<string, { status: string; amountReceived: bigint | null }>();
  const queue = [...orderRows];
  await Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let o = queue.shift(); o; o = queue.shift()) {
        const res = await input.api(input.orgKeys[o.organization_id], 'GET', `/orders/${o.id}`);
        const received = typeof res.body.amountReceived === 'string' ? parseUnits(res.body.amountReceived, DECIMALS[o.currency]) : null;
        apiOrders.set(o.id, { status: String(res.body.status), amountReceived: received });
        if (res.status !== 200 || res.body.status !== o.status || received !== BigInt(o.amount_received)) {
          apiMismatch.push(`${o.id}: API ${res.status} ${String(res.body.status)} ${String(res.body.amountReceived)}, database ${o.status} ${o.amount_received}`);
        }
      }
    }),
  );
  limit(mismatches, 'GET /orders/:id', apiMismatch);

  // --- events: one per transition ---------------------------------------------------------------
  const eventRows = await sql<{ id: string; organization_id: string; type: string; subject: string | null; created_at: Date }[]>`
    select id, organization_id, type, coalesce(data->>'orderId', data->>'depositId') as subject, created_at from events`;
  const eventCount = new Map<string, number>();
  for (const e of eventRows) if (e.subject) eventCount.set(`${e.type}:${e.subject}`, (eventCount.get(`${e.type}:${e.subject}`) ?? 0) + 1);
  const eventBad: string[] = [];
  for (const o of orderRows) {
    for (const [type, want] of [
      ['order.completed', o.status === 'completed' ? 1 : 0],
      ['order.expired', o.status === 'expired' ? 1 : 0],
    ] as const) {
      const n = eventCount.get(`${type}:${o.id}`) ?? 0;
      if (n !== want) eventBad.push(`${o.id} (${o.status}) has ${n} ${type}`);
    }
  }
  for (const d of depositRows) {
    const confirmed = eventCount.get(`deposit.confirmed:${d.id}`) ?? 0;
    const want = d.status === 'confirmed' || d.status === 'completed' ? 1 : 0;
    if (confirmed !== want) eventBad.push(`${d.id} (${d.status}) has ${confirmed} deposit.confirmed`);
    if ((eventCount.get(`deposit.pending:${d.id}`) ?? 0) > 1) eventBad.push(`${d.id} has several deposit.pending`);
  }
  limit(violations, 'events', eventBad);

  // --- webhooks: at least once per enabled subscribed endpoint; a second 2xx only after a failure
  const endpointRows = await sql<{ id: string; enabled: boolean; created_at: Date }[]>`select id, enabled, created_at from webhook_endpoints`;
  const endpointState = new Map(endpointRows.map((e) => [e.id, e]));
  const eventsById = new Map(eventRows.map((e) => [e.id, e]));
  const postsByPair = new Map<string, ReceivedPost[]>();
  for (const p of input.posts) postsByPair.set(`${p.endpoint} ${p.eventId}`, [...(postsByPair.get(`${p.endpoint} ${p.eventId}`) ?? []), p]);
  let expected = 0;
  let delivered = 0;
  let duplicated = 0;
  const hookBad: string[] = [];
  for (const ep of input.endpoints) {
    const state = endpointState.get(ep.id);
    // The first 410 that reached the service. A 410 the receiver wrote to a connection the service
    // had already given up on (`unread`, see webhook-receiver.ts: this event loop stalled past the
    // service's timeout, so the service recorded a timeout, retried, and closed the connection; or
    // the worker ended with it open) was never taken in and disables nothing: counting it was a
    // false "answered 410 but is still enabled" whenever the receiver happened to draw 410 for such
    // a POST (issue 39). A 410 that did reach a live worker must disable the endpoint, however its
    // recording went: one lost to a deadlock with a success recorded at the same time (the service
    // bug of issue 39, core/webhooks/apply.ts) is still reported here.
    const goneAt = input.posts.find((p) => p.endpoint === ep.path && p.answer === 'gone' && !p.unread)?.at ?? null;
    if (state?.enabled && goneAt !== null) hookBad.push(`${ep.id} answered 410 but is still enabled`);
    for (const e of eventRows) {
      if (e.organization_id !== ep.organizationId || !ep.events.includes(e.type)) continue;
      if (!state?.enabled) continue;
      expected++;
      const posts = postsByPair.get(`${ep.path} ${e.id}`) ?? [];
      if (posts.length > 0) delivered++;
      else hookBad.push(`${e.type} ${e.id} never reached ${ep.id} (${ep.path})`);
    }
    for (const p of input.posts.filter((x) => x.endpoint === ep.path)) {
      const e = eventsById.get(p.eventId);
      if (!e) hookBad.push(`${ep.path} received unknown event ${p.eventId}`);
      else if (e.organization_id !== ep.organizationId) hookBad.push(`${ep.path} received ${p.eventId} of another organization`);
      else if (!ep.events.includes(e.type)) hookBad.push(`${ep.path} received ${e.type} ${p.eventId} it is not subscribed to`);
      if (goneAt !== null && p.at > goneAt + 5_000) hookBad.push(`${ep.path} received ${p.eventId} ${Math.round((p.at - goneAt) / 1000)} s after answering 410`);
    }
  }
  // Attempts the service itself recorded before its delivery's last, per (endpoint path, event) —
  // one delivery per pair (a unique index). Each may explain one more 2xx POST: the next attempt was
  // claimed only because this one failed (the receiver's failure, or the service's timeout firing
  // before a busy receiver's 2xx arrived) or because its result was not recorded within its claim's
  // lease (a starved worker: the next claim marks it interrupted, and the late 2xx then replaces
  // that record with `succeeded` — two succeeded attempts, both real). More 2xx POSTs than recorded
  // attempts is a double send.
  const pathOf = new Map(input.endpoints.map((ep) => [ep.id, ep.path]));
  const serviceFailures = new Map(
    (
      await sql<{ endpoint_id: string; event_id: string; failures: number }[]>`
        select d.endpoint_id, d.event_id, count(*)::int - 1 as failures
        from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id
        group by d.endpoint_id, d.event_id`
    ).map((r) => [`${pathOf.get(r.endpoint_id)} ${r.event_id}`, r.failures]),
  );
  for (const [pair, posts] of postsByPair) {
    const ok = posts.filter((p) => p.answer === 'ok');
    if (ok.length <= 1) continue;
    duplicated++;
    const failedBefore = posts.filter((p) => p.answer !== 'ok' && p.at <= ok[ok.length - 1].at).length;
    const explained = Math.max(failedBefore, serviceFailures.get(pair) ?? 0);
    const faultNear = input.faultTimes.some((t) => t >= ok[0].at - 2_000 && t <= ok[ok.length - 1].at);
    if (ok.length - 1 > explained && !faultNear) hookBad.push(`${pair} got ${ok.length} 2xx deliveries with only ${explained} earlier attempt(s) recorded or failed and no fault in between`);
  }
  limit(violations, 'webhook', hookBad);

  return { violations, mismatches, webhooks: { expected, delivered, duplicated, posts: input.posts.length }, apiOrders };
}
