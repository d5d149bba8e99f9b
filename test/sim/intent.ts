import type postgres from 'postgres';
import { transferIdentity } from './rules';
import type { TraceEntry } from './trace';

/**
 * The intent oracle (issue 25): the simulation knows what each payment was meant for — the order or
 * deposit reference whose address the payer was given, or nothing (a stray) — independently of the
 * service's attribution rule. It judges every recorded transfer by that:
 *   - credited (attributed) to anything other than what it was meant for: a violation, always;
 *   - meant for something and left unattributed: it must fall in a documented class (README
 *     "Payment detection"), counted per class; otherwise a violation.
 * Classes, from what the simulation knows (when it sent the payment, when the holder ended) and
 * the service's stated reason:
 *   - `paid after the grace period`: meant for an order that expired, sent no earlier than
 *     SLACK_MS before it expired, and the service says nobody held the address (`no_holder`);
 *   - `paid to an address in cooldown`: the same for an order that completed or a deposit
 *     reference that was unbound;
 *   - `evidence undecidable`: the service says `undecidable` (a stall, workers down, a hand-over).
 */

/** A payment sent shortly before its holder ended may be mined after the end (it is then nobody's). */
const SLACK_MS = 60_000;

export type Intent = { kind: 'order'; ref: string } | { kind: 'deposit'; ref: string } | { kind: 'refund'; ref: string } | null;

export interface IntentReport {
  /** Recorded transfers whose intent the simulation knows. */
  judged: number;
  /** The same per chain (every family's payments must be judged). */
  judgedPerChain: Record<string, number>;
  /** Credited (attributed) to something they were not meant for. */
  wrongCredit: number;
  /** Meant for something and attributed to it. */
  creditedAsMeant: number;
  /** Meant for nothing (strays) and attributed to nobody. */
  straysUnattributed: number;
  /** Meant for something, unattributed: count per documented class. */
  unattributed: Record<string, number>;
  /**
   * Issue 39's liveness measure. Honest on-time: meant for an order, in its chain and token, sent
   * before the order ended and at least ON_TIME_MARGIN_MS before its grace ended (so mined within
   * it); or meant for a deposit reference and sent while it was bound. `notCredited` breaks the
   * rest down by the service's reason and the cause read from the evidence against the meant
   * holding (no look before its start, seen only after its end, both, other).
   */
  honest: { total: number; credited: number; notCredited: Record<string, number> };
  /**
   * Attributed by hand (the merchant's review, merchant-review.ts; issue 40): counted apart, never
   * as the service's credit. A decision the merchant made from the evidence that turns out not to
   * be what the payer meant is the merchant's, logged as such: reported, not a violation.
   */
  manual: { total: number; asMeant: number; notAsMeant: number };
  violations: string[];
}

/** An honest payer sends at least this long before the grace ends (a few blocks to be mined). */
const ON_TIME_MARGIN_MS = 5_000;

/**
 * What a payment reference of the simulation means: `…-o<n>` an order, `…-d<n>` a deposit
 * reference, `…-s<n>` nothing, `…-r<n>` (and `…-r<n>-early`, `…-r<n>-wrong`) the merchant paying
 * refund n (judged by refund-oracle.ts; here only: never credited to an order or a deposit).
 */
export function intentOfRef(ref: string): Intent {
  const refund = /^(.*-r\d+)(-(early|wrong))?$/.exec(ref);
  if (refund) return { kind: 'refund', ref: refund[1] };
  const base = ref.replace(/-(reorg-bait|after-unbind)$/, '');
  if (/-o\d+$/.test(base)) return { kind: 'order', ref: base };
  if (/-d\d+$/.test(base)) return { kind: 'deposit', ref: base };
  return null;
}

/**
 * The key the oracle finds a payment by. EVM and Tron: its identity (tx hash and index of the
 * transfer within the transaction, which the payer knows). Solana: the signature and the recipient
 * owner — the identity's index is the recipient token account's place in the compiled transaction's
 * account list, which the payer does not choose; one transaction pays an owner once per mint.
 */
export function paymentKey(p: { chainId: string; txHash: string; indexInTx: number; to: string; currency: string }): string {
  return p.chainId.startsWith('solana') ? `${p.txHash}|${p.to.toLowerCase()}|${p.currency}` : transferIdentity(p);
}

/** Each sent payment's key (paymentKey) → its reference, chain and when it was sent (ms). */
export function paymentsOfTrace(entries: readonly TraceEntry[], startedAt: number): Map<string, { ref: string; sentAt: number; chainId: string }> {
  const out = new Map<string, { ref: string; sentAt: number; chainId: string }>();
  for (const e of entries) {
    if (e.kind !== 'tx' || typeof e.hash !== 'string') continue;
    const sentAt = e.at + startedAt;
    const chainId = String(e.chainId);
    const hashes = Array.isArray(e.hashes) ? (e.hashes as string[]) : null;
    const items: { ref: string; to: string; currency: string }[] = Array.isArray(e.batch) ? (e.batch as { ref: string; to: string; currency: string }[]) : typeof e.ref === 'string' ? [{ ref: e.ref, to: String(e.to), currency: String(e.currency) }] : [];
    items.forEach((item, i) => out.set(paymentKey({ chainId, txHash: hashes?.[i] ?? (e.hash as string), indexInTx: i, to: item.to, currency: item.currency }), { ref: item.ref, sentAt, chainId }));
  }
  return out;
}

export async function judgeByIntent(
  sql: postgres.Sql,
  payments: Map<string, { ref: string; sentAt: number; chainId: string }>,
  /** Each chain's L (HEAD_LAG_SECONDS), for the causes of the honest payments not credited. */
  lagSeconds: ReadonlyMap<string, number> = new Map(),
): Promise<IntentReport> {
  const report: IntentReport = { judgedPerChain: {}, judged: 0, wrongCredit: 0, creditedAsMeant: 0, straysUnattributed: 0, unattributed: {}, honest: { total: 0, credited: 0, notCredited: {} }, manual: { total: 0, asMeant: 0, notAsMeant: 0 }, violations: [] };
  const orderRows = await sql<{ id: string; order_reference: string; status: string; chain_id: string; currency: string; grace_ends_at: Date | string; completed_at: Date | string | null; expired_at: Date | string | null }[]>`
    select id, order_reference, status, chain_id, currency, grace_ends_at, completed_at, expired_at from orders`;
  // The holdings (assignments) of what each payment was meant for: its start and end.
  const holdingRows = await sql<{ order_id: string | null; deposit_binding_id: string | null; started_at: Date | string; ended_at: Date | string | null }[]>`
    select order_id, deposit_binding_id, started_at, ended_at from address_assignments`;
  const holdings = new Map(holdingRows.map((h) => [`${h.order_id ? 'order' : 'deposit'} ${h.order_id ?? h.deposit_binding_id}`, { startedAt: new Date(h.started_at).getTime(), endedAt: h.ended_at === null ? null : new Date(h.ended_at).getTime() }]));
  const orders = new Map(orderRows.map((o) => [o.order_reference, o]));
  const bindingRows = await sql<{ id: string; deposit_reference: string; unbound_at: Date | string | null }[]>`
    select id, deposit_reference, unbound_at from deposit_bindings`;
  const bindings = new Map<string, (typeof bindingRows)[number][]>();
  for (const b of bindingRows) bindings.set(b.deposit_reference, [...(bindings.get(b.deposit_reference) ?? []), b]);
  const rows = await sql<{ chain_id: string; tx_hash: string; index_in_tx: number; to_address: string; currency: string; order_id: string | null; deposit_binding_id: string | null; unattributed_reason: string | null; attributed_by: string | null; status: string; mined_after: Date | string | null; mined_by: Date | string | null; clock_mined_after: Date | string | null; clock_mined_by: Date | string | null }[]>`
    select chain_id, tx_hash, index_in_tx, to_address, currency, order_id, deposit_binding_id, unattributed_reason, attributed_by, status, mined_after, mined_by, clock_mined_after, clock_mined_by from transfers where status <> 'dropped'`;
  const count = (cls: string) => (report.unattributed[cls] = (report.unattributed[cls] ?? 0) + 1);
  const ms = (v: Date | string | null) => (v === null ? null : new Date(v).getTime());
  /** Why an honest payment was not credited to what it was meant for, read from the evidence. */
  const causeOf = (r: (typeof rows)[number], meant: string): string => {
    const h = holdings.get(meant);
    if (!h) return `${r.unattributed_reason ?? 'credited elsewhere'}: other (${r.chain_id.replace(/-local$/, '')})`;
    const lag = (lagSeconds.get(r.chain_id) ?? 0) * 1000;
    const [after, by, clockAfter, clockBy] = [ms(r.mined_after), ms(r.mined_by), ms(r.clock_mined_after), ms(r.clock_mined_by)];
    const looked = (after !== null && after >= h.startedAt - lag) || (clockAfter !== null && clockAfter >= h.startedAt);
    const seenInTime = h.endedAt === null || (by !== null && by <= h.endedAt) || (clockBy !== null && clockBy <= h.endedAt);
    const cause = !looked && !seenInTime ? 'both' : !looked ? 'no look before the start' : !seenInTime ? 'seen after the end' : 'other';
    return `${r.unattributed_reason ?? 'credited elsewhere'}: ${cause} (${r.chain_id.replace(/-local$/, '')})`;
  };
  for (const r of rows) {
    const identity = transferIdentity({ txHash: r.tx_hash, indexInTx: r.index_in_tx });
    const sent = payments.get(paymentKey({ chainId: r.chain_id, txHash: r.tx_hash, indexInTx: r.index_in_tx, to: r.to_address, currency: r.currency }));
    if (!sent) continue; // not one of the simulation's payments (none expected): the invariants cover it
    if (intentOfRef(sent.ref)?.kind === 'refund') {
      // The merchant's payment of a refund (issue 42): outgoing, never an incoming payment to anything.
      if (r.order_id || r.deposit_binding_id) {
        report.wrongCredit++;
        report.violations.push(`credited to something it was not meant for: transfer ${identity} (${sent.ref}, the merchant paying a refund) attributed to ${r.order_id ? `order ${r.order_id}` : `deposit ${r.deposit_binding_id}`}`);
      }
      continue;
    }
    report.judged++;
    report.judgedPerChain[r.chain_id] = (report.judgedPerChain[r.chain_id] ?? 0) + 1;
    const intent = intentOfRef(sent.ref);
    const got = r.order_id ? `order ${r.order_id}` : r.deposit_binding_id ? `deposit ${r.deposit_binding_id}` : null;
    let meant: string | null = null;
    let endedAt: number | null = null;
    let endedAs: 'expired' | 'ended' | null = null;
    let honest = false;
    if (intent?.kind === 'order') {
      const o = orders.get(intent.ref);
      if (!o) {
        report.violations.push(`intent: transfer ${identity} was meant for order ${intent.ref}, which the service does not know`);
        continue;
      }
      meant = `order ${o.id}`;
      endedAt = o.expired_at ? new Date(o.expired_at).getTime() : o.completed_at ? new Date(o.completed_at).getTime() : null;
      endedAs = o.expired_at ? 'expired' : o.completed_at ? 'ended' : null;
      honest = r.chain_id === o.chain_id && r.currency === o.currency && (endedAt === null || sent.sentAt < endedAt) && sent.sentAt <= new Date(o.grace_ends_at).getTime() - ON_TIME_MARGIN_MS;
    } else if (intent?.kind === 'deposit') {
      // The reference's binding that held the address when the payment was sent (a reference may be bound again later).
      const candidates = bindings.get(intent.ref) ?? [];
      const b = candidates.find((c) => c.unbound_at === null || new Date(c.unbound_at).getTime() >= sent.sentAt - SLACK_MS) ?? candidates[candidates.length - 1];
      if (!b) {
        report.violations.push(`intent: transfer ${identity} was meant for deposit reference ${intent.ref}, which the service does not know`);
        continue;
      }
      meant = `deposit ${b.id}`;
      endedAt = b.unbound_at ? new Date(b.unbound_at).getTime() : null;
      endedAs = b.unbound_at ? 'ended' : null;
      honest = endedAt === null || sent.sentAt < endedAt;
    }
    const byHand = r.attributed_by !== null;
    if (honest && meant !== null) {
      report.honest.total++;
      if (got === meant && !byHand) report.honest.credited++;
      else {
        const cause = causeOf(r, meant);
        report.honest.notCredited[cause] = (report.honest.notCredited[cause] ?? 0) + 1;
      }
    }
    if (got !== null && byHand) {
      report.manual.total++;
      if (got === meant) report.manual.asMeant++;
      else report.manual.notAsMeant++;
      continue;
    }
    if (got !== null) {
      if (got === meant) report.creditedAsMeant++;
      else {
        report.wrongCredit++;
        report.violations.push(`credited to something it was not meant for: transfer ${identity} (${sent.ref}) attributed to ${got}, meant for ${meant ?? 'nothing'}`);
      }
      continue;
    }
    if (meant === null) {
      report.straysUnattributed++;
      continue;
    }
    if (r.unattributed_reason === 'undecidable') count('evidence undecidable');
    else if ((r.unattributed_reason === 'no_holder' || r.unattributed_reason === 'paid_late') && endedAt !== null && sent.sentAt >= endedAt - SLACK_MS) {
      count(endedAs === 'expired' ? 'paid after the grace period' : 'paid to an address in cooldown');
    } else {
      count('unexplained');
      report.violations.push(`intent: transfer ${identity} (${sent.ref}) meant for ${meant} stayed unattributed (${r.unattributed_reason ?? 'no reason'}) outside every documented class`);
    }
  }
  return report;
}

/** The closing note's lines. */
export function formatIntent(r: IntentReport): string[] {
  const classes = Object.entries(r.unattributed).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  const h = r.honest;
  const rest = Object.entries(h.notCredited).sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} ${n}`).join(', ') || 'none';
  return [
    `credited to something it was not meant for: ${r.wrongCredit}`,
    `honest on-time payments credited automatically: ${h.credited} of ${h.total} (${h.total === 0 ? '100.0' : ((100 * h.credited) / h.total).toFixed(1)}%)`,
    `honest not credited   ${rest}`,
    `intent oracle         ${r.judged} payments judged (${Object.entries(r.judgedPerChain).map(([c, n]) => `${c} ${n}`).join(', ')}): ${r.creditedAsMeant} credited as meant, ${r.straysUnattributed} strays left unattributed`,
    `unattributed by class ${classes}`,
    `manual resolutions    ${r.manual.total} attributed by the merchant's review (apart from the above): ${r.manual.asMeant} as the payer meant, ${r.manual.notAsMeant} not (the merchant's decision, logged as such)`,
  ];
}
