import type { SimReport } from './simulation';

/** The summary the CLI prints (and the test shows on failure). */
export function formatReport(r: SimReport): string {
  const faults = Object.entries(r.rpcFaults).map(([k, v]) => `${k} ${v}`).join(', ');
  const lines = [
    `seed                  ${r.seed}`,
    `payments              ${r.paymentsSent} sent of ${r.payments} planned`,
    `orders                ${r.ordersCreated} created of ${r.orders} planned`,
    `deposits              ${r.deposits} references bound`,
    `reorgs                ${r.reorgs}`,
    `worker kills          ${r.kills}`,
    `Redis restarts        ${r.redisRestarts}`,
    `RPC faults injected   ${Object.values(r.rpcFaults).reduce((s, n) => s + n, 0)} of ${r.rpcRequests} calls (${faults})`,
    `mismatches            ${r.mismatches.length}`,
    `invariant violations  ${r.violations.length}`,
    `webhook events        expected ${r.webhooks.expected}, delivered ${r.webhooks.delivered}, duplicated ${r.webhooks.duplicated} (${r.webhooks.posts} POSTs)`,
    `wall time             ${(r.wallMs / 1000).toFixed(1)} s`,
  ];
  for (const m of r.mismatches) lines.push(`  MISMATCH ${m}`);
  for (const v of r.violations) lines.push(`  VIOLATION ${v}`);
  if (r.tracePath) lines.push(`trace: ${r.tracePath}`);
  lines.push(`service logs: ${r.logDir}`);
  return lines.join('\n');
}
