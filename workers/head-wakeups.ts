import type { ServiceContext } from '../core/service/context';
import { adapterFor } from '../core/detection/monitor';
import type { HeadSubscription } from '../core/chains/adapter-contract';
import { urlOrigin, withUrlsReduced } from '../core/platform/provider-urls';
import { headWakeupJobId, type QueueName } from '../core/jobs/catalog';
import { recordHeadObservation } from '../core/detection/head-observations';

/**
 * New heads pushed by a chain's adapter (where it offers subscribeHeads and the chain has a push
 * endpoint) wake that chain's scan at once, then its confirmation count (the scan processor
 * enqueues it), as jobs whose id is the chain and the head: every process of the fleet that sees the head enqueues the same ids, so the
 * wake-ups collapse into one job each. Per-chain exclusivity stays where it is (compare-and-set
 * on the checkpoint, core/detection/scan.ts). The repeatable jobs keep polling as the safety net.
 */
export function startHeadWakeups(ctx: ServiceContext, queues: QueueName[]): { close(): Promise<void> } {
  const subscriptions: HeadSubscription[] = [];
  // The processes that scan hold the subscriptions (one socket per chain and process).
  if (!queues.includes('chain-scan')) return { close: async () => {} };
  for (const chain of ctx.registry.list().filter((c) => c.enabled)) {
    const adapter = adapterFor(ctx, chain);
    const subscription = adapter?.subscribeHeads?.(
      (height, hash) => {
        // The freshest look at the head this process has: evidence for attribution (design.md §4b).
        const seenAt = ctx.clock.now();
        recordHeadObservation(ctx.db, { chainId: chain.chainId, head: height, askedAt: seenAt, answeredAt: seenAt, hash }).catch((err: Error) =>
          ctx.logger.warn({ chainId: chain.chainId, height, err: { message: err.message } }, 'could not record a pushed head'),
        );
        const data = { chainId: chain.chainId, head: height };
        ctx.jobs.enqueue('chain-scan', data, { jobId: headWakeupJobId('chain-scan', chain.chainId, height) }).catch((err: Error) =>
          ctx.logger.warn({ chainId: chain.chainId, height, err: { message: err.message } }, 'could not enqueue a head wake-up; polling continues'),
        );
      },
      {
        connected: (url) => ctx.logger.info({ chainId: chain.chainId, provider: urlOrigin(url) }, 'head subscription connected'),
        dropped: (url, reason, retryInMs) =>
          ctx.logger.warn({ chainId: chain.chainId, provider: urlOrigin(url), reason: withUrlsReduced(reason), retryInMs }, 'head subscription lost; polling until it reconnects'),
      },
    );
    if (subscription) subscriptions.push(subscription);
  }
  return {
    async close() {
      await Promise.all(subscriptions.map((s) => s.close()));
    },
  };
}
