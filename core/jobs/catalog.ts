import { Queue, type ConnectionOptions, type JobsOptions } from 'bullmq';
import type { Config } from '../platform/config';
import type { ChainRegistry } from '../chains/registry';

/**
 * The job catalog: every queue (one per job kind), its payload type and default options, and the
 * repeatable schedules. Payloads carry ids only, never records or secrets. This is the contract
 * both tiers share: the API and domain code enqueue through the JobQueue port (./job-queue.ts),
 * workers/ implements one processor per queue (workers/processors/index.ts). A new job kind is
 * one entry in JobPayloads and QUEUES (and in repeatableSchedules if it repeats) plus its processor.
 */
export interface JobPayloads {
  'idempotency-cleanup': Record<string, never>;
  /**
   * One repeatable job per chain: scan new blocks for token transfers into pool addresses. With
   * `head`: woken by a pushed new head (workers/head-wakeups.ts, job id `chain-scan-<chain>-head-<n>`).
   */
  'chain-scan': { chainId: string; head?: number };
  /** One repeatable job per chain: count confirmations, confirm transfers, complete deposits. */
  'chain-confirmations': { chainId: string };
  /** Returns cooled-down pool addresses to available (all organizations). */
  'pool-cooldown': Record<string, never>;
  /** Raises or clears alert.address_pool_low per organization and protocol. */
  'pool-low-check': Record<string, never>;
  'order-expiry': Record<string, never>;
  /** Expires refunds and payouts past their expiresAt, an approved one only unpaid and scanned past it (core/refunds/refunds.ts expireDueRefunds). */
  'refund-expiry': Record<string, never>;
  'webhook-relay': Record<string, never>;
  /**
   * One attempt of one (event, endpoint) delivery, job id `webhook-delivery-<deliveryId>-<attempt>`;
   * or first attempts of several just fanned out, job id `webhook-delivery-batch-<digest>`
   * (core/jobs/webhook-jobs.ts). Retries are always one attempt per job.
   */
  'webhook-delivery': { deliveryId: string; attempt: number } | { deliveries: { deliveryId: string; attempt: number }[] };
  /** Vacuums the queue-like tables whose dead rows have piled up. */
  'table-maintenance': Record<string, never>;
  /** Deletes delivered events, their deliveries and attempts past RETENTION_EVENT_DAYS. */
  'history-retention': Record<string, never>;
  /** Creates the webhook history's monthly partitions ahead and drops months past RETENTION_EVENT_DAYS. */
  'history-partitions': Record<string, never>;
  /** Mails new alert events to the organizations' alerts.email addresses, and retries failed sends. */
  'alert-email': Record<string, never>;
}

export type QueueName = keyof JobPayloads;

interface QueueDefinition {
  /** Jobs of this queue one worker process runs at once. */
  concurrency: number;
  defaultJobOptions: JobsOptions;
}

const REPEATABLE: JobsOptions = { removeOnComplete: 100, removeOnFail: 500, attempts: 1 };

export const QUEUES: Record<QueueName, QueueDefinition> = {
  'idempotency-cleanup': { concurrency: 1, defaultJobOptions: REPEATABLE },
  // Several chains can be scanned by one process at once; two scans of one chain at once are
  // harmless (compare-and-set on the checkpoint, core/detection/scan.ts).
  'chain-scan': { concurrency: 4, defaultJobOptions: REPEATABLE },
  'chain-confirmations': { concurrency: 4, defaultJobOptions: REPEATABLE },
  'pool-cooldown': { concurrency: 1, defaultJobOptions: REPEATABLE },
  'pool-low-check': { concurrency: 1, defaultJobOptions: REPEATABLE },
  'order-expiry': { concurrency: 1, defaultJobOptions: REPEATABLE },
  'refund-expiry': { concurrency: 1, defaultJobOptions: REPEATABLE },
  'webhook-relay': { concurrency: 1, defaultJobOptions: REPEATABLE },
  // Removed once finished so the relay can re-add the same job id if the row is still due;
  // retries are driven by the delivery row (core/webhooks/delivery.ts), not by BullMQ attempts.
  'webhook-delivery': { concurrency: 20, defaultJobOptions: { attempts: 1, removeOnComplete: true, removeOnFail: true } },
  'table-maintenance': { concurrency: 1, defaultJobOptions: REPEATABLE },
  'history-retention': { concurrency: 1, defaultJobOptions: REPEATABLE },
  'history-partitions': { concurrency: 1, defaultJobOptions: REPEATABLE },
  'alert-email': { concurrency: 1, defaultJobOptions: REPEATABLE },
};

export const QUEUE_NAMES = Object.keys(QUEUES) as QueueName[];

export interface ScheduleDefinition<Q extends QueueName = QueueName> {
  queue: Q;
  /** Stable scheduler id: upserted at every start, never duplicated. */
  schedulerId: string;
  everyMs: number;
  data: JobPayloads[Q];
}

/** Every repeatable job of the service, derived from configuration and the chain registry. */
export function repeatableSchedules(config: Config, registry: ChainRegistry): ScheduleDefinition[] {
  const schedules: ScheduleDefinition[] = [
    { queue: 'idempotency-cleanup', schedulerId: 'idempotency-cleanup', everyMs: config.intervals.idempotencyCleanupMs, data: {} },
    { queue: 'pool-cooldown', schedulerId: 'pool-cooldown', everyMs: config.intervals.poolCooldownMs, data: {} },
    { queue: 'pool-low-check', schedulerId: 'pool-low-check', everyMs: config.intervals.poolLowCheckMs, data: {} },
    { queue: 'order-expiry', schedulerId: 'order-expiry', everyMs: config.intervals.orderExpiryMs, data: {} },
    // The orders' expiry interval: a refund's deadline is days away, and one setting fewer.
    { queue: 'refund-expiry', schedulerId: 'refund-expiry', everyMs: config.intervals.orderExpiryMs, data: {} },
    { queue: 'webhook-relay', schedulerId: 'webhook-relay', everyMs: config.intervals.webhookRelayMs, data: {} },
    { queue: 'table-maintenance', schedulerId: 'table-maintenance', everyMs: config.intervals.tableMaintenanceMs, data: {} },
    { queue: 'history-retention', schedulerId: 'history-retention', everyMs: config.retention.intervalMs, data: {} },
    { queue: 'history-partitions', schedulerId: 'history-partitions', everyMs: config.intervals.historyPartitionsMs, data: {} },
  ];
  // Only where alerts can be mailed at all.
  if (config.smtp) schedules.push({ queue: 'alert-email', schedulerId: 'alert-email', everyMs: config.intervals.alertEmailMs, data: {} });
  // Per enabled chain (its family has a ChainAdapter): a block scan and a confirmation count.
  for (const chain of registry.list().filter((c) => c.enabled)) {
    schedules.push(
      { queue: 'chain-scan', schedulerId: `chain-scan-${chain.chainId}`, everyMs: config.intervals.chainScanMs, data: { chainId: chain.chainId } },
      { queue: 'chain-confirmations', schedulerId: `chain-confirmations-${chain.chainId}`, everyMs: config.intervals.confirmationsMs, data: { chainId: chain.chainId } },
    );
  }
  return schedules;
}

export type Queues = { [Q in QueueName]: Queue<JobPayloads[Q]> };

export function createQueues(connection: ConnectionOptions, prefix: string): Queues {
  const entries = QUEUE_NAMES.map((name) => [
    name,
    new Queue(name, { connection, prefix, defaultJobOptions: QUEUES[name].defaultJobOptions }),
  ]);
  return Object.fromEntries(entries) as Queues;
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map((q) => q.close()));
}

/** The id of a head wake-up job of a chain: the same in every process that sees the head, so they collapse. */
export function headWakeupJobId(queue: 'chain-scan' | 'chain-confirmations', chainId: string, head: number): string {
  return jobId(queue, `${chainId}-head-${head}`);
}

/** Job ids are `<queue>-<key>`, never with ':' (BullMQ reserves it). */
export function jobId(queue: QueueName, key: string): string {
  return `${queue}-${key.replace(/:/g, '_')}`;
}
