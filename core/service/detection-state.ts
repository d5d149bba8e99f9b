import type { ChainAdapter, TokenVerdict } from '../chains/adapter-contract';

/**
 * What the detection core remembers within one process, per chain: the adaptive range size, the
 * token check verdict, the adapters (their RPC clients keep back-off state) and the stall
 * tracking. Lives on the service context, so a test or a benchmark starts from a fresh one by
 * building a new context instead of resetting module-level maps. In the context's room, not
 * core/detection/, since the detection core imports the context.
 */
export class DetectionState {
  readonly rangeSizes = new Map<string, number>();
  readonly tokenVerdicts = new Map<string, TokenVerdict>();
  readonly adapters = new Map<string, ChainAdapter>();
  readonly behindWarnings = new Map<string, number>();
  /**
   * When this process last failed to read or store a chain's state for its own database's reason
   * (elapsedMs): the stall watch does not judge chains by state that could not be stored (stall.ts).
   */
  databaseFailedAt: number | null = null;
  /** When this process began to expect chains' heads (chain-health.ts healthStartedAt). */
  healthStartedAt: Date | null = null;
  /** The degraded chains as last read for the payment page, and when (chain-health.ts isChainDegraded). */
  degradedChainsRead: { at: number; chainIds: Promise<Set<string>> } | null = null;
}
