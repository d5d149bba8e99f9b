import { and, count, eq } from 'drizzle-orm';
import { addressAssignments, events, orders, poolAddresses } from '../../db/schema';
import { deleteCheckpoint, getCheckpoint, setCheckpoint, type Checkpoint } from '../../core/chains/checkpoints';
import { testDb } from './harness';
import { randomEvmAddress } from './pool';

export const CHAIN = 'ethereum-local';

/** Token addresses on ethereum-local (normally learnt from the deployed test tokens). */
export function tokenEnv(): Record<string, string> {
  return {
    TOKEN_ETHEREUM_LOCAL_USDT: randomEvmAddress(),
    TOKEN_ETHEREUM_LOCAL_USDC: randomEvmAddress(),
    TOKEN_ETHEREUM_LOCAL_DAI: randomEvmAddress(),
  };
}

/** Moves the local chain's checkpoint to a block time (the scanner does it in production). */
export async function checkpointAt(blockTimestamp: Date, blockNumber = 1000): Promise<void> {
  await setCheckpoint(testDb(), { chainId: CHAIN, blockNumber, blockHash: `0x${'ab'.repeat(32)}`, blockTimestamp });
}

/**
 * Each test file has its own database, but the suites of one file share it: a suite that moves the
 * chain's checkpoint and is followed by another of the same file (style A, then B) puts it back.
 */
export function preserveCheckpoint(): void {
  let saved: Checkpoint | null = null;
  before(async () => {
    saved = await getCheckpoint(testDb(), CHAIN);
  });
  after(async () => {
    if (saved) await setCheckpoint(testDb(), saved);
    else await deleteCheckpoint(testDb(), CHAIN);
  });
}

/** What an organization has stored: orders, open assignments, events, pool status counts. */
export async function orgFootprint(organizationId: string) {
  const db = testDb();
  const [{ n: orderCount }] = await db.select({ n: count() }).from(orders).where(eq(orders.organizationId, organizationId));
  const [{ n: assignmentCount }] = await db.select({ n: count() }).from(addressAssignments).where(eq(addressAssignments.organizationId, organizationId));
  const [{ n: eventCount }] = await db.select({ n: count() }).from(events).where(eq(events.organizationId, organizationId));
  const pool = await db.select({ status: poolAddresses.status }).from(poolAddresses).where(eq(poolAddresses.organizationId, organizationId));
  const notAvailable = pool.filter((p) => p.status !== 'available').length;
  return { orderCount, assignmentCount, eventCount, poolSize: pool.length, notAvailable };
}

export async function eventsOf(organizationId: string, type?: string) {
  const db = testDb();
  const rows = await db
    .select()
    .from(events)
    .where(type ? and(eq(events.organizationId, organizationId), eq(events.type, type)) : eq(events.organizationId, organizationId));
  return rows;
}

export async function poolAddressOf(address: string) {
  const [row] = await testDb().select().from(poolAddresses).where(eq(poolAddresses.address, address));
  return row;
}

/** A POST /orders answer with what an outage test measures: status, Retry-After, body, and how long it took. */
export interface TimedOrderAnswer {
  status: number;
  retryAfter: string | null;
  body: any;
  tookMs: number;
}

/** Sends one POST /orders to a running API (a real process) and times the answer. */
export async function postOrderTimed(base: string, apiKey: string, order: Record<string, unknown>): Promise<TimedOrderAnswer> {
  const started = Date.now();
  const res = await fetch(`${base}/api/v1/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
    body: JSON.stringify(order),
  });
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json(), tookMs: Date.now() - started };
}
