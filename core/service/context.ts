import type { Config } from '../platform/config';
import type { Database } from '../../db/client';
import type { ChainRegistry } from '../chains/registry';
import type { Clock } from '../platform/clock';
import type { DetectionState } from './detection-state';
import type { Logger } from '../platform/logger';
import type { JobQueue } from '../jobs/job-queue';
import type { ProcessMemory } from './process-memory';

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
  /** The rest of this process's memory (allocation points, SMTP transporters, once-only reports). */
  memory: ProcessMemory;
}
