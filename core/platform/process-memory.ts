import type { Transporter } from 'nodemailer';

/**
 * What a process remembers outside the database: caches, limits, what it has already reported
 * once. It lives on the service context (ServiceContext.memory), built once per process in
 * production, so two contexts in one process (tests, benchmarks) never share any of it and
 * nothing needs resetting between them. This file holds the platform's part and knows no domain:
 * each domain's part sits in the context's room when that domain imports the context
 * (core/service/order-memory.ts), else beside its code (core/webhooks/delivery-memory.ts), and the
 * service assembles them into one (core/service/process-memory.ts newProcessMemory). The detection
 * core's is core/service/detection-state.ts (ServiceContext.detection).
 */
export interface PlatformMemory {
  /** One nodemailer transporter per SMTP URL (core/alerts/alert-emails.ts). */
  readonly mailTransporters: Map<string, Transporter>;
  /** The Redis eviction policy last logged (./redis-eviction.ts): API and workers of one process log it once. */
  reportedEvictionPolicy: string | undefined;
}

export function newPlatformMemory(): PlatformMemory {
  return { mailTransporters: new Map(), reportedEvictionPolicy: undefined };
}
