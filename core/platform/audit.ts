import { and, count, desc, eq } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { auditLog } from '../../db/schema';
import { newId } from '../platform/ids';
import { paginate } from '../platform/sql-fragments';

/**
 * The audit log of security-relevant and settings changes: who (the user's e-mail), what, when and
 * from which IP. Never a secret: a created key is recorded by its id and prefix, a password change
 * as the fact alone.
 */
export interface AuditEntry {
  organizationId: string | null;
  userId: string | null;
  actor: string;
  action: string;
  target?: string | null;
  detail?: Record<string, unknown> | null;
  ip?: string | null;
}

export interface AuditView extends AuditEntry {
  id: string;
  createdAt: Date;
}

export async function recordAudit(db: DbOrTx, entry: AuditEntry): Promise<void> {
  await db.insert(auditLog).values({
    id: newId('aud'),
    organizationId: entry.organizationId,
    userId: entry.userId,
    actor: entry.actor,
    action: entry.action,
    target: entry.target ?? null,
    detail: entry.detail ?? null,
    ip: entry.ip ?? null,
  });
}

/** One page of an organization's audit log, newest first. */
export async function listAudit(db: DbOrTx, organizationId: string, page: { page: number; limit: number }): Promise<{ items: AuditView[]; total: number }> {
  const where = eq(auditLog.organizationId, organizationId);
  const [{ n }] = await db.select({ n: count() }).from(auditLog).where(where);
  const rows = await paginate(db.select().from(auditLog).where(and(where)).orderBy(desc(auditLog.createdAt), desc(auditLog.id)).$dynamic(), page);
  return {
    items: rows.map((r) => ({ ...r, detail: (r.detail as Record<string, unknown> | null) ?? null })),
    total: n,
  };
}
