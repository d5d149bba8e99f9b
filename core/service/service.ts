import { ChainRegistry } from '../chains/registry';
import { SCANNED_FAMILIES } from '../chains/adapters';
import { systemClock, type Clock } from '../platform/clock';
import { queryPoolSizeFor, type Config, type ProcessKind } from '../platform/config';
import { DetectionState } from './detection-state';
import { newProcessMemory } from './process-memory';
import type { ServiceContext } from './context';
import { createLogger, type Logger } from '../platform/logger';
import { createDb, type DbHandle } from '../../db/client';
import { runMigrations } from '../../db/migrate';
import { createPartitionsAhead } from '../maintenance/history-partitions';
import { lazyJobQueue } from '../jobs/bullmq-job-queue';
import { queuePrefixOf, redisTargetOf } from '../platform/redis';
import { loadLocalChainState } from '../chains/evm/local-chain-state';
import { loadTronLocalState } from '../chains/tron/tron-local-state';
import { loadSolanaLocalState } from '../chains/solana/solana-local-state';
import { assertLocalChainTooling } from '../chains/local-tooling';
import { verifyChainsFileTokens } from '../chains/chains-file-tokens';

export interface ServiceHandle {
  ctx: ServiceContext;
  dbHandle: DbHandle;
  /** Closes the job queue's connection (if it was opened) and the database. */
  close(): Promise<void>;
}

/**
 * The shared start-up of every process: logger, migrations (under the advisory lock), database,
 * chain registry. API and workers are built from the same context (immich's pattern). `kind`
 * sizes the database pool and its bound (default `worker`; `npm start` builds the API's and gives
 * its jobs a worker's pool of their own, scripts/start.ts).
 */
export async function createService(
  config: Config,
  opts: { logger?: Logger; clock?: Clock; migrate?: boolean; kind?: ProcessKind } = {},
): Promise<ServiceHandle> {
  // Before any connection: an image without the development tooling refuses NETWORK=local at once.
  if (config.network === 'local') assertLocalChainTooling();
  // Before any connection too: a wrong chains file (CHAINS_FILE) stops the start with its lines named.
  const registry = ChainRegistry.forConfig(config, SCANNED_FAMILIES);
  const logger = opts.logger ?? createLogger(config.logLevel);
  if (opts.migrate !== false) await runMigrations(config.databaseUrl, { answerWithinMs: config.databaseMaintenanceTimeoutMs });
  // A process that answers requests (the API, npm start): a database it cannot reach or that went
  // silent is a fast 503 (DATABASE_REQUEST_TIMEOUT_MS), not a hang. A worker's calls have their own bound.
  const answersRequests = opts.kind !== 'worker';
  const dbHandle = createDb(config.databaseUrl, {
    max: queryPoolSizeFor(config, opts.kind ?? 'worker'),
    connectTimeoutMs: answersRequests ? config.databaseRequestTimeoutMs : undefined,
    answerWithinMs: answersRequests ? config.databaseRequestTimeoutMs : config.databaseWorkerTimeoutMs,
  });
  await dbHandle.sql`select 1`;
  if (opts.migrate !== false) {
    // The months ahead also at every start, not only by the history-partitions job: an event for a
    // month without a partition could not be written (a worker set without that queue, a long stop).
    await createPartitionsAhead(dbHandle.db, new Date()).catch((err: unknown) =>
      logger.warn({ err: { message: (err as Error).message } }, 'could not create the webhook history partitions ahead; the history-partitions job will'),
    );
  }
  if (config.secretEncryptionKeyIsDefault) {
    logger.warn('SECRET_ENCRYPTION_KEY is not set: using the local development key (never do this outside NETWORK=local)');
  }
  if (config.network !== 'local' && config.publicBaseUrl.startsWith('http://')) {
    logger.warn({ publicBaseUrl: config.publicBaseUrl }, 'ALLOW_INSECURE_PUBLIC_URL is on: payment pages are served over plain http (use https in production)');
  }
  if (config.webhooks.allowInsecure) {
    logger.warn('WEBHOOK_ALLOW_INSECURE is on: webhook URLs may use http and private or loopback addresses (local development only)');
  }
  // The API and worker tiers replace `jobs` with one on their own Redis connection; this one
  // connects only if something else enqueues.
  const jobs = lazyJobQueue(redisTargetOf(config), queuePrefixOf(config));
  const ctx: ServiceContext = { config, db: dbHandle.db, registry, clock: opts.clock ?? systemClock, logger, jobs, detection: new DetectionState(), memory: newProcessMemory(config) };
  await verifyChainsFileTokens(registry, ctx).catch(async (err: unknown) => {
    await dbHandle.close();
    throw err;
  });
  // The local chain's deployed tokens (and RPC URL) are learnt at run time: every process loads them.
  if (config.network === 'local') {
    await loadLocalChainState(ctx);
    await loadTronLocalState(ctx);
    await loadSolanaLocalState(ctx);
  }
  return {
    ctx,
    dbHandle,
    async close() {
      await jobs.close();
      await dbHandle.close();
    },
  };
}
