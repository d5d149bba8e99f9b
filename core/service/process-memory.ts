import type { Config } from '../platform/config';
import { newPlatformMemory, type PlatformMemory } from '../platform/process-memory';
import { newOrdersMemory, type OrdersMemory } from './order-memory';
import type { AllocationHints } from '../pool/allocation';
import { newWebhooksMemory, type WebhooksMemory } from '../webhooks/delivery-memory';

/**
 * A process's memory outside the database (ServiceContext.memory): the platform's part and each
 * domain's, declared beside their code (core/platform/process-memory.ts says what belongs there).
 */
export type ProcessMemory = PlatformMemory & OrdersMemory & WebhooksMemory;

/** One process's memory, assembled from each part. `allocationHints`: a test may freeze the allocation hints' clock. */
export function newProcessMemory(config: Pick<Config, 'databasePoolSize' | 'webhooks'>, opts: { allocationHints?: AllocationHints } = {}): ProcessMemory {
  return { ...newPlatformMemory(), ...newOrdersMemory(opts), ...newWebhooksMemory(config) };
}
