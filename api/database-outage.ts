import { AppError } from '../core/platform/errors';
import { isDatabaseUnreachable } from '../db/client';

/** What a client is told to wait while the database is unreachable (Retry-After, seconds). */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

/**
 * The answer to a request that failed because the database is unreachable: 503 with Retry-After,
 * in the deployment's error format (issue 32; nothing was written, the client may simply retry).
 * Null for any other error.
 */
export function databaseOutageError(err: unknown): AppError | null {
  if (!isDatabaseUnreachable(err)) return null;
  return new AppError('SERVICE_UNAVAILABLE', `The database is unreachable just now; nothing was changed, retry in ${DATABASE_RETRY_AFTER_SECONDS} seconds`, undefined, {
    retryAfter: DATABASE_RETRY_AFTER_SECONDS,
  });
}
