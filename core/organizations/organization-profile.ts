import { eq } from 'drizzle-orm';
import type { Database, DbOrTx } from '../../db/client';
import { organizations } from '../../db/schema';
import { isEmailAddress } from '../platform/config';
import { forbidden, notFound, validationError } from '../platform/errors';
import { recordAudit, type AuditEntry } from '../platform/audit';
import { isHttpUrl } from './org-config';
import type { Caller } from './organizations';
import { roleAtLeast } from './roles';

/**
 * What payers see of an organization (issue 40: every payer page said "Payment to Local
 * organization" and nothing could rename it): its display name and a support contact. Read and
 * changed here only; the API (PUT /organizations/:id) and the dashboard (Settings, Organization)
 * both call updateOrganizationProfile, which checks the role itself.
 */
export interface OrganizationProfile {
  id: string;
  name: string;
  /** An e-mail address or an http(s) URL shown to payers; null when none is set. */
  supportContact: string | null;
  createdAt: Date;
}

export interface OrganizationProfileChanges {
  name?: unknown;
  /** Null or "" removes it. */
  supportContact?: unknown;
}

/** Who made a change, as the audit log records it. */
export type ChangedBy = Pick<AuditEntry, 'userId' | 'actor' | 'ip'>;

export const ORGANIZATION_NAME_MAX = 100;
export const SUPPORT_CONTACT_MAX = 320;
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/** The caller's own organization; another organization's id answers 404, like one that does not exist. */
export async function getOrganizationProfile(db: DbOrTx, caller: Caller, organizationId = caller.organizationId): Promise<OrganizationProfile> {
  if (organizationId !== caller.organizationId) throw notFound('Organization');
  const [row] = await db.select().from(organizations).where(eq(organizations.id, organizationId));
  if (!row) throw notFound('Organization');
  return { id: row.id, name: row.name, supportContact: row.supportContact, createdAt: row.createdAt };
}

/**
 * Renames the organization and/or sets its support contact (Admin and Owner; Member and Viewer
 * are refused), audit-logged in the same transaction with the values before and after. Every
 * field is checked before anything is written; fields not given stay as they are.
 */
export async function updateOrganizationProfile(
  db: Database,
  caller: Caller,
  organizationId: string,
  changes: OrganizationProfileChanges,
  by: ChangedBy,
): Promise<OrganizationProfile> {
  if (organizationId !== caller.organizationId) throw notFound('Organization');
  if (!roleAtLeast(caller.role, 'admin')) throw forbidden("Changing the organization's name or support contact needs the admin role or higher");
  const set: { name?: string; supportContact?: string | null } = {};
  if (changes.name !== undefined) set.name = checkedName(changes.name);
  if (changes.supportContact !== undefined) set.supportContact = checkedSupportContact(changes.supportContact);
  if (Object.keys(set).length === 0) {
    throw validationError('Give name and/or supportContact', [{ field: 'name', message: 'name or supportContact is required' }]);
  }
  return db.transaction(async (tx) => {
    const before = await getOrganizationProfile(tx, caller, organizationId);
    const [row] = await tx.update(organizations).set(set).where(eq(organizations.id, organizationId)).returning();
    const detail: Record<string, { from: string | null; to: string | null }> = {};
    for (const field of ['name', 'supportContact'] as const) {
      if (field in set && set[field] !== before[field]) detail[field] = { from: before[field], to: set[field] ?? null };
    }
    await recordAudit(tx, { organizationId, ...by, action: 'organization.updated', target: organizationId, detail });
    return { id: row.id, name: row.name, supportContact: row.supportContact, createdAt: row.createdAt };
  });
}

function checkedName(value: unknown): string {
  const problem = (message: string) => validationError(`name ${message}`, [{ field: 'name', message }]);
  if (typeof value !== 'string') throw problem('must be a string');
  const name = value.trim();
  if (name.length === 0 || name.length > ORGANIZATION_NAME_MAX) throw problem(`must have 1 to ${ORGANIZATION_NAME_MAX} characters (spaces around it are dropped)`);
  if (CONTROL_CHARACTERS.test(name)) throw problem('must not contain control characters (line breaks, tabs)');
  return name;
}

function checkedSupportContact(value: unknown): string | null {
  const problem = (message: string) => validationError(`supportContact ${message}`, [{ field: 'supportContact', message }]);
  if (value === null) return null;
  if (typeof value !== 'string') throw problem('must be an e-mail address, an http(s) URL, or null');
  const contact = value.trim();
  if (contact === '') return null;
  if (contact.length > SUPPORT_CONTACT_MAX) throw problem(`must have at most ${SUPPORT_CONTACT_MAX} characters`);
  if (!isEmailAddress(contact) && !isHttpUrl(contact)) {
    throw problem('must be an e-mail address (support@shop.example) or an absolute http(s) URL (https://shop.example/help); null removes it');
  }
  return contact;
}

/** How a payer page links a support contact: mailto: for an e-mail address, the URL itself otherwise. */
export function supportContactHref(contact: string): string {
  return isEmailAddress(contact) ? `mailto:${contact}` : contact;
}
