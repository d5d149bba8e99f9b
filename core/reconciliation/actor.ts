import type { Tx } from '../../db/client';
import { recordAudit } from '../platform/audit';

/**
 * Who takes a reconciliation action, as the audit log and the order's resolution name them: a
 * signed-in user (by e-mail) or an API key (by its id), from an IP. The API and the dashboard
 * build it; the domain operation records it, in the action's transaction.
 */
export interface Actor {
  organizationId: string;
  userId: string | null;
  /** As people read it: the user's e-mail, or "api key <id>". */
  name: string;
  ip: string | null;
}

export const apiKeyActor = (organizationId: string, keyId: string, ip: string | null): Actor => ({ organizationId, userId: null, name: `api key ${keyId}`, ip });

export async function auditAction(tx: Tx, actor: Actor, action: string, target: string, detail: Record<string, unknown>): Promise<void> {
  await recordAudit(tx, { organizationId: actor.organizationId, userId: actor.userId, actor: actor.name, action, target, detail, ip: actor.ip });
}

/** A reason as given, trimmed; required and bounded by the request schema and the dashboard form alike. */
export const REASON_MAX_LENGTH = 500;
