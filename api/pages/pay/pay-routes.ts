import express, { type Request, type Response } from 'express';
import { findPaymentPage, presentPaymentPage } from '../../../core/orders/payment-page';
import type { ApiDeps } from '../../deps';
import { MESSAGES, pickLanguage } from '../i18n';
import { messagePage } from '../layout';
import { renderPayPage } from './pay-page';
import { paymentStatusJson } from './pay-status';

/**
 * Mounted at /pay. The hosted payment page (issue 18): GET /pay/<token> (HTML) and GET /pay/<token>/status (JSON
 * the page polls). No API key: the unguessable token is the only key, and it reaches one order.
 */
export function payRoutes(deps: ApiDeps): express.Router {
  const router = express.Router();

  router.get('/:token', async (req, res) => {
    const lang = pickLanguage(req);
    const t = MESSAGES[lang];
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Vary', 'Accept-Language');
    res.setHeader('Content-Language', lang);
    const facts = await findPaymentPage(deps, req.params.token);
    if (!facts) {
      res.status(404).type('html').send(messagePage(lang, t, t.notFoundTitle, t.notFoundText));
      return;
    }
    const view = await presentPaymentPage(deps, facts, deps.clock.now());
    const path = `/pay/${encodeURIComponent(req.params.token)}`;
    res.type('html').send(await renderPayPage(view, paymentStatusJson(view), { lang, t, path, statusUrl: `${path}/status` }));
  });

  router.get('/:token/status', async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    const facts = await findPaymentPage(deps, req.params.token);
    if (!facts) {
      res.status(404).json({ error: 'NOT_FOUND', message: 'No payment for this link' });
      return;
    }
    res.json(paymentStatusJson(await presentPaymentPage(deps, facts, deps.clock.now())));
  });

  return router;
}

/** An HTML page for browsers, JSON for the status endpoint (the page's script reads it). */
export function wantsJson(req: Request): boolean {
  return req.path.endsWith('/status');
}

export function sendPageError(req: Request, res: Response, status: number, kind: 'notFound' | 'tooMany' | 'error'): void {
  if (wantsJson(req)) {
    const error = { notFound: 'NOT_FOUND', tooMany: 'RATE_LIMIT_EXCEEDED', error: 'INTERNAL_ERROR' }[kind];
    res.status(status).json({ error, message: kind === 'tooMany' ? 'Too many requests; retry later' : error === 'NOT_FOUND' ? 'Not found' : 'Internal error' });
    return;
  }
  const lang = pickLanguage(req);
  const t = MESSAGES[lang];
  const [title, text] =
    kind === 'notFound' ? [t.notFoundTitle, t.notFoundText] : kind === 'tooMany' ? [t.tooManyTitle, t.tooManyText] : [t.errorTitle, t.errorText];
  res.status(status).setHeader('Cache-Control', 'no-store');
  res.type('html').send(messagePage(lang, t, title, text));
}
