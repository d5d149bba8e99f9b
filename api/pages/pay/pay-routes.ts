import type { ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { findPaymentPage } from '../../../core/orders/payment-page';
import { presentPaymentPage } from '../../../core/orders/payment-page-view';
import { healthStartedAt, isChainDegraded } from '../../../core/detection/chain-health';
import type { PaymentPageFacts } from '../../../core/orders/payment-page';
import type { ApiDeps } from '../../deps';
import { MESSAGES, pickLanguage } from '../i18n';
import { messagePage } from '../layout';
import { renderPayPage } from './pay-page';
import { sendJson, writeJson, writeJsonText } from '../../answer';
import { paymentStatusJson, paymentStatusText } from './pay-status';
import { databaseOutageError, DATABASE_RETRY_AFTER_SECONDS } from '../../database-outage';

/** A public page's own work, after the public headers and the per-IP limit (api/pages/index.ts). */
export type PageHandler = (req: Request<{ token: string }>, res: Response) => Promise<void>;

/**
 * The hosted payment page (issue 18): GET /pay/<token> (HTML) and GET /pay/<token>/status (JSON
 * the page polls). No API key: the unguessable token is the only key, and it reaches one order.
 * Full paths: api/pages/index.ts mounts them on the app itself.
 */
export function payRoutes(deps: ApiDeps): { path: string; handler: PageHandler }[] {
  healthStartedAt(deps); // dated from the app's build: a chain may have no head yet for a while after it
  const page: PageHandler = async (req, res) => {
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
    const view = await presentPage(deps, facts);
    const path = `/pay/${encodeURIComponent(req.params.token)}`;
    res.type('html').send(await renderPayPage(view, paymentStatusJson(view), { lang, t, path, statusUrl: `${path}/status` }));
  };

  const status: PageHandler = (req, res) => answerPaymentStatus(deps, req.params.token, res);

  return [
    { path: '/pay/:token', handler: page },
    { path: '/pay/:token/status', handler: status },
  ];
}

/**
 * The status endpoint's own work, on the router's route (pay-routes) and in front of it
 * (status-endpoint.ts): the order's status JSON, or the endpoint's 404.
 */
export async function answerPaymentStatus(deps: ApiDeps, token: string, res: ServerResponse): Promise<void> {
  res.setHeader('Cache-Control', 'no-store');
  // Open orders' facts from this process's memory until Postgres says they changed.
  const facts = await deps.paymentPages.find(token, () => findPaymentPage(deps, token));
  if (!facts) {
    writeJson(res, 404, { error: 'NOT_FOUND', message: 'No payment for this link' });
    return;
  }
  // Written as the API's answers are (api/answer.ts), without res.json's negotiation (charset,
  // ETag and freshness checks) that a fresh, no-store JSON answer has no use for.
  writeJsonText(res, 200, paymentStatusText(await presentPage(deps, facts)));
}

/** The page's view now, with whether its chain's detection is delayed (core/detection/chain-health.ts). */
async function presentPage(deps: ApiDeps, facts: PaymentPageFacts) {
  const now = deps.clock.now();
  const final = facts.order.status !== 'pending';
  // A USD order with no route yet is on no chain.
  const degraded = !final && facts.order.chainId !== null && (await isChainDegraded(deps, facts.order.chainId, now));
  return presentPaymentPage(deps, facts, now, { degraded });
}

/** The JSON error bodies of the status endpoint (the page itself answers HTML pages). */
export type PageErrorKind = 'notFound' | 'tooMany' | 'error' | 'unavailable';

export function pageErrorJson(kind: PageErrorKind): { error: string; message: string } {
  const error = { notFound: 'NOT_FOUND', tooMany: 'RATE_LIMIT_EXCEEDED', error: 'INTERNAL_ERROR', unavailable: 'SERVICE_UNAVAILABLE' }[kind];
  const message = { notFound: 'Not found', tooMany: 'Too many requests; retry later', error: 'Internal error', unavailable: 'Temporarily unavailable; retry shortly' }[kind];
  return { error, message };
}

/**
 * A public page's failure: the database unreachable is a 503 "try again" with Retry-After (the
 * page's own "reload in a moment" text; the status poll keeps polling), anything else a 500.
 */
export function pageFailure(err: unknown, res: ServerResponse): { status: number; kind: PageErrorKind } {
  if (!databaseOutageError(err)) return { status: 500, kind: 'error' };
  res.setHeader('Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
  return { status: 503, kind: 'unavailable' };
}

/** An HTML page for browsers, JSON for the status endpoint (the page's script reads it). */
export function wantsJson(req: Request): boolean {
  return req.path.endsWith('/status');
}

export function sendPageError(req: Request, res: Response, status: number, kind: PageErrorKind): void {
  if (wantsJson(req)) {
    sendJson(res, status, pageErrorJson(kind));
    return;
  }
  const lang = pickLanguage(req);
  const t = MESSAGES[lang];
  const [title, text] =
    kind === 'notFound' ? [t.notFoundTitle, t.notFoundText] : kind === 'tooMany' ? [t.tooManyTitle, t.tooManyText] : [t.errorTitle, t.errorText];
  res.status(status).setHeader('Cache-Control', 'no-store');
  res.type('html').send(messagePage(lang, t, title, text));
}
