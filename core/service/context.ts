import type { Config } from '../platform/config';
import type { Database } from '../../db/client';
import type { ChainRegistry } from '../chains/registry';
import type { Clock } from '../platform/clock';
import type { DetectionState } from '../detection/state';
import type { Logger } from '../platform/logger';
import type { JobQueue } from '../jobs/job-queue';
import type { PlatformMemory } from '../platform/process-memory';
import type { OrdersMemory } from '../orders/order-memory';
import type { WebhooksMemory } from '../webhooks/delivery-memory';

/**
 * A process's memory outside the database: the platform's part and each domain's, assembled by
 * the service (./service.ts newProcessMemory; core/platform/process-memory.ts says what belongs).
 */
export type ProcessMemory = PlatformMemory & OrdersMemory & WebhooksMemory;

/** What domain operations need, shared by the API and the workers (built once per process). */
export interface ServiceContext {
  config: Config;
  db: Database;
  registry: ChainRegistry;
  clock: Clock;
  logger: Logger;
  /** The detection core's per-process memory (range sizes, token verdicts, adapters). */
  detection: DetectionState;
  /** Where work is put on the job tier (the port of core/jobs; BullMQ behind it). */
  jobs: JobQueue;
  /** The rest of this process's memory (allocation points, order batches, SMTP transporters, delivery limits, once-only reports). */
  memory: ProcessMemory;
}
