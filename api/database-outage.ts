import { AppError } from '../core/platform/errors';
import { isDatabaseTimeout, isDatabaseUnreachable } from '../db/client';

/** What a client is told to wait while the database is unreachable (Retry-After, seconds). */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * The answer to a request that failed because the database is unreachable: 503 with Retry-After,
 * in the deployment's error format (issue 32; nothing was written, the client may simply retry).
 * Null for any other error.
 */
export function databaseOutageError(err: unknown): AppError | null {
  if (isDatabaseUnreachable(err)) {
    return new AppError('SERVICE_UNAVAILABLE', `The database is unreachable just now; nothing was changed, retry in ${DATABASE_RETRY_AFTER_SECONDS} seconds`, undefined, {
      retryAfter: DATABASE_RETRY_AFTER_SECONDS,
    });
  }
  // Reachable but not in time: the server's statement_timeout (set just below the request's bound,
  // db/connection-deadline.ts) cancelled a statement that waited, typically on a row another
  // transaction held (a scan recording a payment to the same deposit reference). The transaction
  // was rolled back: the same answer as an outage, not a 500 (simulation 70001 met it under load).
  if (isDatabaseTimeout(err)) {
    return new AppError('SERVICE_UNAVAILABLE', `The database did not answer in time; nothing was changed, retry in ${DATABASE_BUSY_RETRY_AFTER_SECONDS} seconds`, undefined, {
      retryAfter: DATABASE_BUSY_RETRY_AFTER_SECONDS,
    });
  }
  return null;
}

/** What a client is told to wait after a statement that ran out of time (Retry-After, seconds). */
export const DATABASE_BUSY_RETRY_AFTER_SECONDS = 1;
