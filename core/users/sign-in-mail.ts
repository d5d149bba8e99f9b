import { transporter } from '../alerts/alert-emails';
import type { ServiceContext } from '../service/context';
import { issueSignInLink } from './sign-in-links';
import { addMember, findUserByEmail, type UserView } from './users';
import { getOrganization, type Caller } from '../organizations/organizations';
import type { Role } from '../organizations/roles';

/**
 * One-time links by e-mail (sign-in, invitation) when the deployment has SMTP_URL; false when it
 * has none (the dashboard then shows an invitation link to the inviting person instead). The link
 * is in the message only: never in a log line.
 */
export async function mailOneTimeLink(
  ctx: Pick<ServiceContext, 'config' | 'memory'>,
  input: { to: string; link: string; purpose: 'sign-in' | 'invitation'; organizationName?: string },
): Promise<boolean> {
  const smtp = ctx.config.smtp;
  if (!smtp) return false;
  const invitation = input.purpose === 'invitation';
  await transporter(ctx, smtp.url).sendMail({
    from: smtp.from,
    to: input.to,
    subject: invitation ? `You are invited to ${input.organizationName ?? 'an organization'} on Stablegate` : 'Your Stablegate sign-in link',
    text:
      (invitation
        ? `You have been invited to ${input.organizationName ?? 'an organization'} on Stablegate.\n\nAccept (the link works once, for 7 days):\n`
        : 'Sign in to the Stablegate dashboard (the link works once, for 24 hours):\n') +
      `${input.link}\n\nIf you did not expect this message, ignore it.\n`,
  });
  return true;
}

/**
 * "E-mail me a sign-in link": a one-time link to the address's account, when it has one. The
 * asker is answered the same either way, so a send that fails is logged, not thrown (a failure
 * for known addresses only would tell which have an account).
 */
export async function mailSignInLinkTo(ctx: Pick<ServiceContext, 'config' | 'memory' | 'db' | 'clock' | 'logger'>, email: string): Promise<void> {
  const user = email ? await findUserByEmail(ctx.db, email) : null;
  if (!user) return;
  const token = await issueSignInLink(ctx.db, user.id, 'sign-in', ctx.clock.now());
  await mailOneTimeLink(ctx, { to: user.email, link: `${ctx.config.publicBaseUrl}/dashboard/link/${token}`, purpose: 'sign-in' }).catch((err: Error) =>
    ctx.logger.warn({ err: { message: err.message.slice(0, 500) } }, 'sign-in link e-mail not sent'),
  );
}

/**
 * An invitation: the membership with the role, and a one-time link e-mailed to the person when
 * the deployment can send mail (`mailed`); otherwise, or when the send fails, the inviting person
 * is shown `link` to pass on.
 */
export async function inviteMember(
  ctx: Pick<ServiceContext, 'config' | 'memory' | 'db' | 'clock' | 'logger'>,
  caller: Caller,
  input: { email: string; role: string },
): Promise<{ user: UserView; role: Role; link: string; mailed: boolean }> {
  const { user, role } = await addMember(ctx.db, caller, input);
  const token = await issueSignInLink(ctx.db, user.id, 'invitation', ctx.clock.now());
  const link = `${ctx.config.publicBaseUrl}/dashboard/link/${token}`;
  const { name } = await getOrganization(ctx.db, caller);
  const mailed = await mailOneTimeLink(ctx, { to: user.email, link, purpose: 'invitation', organizationName: name }).catch((err: Error) => {
    ctx.logger.warn({ err: { message: err.message.slice(0, 500) } }, 'invitation e-mail not sent; the link is shown instead');
    return false;
  });
  return { user, role, link, mailed };
}
