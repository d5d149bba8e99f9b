import { formatIntent } from './intent';
import { formatRefunds } from './refund-oracle';
import type { SimReport } from './simulation';

/** The summary the CLI prints (and the test shows on failure). */
export function formatReport(r: SimReport): string {
  const faults = Object.entries(r.rpcFaults).map(([k, v]) => `${k} ${v}`).join(', ');
  const f = r.families;
  const split = (key: 'payments' | 'orders' | 'deposits' | 'reorgs') => `(EVM ${f.evm[key]}, Tron ${f.tron[key]}, Solana ${f.solana[key]})`;
  const lines = [
    `seed                  ${r.seed}`,
    `faults                ${r.faultPreset}`,
    `payments              ${r.paymentsSent} sent of ${r.payments} planned ${split('payments')}`,
    `orders                ${r.ordersCreated} created of ${r.orders} planned ${split('orders')}`,
    `deposits              ${r.deposits} references bound ${split('deposits')}`,
    `reorgs                ${r.reorgs} ${split('reorgs')}`,
    `worker kills          ${r.kills}`,
    `Redis restarts        ${r.redisRestarts}`,
    `RPC faults injected   ${Object.values(r.rpcFaults).reduce((s, n) => s + n, 0)} of ${r.rpcRequests} calls (${faults}; EVM ${f.evm.rpcFaults} of ${f.evm.rpcRequests}, Tron ${f.tron.rpcFaults} of ${f.tron.rpcRequests}, Solana ${f.solana.rpcFaults} of ${f.solana.rpcRequests})`,
    `skipped slots         ${r.skippedSlots ?? 0} (solana-local)`,
    `payer sends failed    ${r.sendErrors} (the chain refused the payer's transaction); ${r.notSent} payments not sent (no fair address)`,
    `API busy answers      ${r.apiBusy ?? 0} (503 with Retry-After, waited out and retried)`,
    `mismatches            ${r.mismatches.length}`,
    `invariant violations  ${r.violations.length}`,
    ...(r.intent ? formatIntent(r.intent) : ['credited to something it was not meant for: not judged (the run did not finish)']),
    ...(r.refunds ? formatRefunds(r.refunds) : ['refunds               not judged (the run did not finish)']),
    `webhook events        expected ${r.webhooks.expected}, delivered ${r.webhooks.delivered}, duplicated ${r.webhooks.duplicated} (${r.webhooks.posts} POSTs)`,
    `wall time             ${(r.wallMs / 1000).toFixed(1)} s`,
    `load average          ${r.loadAverage.map((l) => l.toFixed(2)).join(' ')} (at the end; 1, 5, 15 min)`,
  ];
  for (const m of r.mismatches) lines.push(`  MISMATCH ${m}`);
  for (const v of r.violations) lines.push(`  VIOLATION ${v}`);
  if (r.tracePath) lines.push(`trace: ${r.tracePath}`);
  lines.push(`service logs: ${r.logDir}`);
  return lines.join('\n');
}
