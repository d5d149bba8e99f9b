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

export type Intent = { kind: 'order'; ref: string } | { kind: 'deposit'; ref: string } | null;

export interface IntentReport {
  /** Recorded transfers whose intent the simulation knows. */
  judged: number;
  /** Credited (attributed) to something they were not meant for. */
  wrongCredit: number;
  /** Meant for something and attributed to it. */
  creditedAsMeant: number;
  /** Meant for nothing (strays) and attributed to nobody. */
  straysUnattributed: number;
  /** Meant for something, unattributed: count per documented class. */
  unattributed: Record<string, number>;
  violations: string[];
}

/** What a payment reference of the simulation means: `…-o<n>` an order, `…-d<n>` a deposit reference, `…-s<n>` nothing. */
export function intentOfRef(ref: string): Intent {
  const base = ref.replace(/-(reorg-bait|after-unbind)$/, '');
  if (/-o\d+$/.test(base)) return { kind: 'order', ref: base };
  if (/-d\d+$/.test(base)) return { kind: 'deposit', ref: base };
  return null;
}

/** Each sent payment's identity (tx hash and index within it) → its reference and when it was sent (ms). */
export function paymentsOfTrace(entries: readonly TraceEntry[], startedAt: number): Map<string, { ref: string; sentAt: number }> {
  const out = new Map<string, { ref: string; sentAt: number }>();
  for (const e of entries) {
    if (e.kind !== 'tx' || typeof e.hash !== 'string') continue;
    const sentAt = e.at + startedAt;
    if (Array.isArray(e.batch)) {
      (e.batch as { ref: string }[]).forEach((item, i) => out.set(transferIdentity({ txHash: e.hash as string, indexInTx: i }), { ref: item.ref, sentAt }));
    } else if (typeof e.ref === 'string') {
      out.set(transferIdentity({ txHash: e.hash, indexInTx: 0 }), { ref: e.ref, sentAt });
    }
  }
  return out;
}

export async function judgeByIntent(sql: postgres.Sql, payments: Map<string, { ref: string; sentAt: number }>): Promise<IntentReport> {
  const report: IntentReport = { judged: 0, wrongCredit: 0, creditedAsMeant: 0, straysUnattributed: 0, unattributed: {}, violations: [] };
  const orderRows = await sql<{ id: string; order_reference: string; status: string; completed_at: Date | string | null; expired_at: Date | string | null }[]>`
    select id, order_reference, status, completed_at, expired_at from orders`;
  const orders = new Map(orderRows.map((o) => [o.order_reference, o]));
  const bindingRows = await sql<{ id: string; deposit_reference: string; unbound_at: Date | string | null }[]>`
    select id, deposit_reference, unbound_at from deposit_bindings`;
  const bindings = new Map<string, (typeof bindingRows)[number][]>();
  for (const b of bindingRows) bindings.set(b.deposit_reference, [...(bindings.get(b.deposit_reference) ?? []), b]);
  const rows = await sql<{ tx_hash: string; index_in_tx: number; order_id: string | null; deposit_binding_id: string | null; unattributed_reason: string | null; status: string }[]>`
    select tx_hash, index_in_tx, order_id, deposit_binding_id, unattributed_reason, status from transfers where status <> 'dropped'`;
  const count = (cls: string) => (report.unattributed[cls] = (report.unattributed[cls] ?? 0) + 1);
  for (const r of rows) {
    const identity = transferIdentity({ txHash: r.tx_hash, indexInTx: r.index_in_tx });
    const sent = payments.get(identity);
    if (!sent) continue; // not one of the simulation's payments (none expected): the invariants cover it
    report.judged++;
    const intent = intentOfRef(sent.ref);
    const got = r.order_id ? `order ${r.order_id}` : r.deposit_binding_id ? `deposit ${r.deposit_binding_id}` : null;
    let meant: string | null = null;
    let endedAt: number | null = null;
    let endedAs: 'expired' | 'ended' | null = null;
    if (intent?.kind === 'order') {
      const o = orders.get(intent.ref);
      if (!o) {
        report.violations.push(`intent: transfer ${identity} was meant for order ${intent.ref}, which the service does not know`);
        continue;
      }
      meant = `order ${o.id}`;
      endedAt = o.expired_at ? new Date(o.expired_at).getTime() : o.completed_at ? new Date(o.completed_at).getTime() : null;
      endedAs = o.expired_at ? 'expired' : o.completed_at ? 'ended' : null;
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
    else if (r.unattributed_reason === 'no_holder' && endedAt !== null && sent.sentAt >= endedAt - SLACK_MS) {
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
  return [
    `credited to something it was not meant for: ${r.wrongCredit}`,
    `intent oracle         ${r.judged} payments judged: ${r.creditedAsMeant} credited as meant, ${r.straysUnattributed} strays left unattributed`,
    `unattributed by class ${classes}`,
  ];
}
