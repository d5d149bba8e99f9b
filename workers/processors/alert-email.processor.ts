import { sendAlertEmails } from '../../core/alerts/alert-emails';
import type { Processor } from './types';

/** Mails new alert events and retries due failures (core/alerts/alert-emails.ts). */
export const alertEmailProcessor: Processor<'alert-email'> = async (ctx) => sendAlertEmails(ctx);
