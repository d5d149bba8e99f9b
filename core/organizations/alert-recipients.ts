import { createHash, randomBytes } from 'node:crypto';
import { and, eq, gt, inArray, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { alertRecipients } from '../../db/schema';

/**
 * Alert recipients who agreed (issue 32). alerts.email took any 10 addresses, so a tenant admin
 * could send up to 100 alert e-mails an hour to anyone. Now each address gets one confirmation
 * e-mail with a link, and alert e-mails go only to addresses that followed it. The confirmation
 * e-mails are limited too: per address across organizations, and per organization, a day.
 */

/** Confirmation e-mails one address receives a day, whichever organizations list it. */
export const CONFIRMATIONS_PER_ADDRESS_PER_DAY = 3;
/** Confirmation e-mails one organization sends a day. */
export const CONFIRMATIONS_PER_ORGANIZATION_PER_DAY = 20;
const DAY_MS = 86_400_000;

const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** New addresses of an organization's alerts.email, unconfirmed (known ones keep their state). */
export async function addAlertRecipients(db: DbOrTx, organizationId: string, emails: string[]): Promise<void> {
  if (emails.length === 0) return;
  await db
    .insert(alertRecipients)
    .values(emails.map((email) => ({ organizationId, email })))
    .onConflictDoNothing();
}

export interface RecipientState {
  email: string;
  confirmed: boolean;
  /** When its confirmation e-mail went out; null: not yet (SMTP off, or held by the limits). */
  confirmationSentAt: Date | null;
}

/** Each of `emails` (an alerts.email list) with whether it confirmed. */
export async function recipientStates(db: DbOrTx, organizationId: string, emails: string[]): Promise<RecipientState[]> {
  if (emails.length === 0) return [];
  const rows = await db
    .select()
    .from(alertRecipients)
    .where(and(eq(alertRecipients.organizationId, organizationId), inArray(alertRecipients.email, emails)));
  const byEmail = new Map(rows.map((r) => [r.email, r]));
  return emails.map((email) => {
    const row = byEmail.get(email);
    return { email, confirmed: Boolean(row?.confirmedAt), confirmationSentAt: row?.confirmationSentAt ?? null };
  });
}

/** The addresses of `emails` that confirmed: the only ones an alert e-mail goes to. */
export async function confirmedRecipients(db: DbOrTx, organizationId: string, emails: string[]): Promise<string[]> {
  return (await recipientStates(db, organizationId, emails)).filter((r) => r.confirmed).map((r) => r.email);
}

export interface DueConfirmation {
  organizationId: string;
  email: string;
  /** The secret of the link, known only to this send (stored hashed). */
  token: string;
}

/**
 * Claims the confirmation e-mails due now: addresses on an alerts.email list that were never sent
 * one, within the daily limits (a held one is sent on a later run). The claim is the send's mark
 * (confirmation_sent_at, the token's hash), so two workers never send the same one; a send that
 * fails is given back with `releaseConfirmation`.
 */
export async function claimDueConfirmations(db: DbOrTx, now: Date, limit = 20): Promise<DueConfirmation[]> {
  const dayAgo = new Date(now.getTime() - DAY_MS);
  const candidates = await db
    .select({ organizationId: alertRecipients.organizationId, email: alertRecipients.email })
    .from(alertRecipients)
    .where(
      and(
        isNull(alertRecipients.confirmationSentAt),
        isNull(alertRecipients.confirmedAt),
        sql`exists (select 1 from organization_config c where c.organization_id = ${alertRecipients.organizationId} and c.key = 'alerts.email'
                     and ${alertRecipients.email} = any(string_to_array(c.value #>> '{}', ',')))`,
      ),
    )
    .orderBy(alertRecipients.createdAt)
    .limit(limit);
  const claimed: DueConfirmation[] = [];
  for (const c of candidates) {
    const sentSince = (where: ReturnType<typeof eq>) =>
      db.select({ n: sql<number>`count(*)::int` }).from(alertRecipients).where(and(where, gt(alertRecipients.confirmationSentAt, dayAgo)));
    const [{ n: toAddress }] = await sentSince(eq(alertRecipients.email, c.email));
    if (toAddress >= CONFIRMATIONS_PER_ADDRESS_PER_DAY) continue;
    const [{ n: byOrganization }] = await sentSince(eq(alertRecipients.organizationId, c.organizationId));
    if (byOrganization >= CONFIRMATIONS_PER_ORGANIZATION_PER_DAY) continue;
    const token = randomBytes(24).toString('base64url');
    const [row] = await db
      .update(alertRecipients)
      .set({ tokenHash: hashToken(token), confirmationSentAt: now })
      .where(and(eq(alertRecipients.organizationId, c.organizationId), eq(alertRecipients.email, c.email), isNull(alertRecipients.confirmationSentAt)))
      .returning({ email: alertRecipients.email });
    if (row) claimed.push({ ...c, token });
  }
  return claimed;
}

/** A confirmation e-mail that could not be sent: due again on the next run. */
export async function releaseConfirmation(db: DbOrTx, due: Pick<DueConfirmation, 'organizationId' | 'email'>): Promise<void> {
  await db
    .update(alertRecipients)
    .set({ tokenHash: null, confirmationSentAt: null })
    .where(and(eq(alertRecipients.organizationId, due.organizationId), eq(alertRecipients.email, due.email), isNull(alertRecipients.confirmedAt)));
}

/** The recipient a confirmation link names, or null for an unknown token. */
export async function recipientOfToken(db: DbOrTx, token: string): Promise<{ organizationId: string; email: string; confirmed: boolean } | null> {
  if (!/^[A-Za-z0-9_-]{32}$/.test(token)) return null;
  const [row] = await db.select().from(alertRecipients).where(eq(alertRecipients.tokenHash, hashToken(token)));
  return row ? { organizationId: row.organizationId, email: row.email, confirmed: row.confirmedAt !== null } : null;
}

/** Confirms the recipient of a link (again: no change). Null for an unknown token. */
export async function confirmRecipient(db: DbOrTx, token: string, now: Date): Promise<{ organizationId: string; email: string } | null> {
  const found = await recipientOfToken(db, token);
  if (!found) return null;
  await db
    .update(alertRecipients)
    .set({ confirmedAt: now })
    .where(and(eq(alertRecipients.tokenHash, hashToken(token)), isNull(alertRecipients.confirmedAt)));
  return { organizationId: found.organizationId, email: found.email };
}

/** Subject and text of the confirmation e-mail. */
export function composeConfirmationEmail(organizationId: string, link: string): { subject: string; text: string } {
  return {
    subject: '[Stablegate] Confirm that you want alert e-mails',
    text:
      `Organization ${organizationId} on a Stablegate deployment asked to send its operational alerts\n` +
      `(address pool low, chain stalled, webhook endpoint failing, ...) to this address.\n\n` +
      `To agree, open this link and confirm:\n${link}\n\n` +
      `If you did not expect this, ignore this e-mail: nothing is sent to you unless you confirm,\n` +
      `and no other confirmation request comes from this organization.\n`,
  };
}
