import { eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { serviceState } from '../../db/schema';

/** Service-wide facts that survive restarts (service_state): read and written as JSON. */
export async function getServiceState<T>(db: DbOrTx, key: string): Promise<T | null> {
  const [row] = await db.select().from(serviceState).where(eq(serviceState.key, key));
  return row ? (row.value as T) : null;
}

export async function setServiceState(db: DbOrTx, key: string, value: unknown): Promise<void> {
  await db
    .insert(serviceState)
    .values({ key, value: value as never, updatedAt: sql`now()` as never })
    .onConflictDoUpdate({ target: serviceState.key, set: { value: value as never, updatedAt: sql`now()` } });
}
