import type { Request, Response } from 'express';
import { confirmRecipient, recipientOfToken } from '../../../core/organizations/alert-recipients';
import type { ApiDeps } from '../../deps';
import { html } from '../html';
import { MESSAGES, pickLanguage } from '../i18n';
import { layout } from '../layout';
import { sendPageError } from '../pay/pay-routes';

/**
 * The link of an alert recipient's confirmation e-mail (issue 32): GET shows what is asked with a
 * button, POST confirms. A GET never confirms: mail scanners and link previews open links.
 */
export function alertConfirmRoutes(deps: ApiDeps): { method: 'get' | 'post'; path: string; handler: (req: Request<{ token: string }>, res: Response) => Promise<void> }[] {
  const page = (req: Request, res: Response, title: string, body: ReturnType<typeof html>) => {
    const lang = pickLanguage(req);
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(layout({ lang, t: MESSAGES[lang], title, body: html`<main class="card"><h1>${title}</h1>${body}</main>` }).text);
  };
  return [
    {
      method: 'get',
      path: '/alerts/confirm/:token',
      async handler(req, res) {
        const recipient = await recipientOfToken(deps.db, req.params.token);
        if (!recipient) return sendPageError(req, res, 404, 'notFound');
        if (recipient.confirmed) return page(req, res, 'Already confirmed', html`<p>${recipient.email} receives the alerts of organization ${recipient.organizationId}.</p>`);
        page(
          req,
          res,
          'Confirm alert e-mails',
          html`<p>Organization ${recipient.organizationId} asks to send its operational alerts to ${recipient.email}.</p>
<form method="post"><button type="submit">Yes, send me these alerts</button></form>
<p>If you did not expect this, close this page: nothing is sent to you unless you confirm.</p>`,
        );
      },
    },
    {
      method: 'post',
      path: '/alerts/confirm/:token',
      async handler(req, res) {
        const confirmed = await confirmRecipient(deps.db, req.params.token, deps.clock.now());
        if (!confirmed) return sendPageError(req, res, 404, 'notFound');
        page(req, res, 'Confirmed', html`<p>${confirmed.email} now receives the alerts of organization ${confirmed.organizationId}. To stop them, ask its administrators to remove the address from alerts.email.</p>`);
      },
    },
  ];
}
