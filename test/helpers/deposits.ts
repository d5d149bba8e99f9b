import { and, asc, eq } from 'drizzle-orm';
import { events } from '../../db/schema';
import { testDb } from './harness';
import { randomEvmAddress } from './pool';

/** Token contracts of ethereum-local for a test run (the chain tests deploy real ones). */
export function tokenEnv(): Record<string, string> {
  return {
    TOKEN_ETHEREUM_LOCAL_USDT: randomEvmAddress(),
    TOKEN_ETHEREUM_LOCAL_USDC: randomEvmAddress(),
    TOKEN_ETHEREUM_LOCAL_DAI: randomEvmAddress(),
  };
}

export async function eventsOf(organizationId: string, type?: string) {
  return testDb()
    .select()
    .from(events)
    .where(and(eq(events.organizationId, organizationId), type ? eq(events.type, type) : undefined))
    .orderBy(asc(events.createdAt), asc(events.id));
}
