import { and, eq, gte, sql } from 'drizzle-orm';
import type { Transporter } from 'nodemailer';
import { prepareStatement, type Database } from '../../db/client';
import { alertEmails } from '../../db/schema';
import type { ServiceContext } from '../service/context';
import { countAlertEmail } from '../platform/metrics';
import { alertEmailList, getConfigValue } from '../organizations/org-config';
import { claimDueConfirmations, composeConfirmationEmail, confirmedRecipients, releaseConfirmation } from '../organizations/alert-recipients';

/**
 * Alert events (`alert.*`, from the outbox) also go by e-mail to the organization's `alerts.email`
 * addresses. The alert-email job picks new alert events into alert_emails rows, then sends the
 * due ones: a claim in a short transaction, the SMTP conversation outside any transaction (never
 * inside a money transaction: the event was committed long before), the outcome in another.
 * Failures retry with backoff; each organization gets at most ALERT_EMAILS_PER_HOUR. Alerts go only to
 * the addresses that confirmed (alert-recipients.ts); the same job sends the confirmation e-mails.
 */

/** Alert events older than this when first seen are not mailed (a deployment turning SMTP on does not mail history). */
const LOOKBACK_MS = 3600_000;
/** Delay before each retry of a failed send; the row is `failed` after the last. */
export const ALERT_EMAIL_RETRY_MS = [30_000, 120_000, 600_000, 3600_000, 6 * 3600_000];
/** A claimed send is retried after this if its worker died before recording the outcome. */
const CLAIM_LEASE_MS = 120_000;
const BATCH = 50;

export interface AlertEmailRun {
  queued: number;
  sent: number;
  failed: number;
  rateLimited: number;
  noRecipients: number;
  /** Confirmation e-mails sent to new recipients. */
  confirmations: number;
}

/** This context's transporter for `url` (kept on the context: contexts share none). */
export function transporter(ctx: Pick<ServiceContext, 'memory'>, url: string): Transporter {
  const transporters = ctx.memory.mailTransporters;
  let t = transporters.get(url);
  // Required on first use: a process without SMTP_URL never loads nodemailer (about 40 modules).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!t) transporters.set(url, (t = (require('nodemailer') as typeof import('nodemailer')).createTransport({ url, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 })));
  return t;
}

const p = sql.placeholder;
/** A row per alert event not seen yet since `since`. */
const queueNewStatement = prepareStatement<{ now: string; since: string }>(
  'alerts.queue_new',
  sql`
    insert into alert_emails (event_id, organization_id, status, next_attempt_at)
    select e.id, e.organization_id, 'pending', ${p('now')}::timestamptz
      from events e
     where e.type like 'alert.%' and e.created_at >= ${p('since')}::timestamptz
       and not exists (select 1 from alert_emails a where a.event_id = e.id)
    on conflict (event_id) do nothing
    returning event_id`,
);

/** A claimed e-mail's row (driver values: timestamps as text). */
interface ClaimedEmailRow extends Record<string, unknown> {
  event_id: string;
  organization_id: string;
  attempts: number;
  type: string;
  data: Record<string, unknown>;
  created_at: string;
}

const claimDueStatement = prepareStatement<{ now: string; lease: string }>(
  'alerts.claim_due',
  sql`
    with due as (
      select event_id from alert_emails
       where status = 'pending' and next_attempt_at <= ${p('now')}::timestamptz
       order by next_attempt_at limit ${BATCH}
       for update skip locked)
    update alert_emails a set next_attempt_at = ${p('lease')}::timestamptz, attempts = a.attempts + 1
      from due, events e
     where a.event_id = due.event_id and e.id = a.event_id
    returning a.event_id, a.organization_id, a.attempts, e.type, e.data, e.created_at`,
);

/** One run of the alert-email job. Without SMTP_URL it does nothing (alerts go by webhook only). */
export async function sendAlertEmails(ctx: ServiceContext): Promise<AlertEmailRun> {
  const run: AlertEmailRun = { queued: 0, sent: 0, failed: 0, rateLimited: 0, noRecipients: 0, confirmations: 0 };
  const smtp = ctx.config.smtp;
  if (!smtp) return run;
  const now = ctx.clock.now();
  run.confirmations = await sendConfirmations(ctx, smtp, now);
  run.queued = await queueNewAlertEvents(ctx.db, now);
  for (const claimed of await claimDue(ctx.db, now)) {
    const outcome = await sendOne(ctx, claimed, smtp);
    run[outcome]++;
  }
  return run;
}

/** A row per alert event not seen yet (recent ones only). Idempotent: the event id is the key. */
async function queueNewAlertEvents(db: Database, now: Date): Promise<number> {
  const since = new Date(now.getTime() - LOOKBACK_MS);
  const rows = await queueNewStatement.run(db, { now: now.toISOString(), since: since.toISOString() });
  return rows.length;
}

interface ClaimedEmail {
  eventId: string;
  organizationId: string;
  attempts: number;
  type: string;
  data: Record<string, unknown>;
  createdAt: Date;
}

/** Takes due rows for this worker: moves them past a lease so no other worker sends them too. */
async function claimDue(db: Database, now: Date): Promise<ClaimedEmail[]> {
  const lease = new Date(now.getTime() + CLAIM_LEASE_MS);
  const rows = await claimDueStatement.run<ClaimedEmailRow>(db, { now: now.toISOString(), lease: lease.toISOString() });
  return rows.map((r) => ({ eventId: r.event_id, organizationId: r.organization_id, attempts: Number(r.attempts), type: r.type, data: r.data, createdAt: new Date(r.created_at) }));
}

/** The confirmation e-mails due (one per new recipient, within the daily limits); a failed send is due again next run. */
async function sendConfirmations(ctx: ServiceContext, smtp: { url: string; from: string }, now: Date): Promise<number> {
  let sent = 0;
  for (const due of await claimDueConfirmations(ctx.db, now)) {
    const message = composeConfirmationEmail(due.organizationId, `${ctx.config.publicBaseUrl}/alerts/confirm/${due.token}`);
    try {
      await transporter(ctx, smtp.url).sendMail({ from: smtp.from, to: due.email, subject: message.subject, text: message.text });
      sent++;
      ctx.logger.info({ organizationId: due.organizationId }, 'alert recipient confirmation e-mail sent');
    } catch (err) {
      await releaseConfirmation(ctx.db, due);
      ctx.logger.warn({ organizationId: due.organizationId, error: (err as Error).message.slice(0, 500) }, 'alert recipient confirmation e-mail failed: will retry');
    }
  }
  return sent;
}

async function sendOne(ctx: ServiceContext, email: ClaimedEmail, smtp: { url: string; from: string }): Promise<keyof Omit<AlertEmailRun, 'queued' | 'confirmations'>> {
  const listed = alertEmailList(await getConfigValue<string | null>(ctx.db, email.organizationId, 'alerts.email'));
  // Only the addresses that agreed to receive alerts (issue 32).
  const confirmed = await confirmedRecipients(ctx.db, email.organizationId, listed);
  const recipients = confirmed.length > 0 ? confirmed.join(',') : null;
  const finish = (set: Partial<typeof alertEmails.$inferInsert>) =>
    ctx.db.update(alertEmails).set(set).where(and(eq(alertEmails.eventId, email.eventId), eq(alertEmails.status, 'pending')));
  if (!recipients) {
    await finish({ status: 'no_recipients', nextAttemptAt: null });
    return 'noRecipients';
  }
  const now = ctx.clock.now();
  const hourAgo = new Date(now.getTime() - 3600_000);
  const [{ n }] = await ctx.db
    .select({ n: sql<number>`count(*)::int` })
    .from(alertEmails)
    .where(and(eq(alertEmails.organizationId, email.organizationId), eq(alertEmails.status, 'sent'), gte(alertEmails.sentAt, hourAgo)));
  if (n >= ctx.config.alertEmailsPerHour) {
    await finish({ status: 'rate_limited', nextAttemptAt: null });
    countAlertEmail('rate_limited');
    ctx.logger.warn({ organizationId: email.organizationId, eventId: email.eventId, type: email.type, perHour: ctx.config.alertEmailsPerHour }, 'alert e-mail not sent: the organization reached its hourly limit');
    return 'rateLimited';
  }
  const message = composeAlertEmail(email);
  try {
    await transporter(ctx, smtp.url).sendMail({ from: smtp.from, to: recipients.split(','), subject: message.subject, text: message.text, headers: { 'X-Stablegate-Event-Id': email.eventId } });
  } catch (err) {
    const error = (err as Error).message.slice(0, 500);
    const delay = ALERT_EMAIL_RETRY_MS[email.attempts - 1];
    await finish(delay === undefined ? { status: 'failed', lastError: error, nextAttemptAt: null } : { lastError: error, nextAttemptAt: new Date(ctx.clock.now().getTime() + delay) });
    countAlertEmail('failed');
    ctx.logger.warn(
      { organizationId: email.organizationId, eventId: email.eventId, attempt: email.attempts, error, nextAttemptAt: delay === undefined ? null : new Date(ctx.clock.now().getTime() + delay).toISOString() },
      delay === undefined ? 'alert e-mail failed: giving up' : 'alert e-mail failed: will retry',
    );
    return 'failed';
  }
  await finish({ status: 'sent', recipients, sentAt: ctx.clock.now(), nextAttemptAt: null, lastError: null });
  countAlertEmail('sent');
  ctx.logger.info({ organizationId: email.organizationId, eventId: email.eventId, type: email.type, recipients: recipients.split(',').length }, 'alert e-mail sent');
  return 'sent';
}

/** Subject and plain-text body of an alert e-mail: what happened, for which organization, and the event id. */
export function composeAlertEmail(email: Pick<ClaimedEmail, 'eventId' | 'organizationId' | 'type' | 'data' | 'createdAt'>): { subject: string; text: string } {
  const d = email.data;
  const subject =
    email.type === 'alert.address_pool_low'
      ? `[Stablegate] Address pool low: ${d.available} of ${d.total} ${d.protocol} addresses available`
      : `[Stablegate] ${email.type.replace(/^alert\./, '').replace(/_/g, ' ')}`;
  const lines = [
    `Alert ${email.type} for organization ${email.organizationId}`,
    `at ${email.createdAt.toISOString()}`,
    '',
    ...Object.entries(d).map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : String(v)}`),
    '',
    email.type === 'alert.address_pool_low' ? 'Add addresses: POST /api/v1/address-pool/import (CSV) or POST /api/v1/address-pool/derive (xpub).' : '',
    `Event id: ${email.eventId} (the same event went to your webhook endpoints subscribed to ${email.type}).`,
    'You get this because your organization configuration alerts.email lists this address and you confirmed it.',
  ];
  return { subject, text: lines.filter((l, i, all) => !(l === '' && all[i - 1] === '')).join('\n') + '\n' };
}
