import type { Transporter } from 'nodemailer';
import { AllocationHints } from '../pool/allocation';
import type { KeyedBatcher } from './keyed-batcher';
import { newOrderCreationBatcher, type OrderCreation, type OrderCreationOutcome } from '../orders/orders';

/**
 * What a process remembers outside the database, besides the detection core's state
 * (core/detection/state.ts): where its order creations stand in each pool and which of them wait
 * to go together, its SMTP transporters, what it has already reported once. Lives on the service
 * context, built once per process in production, so two contexts in one process (tests,
 * benchmarks) never share any of it and nothing needs resetting between them.
 */
export class ProcessMemory {
  /** Per organization and protocol, the allocation point of this context's order creations. */
  readonly allocationHints: AllocationHints;
  /** Per organization and protocol, this context's order creations waiting to go together. */
  readonly orderCreations: KeyedBatcher<OrderCreation, OrderCreationOutcome> = newOrderCreationBatcher();
  /** One nodemailer transporter per SMTP URL (core/alerts/alert-emails.ts). */
  readonly mailTransporters = new Map<string, Transporter>();
  /** The Redis eviction policy last logged (core/redis-eviction.ts): API and workers of one process log it once. */
  reportedEvictionPolicy: string | undefined;

  constructor(opts: { allocationHints?: AllocationHints } = {}) {
    this.allocationHints = opts.allocationHints ?? new AllocationHints();
  }
}
