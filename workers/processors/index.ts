import type { QueueName } from '../catalog';
import type { Processor } from './types';
import { idempotencyCleanupProcessor } from './idempotency-cleanup.processor';
import { chainConfirmationsProcessor, chainScanProcessor } from './chain-scan.processor';

/** One processor per queue. The type makes a missing or extra processor a compile error. */
export const PROCESSORS: { [Q in QueueName]: Processor<Q> } = {
  'idempotency-cleanup': idempotencyCleanupProcessor,
  'chain-scan': chainScanProcessor,
  'chain-confirmations': chainConfirmationsProcessor,
};
