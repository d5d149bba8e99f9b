import { createHash } from 'node:crypto';
import { and, eq, lt } from 'drizzle-orm';
import type { Database } from '../../db/client';
import { idempotencyRecords } from '../../db/schema';
import { AppError } from './errors';
import { decryptSecret, encryptSecret } from './secrets';

/** How long a key is remembered (spec: 24 hours). */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** An in-flight record older than this belongs to a request that died; it may be taken over. */
const ABANDONED_AFTER_MS = 60_000;

export type IdempotencyOutcome =
  | { kind: 'proceed' }
  | { kind: 'replay'; status: number; body: unknown };

/** Method + path + hash of the canonical body (keys sorted), per design.md §4a. */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  const canonical = JSON.stringify(canonicalize(body ?? null));
  return createHash('sha256').update(`${method.toUpperCase()} ${path}\n${canonical}`).digest('hex');
}

function canonicalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonicalize);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value as object)
        .sort()
        .map((k) => [k, canonicalize((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/**
 * Claims (organization, key) for this request, or says how to answer it: replay a stored answer,
 * or 409 for another body / a request still in flight.
 */
export async function beginIdempotentRequest(
  db: Database,
  organizationId: string,
  key: string,
  fingerprint: string,
  now: Date,
  encryptionKey: Buffer,
): Promise<IdempotencyOutcome> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db
      .insert(idempotencyRecords)
      .values({ organizationId, key, fingerprint, state: 'in_progress', createdAt: now, expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS) })
      .onConflictDoNothing()
      .returning({ key: idempotencyRecords.key });
    if (inserted.length === 1) return { kind: 'proceed' };

    const [existing] = await db
      .select()
      .from(idempotencyRecords)
      .where(and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.key, key)));
    if (!existing) continue; // removed meanwhile: try to claim again
    const expired = existing.expiresAt.getTime() <= now.getTime();
    const abandoned = existing.state === 'in_progress' && now.getTime() - existing.createdAt.getTime() > ABANDONED_AFTER_MS;
    if (expired || abandoned) {
      await db
        .delete(idempotencyRecords)
        .where(and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.key, key), eq(idempotencyRecords.createdAt, existing.createdAt)));
      continue;
    }
    if (existing.fingerprint !== fingerprint) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request body');
    }
    if (existing.state === 'in_progress') {
      throw new AppError('IDEMPOTENCY_IN_PROGRESS', 'A request with this Idempotency-Key is still being processed; retry shortly');
    }
    return { kind: 'replay', status: existing.responseStatus ?? 200, body: openStoredBody(existing.responseBody, encryptionKey) };
  }
  throw new AppError('IDEMPOTENCY_IN_PROGRESS', 'A request with this Idempotency-Key is still being processed; retry shortly');
}

/**
 * Stored answers are sealed with the deployment's encryption key: a create answer may hold a
 * secret shown once (an API key, a webhook secret), which must never rest in clear.
 */
function sealBody(body: unknown, encryptionKey: Buffer): { sealed: string } {
  return { sealed: encryptSecret(JSON.stringify(body ?? null), encryptionKey) };
}

function openStoredBody(stored: unknown, encryptionKey: Buffer): unknown {
  const sealed = (stored as { sealed?: unknown } | null)?.sealed;
  if (typeof sealed !== 'string') throw new Error('idempotency record without a sealed body');
  return JSON.parse(decryptSecret(sealed, encryptionKey));
}

export async function completeIdempotentRequest(
  db: Database,
  organizationId: string,
  key: string,
  status: number,
  body: unknown,
  encryptionKey: Buffer,
): Promise<void> {
  await db
    .update(idempotencyRecords)
    .set({ state: 'completed', responseStatus: status, responseBody: sealBody(body, encryptionKey) as never })
    .where(and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.key, key)));
}

/** 5xx and 429 answers are not remembered: the client may retry with the same key. */
export async function releaseIdempotentRequest(db: Database, organizationId: string, key: string): Promise<void> {
  await db.delete(idempotencyRecords).where(and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.key, key)));
}

export async function deleteExpiredIdempotencyRecords(db: Database, now: Date): Promise<number> {
  const rows = await db.delete(idempotencyRecords).where(lt(idempotencyRecords.expiresAt, now)).returning({ key: idempotencyRecords.key });
  return rows.length;
}

