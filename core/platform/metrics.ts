import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The process's Prometheus metrics. One registry per process (prom-client's own model): the API
 * and the workers of `npm start` share it, and domain code counts through the small functions
 * below without any plumbing. Values measured at scrape time (queue depths, pool availability,
 * checkpoints) are gathered by collectors the metrics server adds (core/metrics/collectors.ts).
 * Every family is documented in docs/operations.md → Metrics.
 */
export const METRIC_PREFIX = 'stablegate_';

export interface ProcessMetrics {
  registry: Registry;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
  rpcCalls: Counter<'chain' | 'provider'>;
  rpcErrors: Counter<'chain' | 'provider'>;
  transfersRecorded: Counter<'chain'>;
  orderTransitions: Counter<'status'>;
  orderCreationStatements: Counter<'orders' | 'outcome'>;
  depositTransitions: Counter<'status'>;
  webhookDeliveries: Counter<'outcome'>;
  webhookDuration: Histogram<'outcome'>;
  alertEmails: Counter<'outcome'>;
  schedulersRestored: Counter<'queue'>;
}

/**
 * Process-wide by design, unlike the caches on the service context (ServiceContext.memory,
 * .detection): a process serves one /metrics, so every context in it counts into the same registry.
 */
let instance: ProcessMetrics | null = null;

/** The process's metrics, made on first use. */
export function processMetrics(): ProcessMetrics {
  if (instance) return instance;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  const r = [registry];
  instance = {
    registry,
    httpDuration: new Histogram({
      name: `${METRIC_PREFIX}http_request_duration_seconds`,
      help: 'HTTP requests by method, route pattern and status, with their duration (the _count series counts requests)',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
    rpcCalls: new Counter({ name: `${METRIC_PREFIX}chain_rpc_calls_total`, help: 'RPC requests sent, by chain and provider host', labelNames: ['chain', 'provider'], registers: r }),
    rpcErrors: new Counter({ name: `${METRIC_PREFIX}chain_rpc_errors_total`, help: 'RPC requests that failed (error, timeout, refusal), by chain and provider host', labelNames: ['chain', 'provider'], registers: r }),
    transfersRecorded: new Counter({ name: `${METRIC_PREFIX}chain_transfers_recorded_total`, help: 'Token transfers into pool addresses recorded by the scanner', labelNames: ['chain'], registers: r }),
    orderTransitions: new Counter({ name: `${METRIC_PREFIX}order_transitions_total`, help: 'Orders entering a status (pending = created, completed, expired)', labelNames: ['status'], registers: r }),
    orderCreationStatements: new Counter({
      name: `${METRIC_PREFIX}order_creation_statements_total`,
      help: 'Order creation statements by how many creations each carried (orders) and outcome (committed; failed: a batch whose creations then ran alone)',
      labelNames: ['orders', 'outcome'],
      registers: r,
    }),
    depositTransitions: new Counter({ name: `${METRIC_PREFIX}deposit_transitions_total`, help: 'Deposits entering a status (pending, confirmed, completed, dropped)', labelNames: ['status'], registers: r }),
    webhookDeliveries: new Counter({ name: `${METRIC_PREFIX}webhook_deliveries_total`, help: 'Webhook delivery attempts by outcome (succeeded, retry, failed)', labelNames: ['outcome'], registers: r }),
    webhookDuration: new Histogram({
      name: `${METRIC_PREFIX}webhook_delivery_duration_seconds`,
      help: 'Time from sending a webhook to the receiver answering (or the attempt failing), by outcome',
      labelNames: ['outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
      registers: r,
    }),
    alertEmails: new Counter({ name: `${METRIC_PREFIX}alert_emails_total`, help: 'Alert e-mails by outcome (sent, failed, rate_limited)', labelNames: ['outcome'], registers: r }),
    schedulersRestored: new Counter({
      name: `${METRIC_PREFIX}job_schedulers_restored_total`,
      help: 'Job schedulers found missing in Redis (keys deleted, evicted or lost in a failover) and created again, by queue',
      labelNames: ['queue'],
      registers: r,
    }),
  };
  return instance;
}

/** The provider's host only: RPC URLs often carry an API key in their path or query. */
export function providerLabel(url: string): string {
  try {
    return new URL(url).host || 'unknown';
  } catch {
    return 'unknown';
  }
}

// The seams domain code calls. Each is one line there, so moving code keeps its metric.

export function countRpcCall(chainId: string, url: string, ok: boolean): void {
  const m = processMetrics();
  const labels = { chain: chainId, provider: providerLabel(url) };
  m.rpcCalls.inc(labels);
  if (!ok) m.rpcErrors.inc(labels);
}

export function countTransfersRecorded(chainId: string, n: number): void {
  if (n > 0) processMetrics().transfersRecorded.inc({ chain: chainId }, n);
}

export function countOrderTransition(status: 'pending' | 'completed' | 'expired'): void {
  processMetrics().orderTransitions.inc({ status });
}

export function countOrderCreationStatement(orders: number, outcome: 'committed' | 'failed'): void {
  processMetrics().orderCreationStatements.inc({ orders: String(orders), outcome });
}

export function countDepositTransition(status: 'pending' | 'confirmed' | 'completed' | 'dropped'): void {
  processMetrics().depositTransitions.inc({ status });
}

export function observeWebhookDelivery(outcome: string, durationMs: number): void {
  const m = processMetrics();
  m.webhookDeliveries.inc({ outcome });
  m.webhookDuration.observe({ outcome }, durationMs / 1000);
}

export function countSchedulerRestored(queue: string): void {
  processMetrics().schedulersRestored.inc({ queue });
}

export function countAlertEmail(outcome: 'sent' | 'failed' | 'rate_limited'): void {
  processMetrics().alertEmails.inc({ outcome });
}
