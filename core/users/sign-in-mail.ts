import { transporter } from '../alerts/alert-emails';
import type { ServiceContext } from '../service/context';

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
