import type { QueueName } from '../../core/jobs/catalog';
import type { Processor } from './types';
import { idempotencyCleanupProcessor } from './idempotency-cleanup.processor';
import { chainConfirmationsProcessor, chainScanProcessor } from './chain-scan.processor';
import { poolCooldownProcessor } from './pool-cooldown.processor';
import { poolLowCheckProcessor } from './pool-low-check.processor';
import { orderExpiryProcessor } from './order-expiry.processor';
import { refundExpiryProcessor } from './refund-expiry.processor';
import { webhookDeliveryProcessor } from './webhook-delivery.processor';
import { webhookRelayProcessor } from './webhook-relay.processor';
import { tableMaintenanceProcessor } from './table-maintenance.processor';
import { alertEmailProcessor } from './alert-email.processor';
import { historyRetentionProcessor } from './history-retention.processor';
import { historyPartitionsProcessor } from './history-partitions.processor';

/** One processor per queue. The type makes a missing or extra processor a compile error. */
export const PROCESSORS: { [Q in QueueName]: Processor<Q> } = {
  'idempotency-cleanup': idempotencyCleanupProcessor,
  'chain-scan': chainScanProcessor,
  'chain-confirmations': chainConfirmationsProcessor,
  'pool-cooldown': poolCooldownProcessor,
  'pool-low-check': poolLowCheckProcessor,
  'order-expiry': orderExpiryProcessor,
  'refund-expiry': refundExpiryProcessor,
  'webhook-relay': webhookRelayProcessor,
  'webhook-delivery': webhookDeliveryProcessor,
  'table-maintenance': tableMaintenanceProcessor,
  'alert-email': alertEmailProcessor,
  'history-retention': historyRetentionProcessor,
  'history-partitions': historyPartitionsProcessor,
};
