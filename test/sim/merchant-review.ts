/**
 * The merchant's review at the end of a run (issue 40): after the automatic outcome has been
 * checked (invariants, model), each organization goes through its unattributed payments the way
 * a merchant would with the dashboard's "Needs attention" view, deciding from the evidence alone
 * (the simulation's intent is never consulted): a payment whose candidates name exactly one order
 * (paid after it ended, or undecidable between it and nobody) is attributed to that order, with a
 * reason. The intent oracle then counts these manual resolutions apart (intent.ts): they are the
 * merchant's decisions, logged as such, and measure how often the evidence points the right way.
 */

interface ApiAnswer {
  status: number;
  body: Record<string, unknown>;
}
type Api = (key: string, method: string, path: string, body?: unknown) => Promise<ApiAnswer>;

interface Candidate {
  kind: 'order' | 'deposit';
  relation: string;
  orderId: string | null;
}
interface UnattributedTransfer {
  id: string;
  unattributedReason: string | null;
  candidates: Candidate[];
}

export interface ReviewReport {
  reviewed: number;
  attributed: number;
  /** Answers other than 200 (409: credited meanwhile; 400: another token): the merchant leaves them. */
  refused: Record<string, number>;
}

/** Description B lists (a bare array) or A's envelope: the sim runs either. */
function itemsOf(body: Record<string, unknown>): UnattributedTransfer[] {
  if (Array.isArray(body.data)) return body.data as UnattributedTransfer[];
  const data = body.data as Record<string, unknown> | undefined;
  return (data?.transfers as UnattributedTransfer[] | undefined) ?? [];
}

export async function reviewUnattributedPayments(api: Api, adminKeys: string[]): Promise<ReviewReport> {
  const report: ReviewReport = { reviewed: 0, attributed: 0, refused: {} };
  for (const key of adminKeys) {
    const decided: { id: string; orderId: string }[] = [];
    for (let page = 1; ; page++) {
      const res = await api(key, 'GET', `/transfers?attributed=false&limit=100&page=${page}&sortBy=detectedAt&sortOrder=asc`);
      const items = itemsOf(res.body);
      for (const t of items) {
        report.reviewed++;
        const orders = [...new Set(t.candidates.filter((c) => c.kind === 'order' && c.orderId).map((c) => c.orderId!))];
        if (orders.length === 1) decided.push({ id: t.id, orderId: orders[0] });
      }
      if (items.length < 100) break;
    }
    for (const d of decided) {
      const res = await api(key, 'POST', `/transfers/${d.id}/attribute`, { orderId: d.orderId, reason: 'merchant review: the evidence names one order' });
      if (res.status === 200) report.attributed++;
      else report.refused[String(res.status)] = (report.refused[String(res.status)] ?? 0) + 1;
    }
  }
  return report;
}
