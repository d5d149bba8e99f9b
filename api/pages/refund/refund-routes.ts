import type { Request, Response } from 'express';
import { AppError } from '../../../core/platform/errors';
import { PAY_TOKEN_PATTERN } from '../../../core/orders/pay-token';
import { claimRefund, findRefundClaim } from '../../../core/refunds/refunds';
import { presentRefund } from '../../../core/views/refund';
import type { ApiDeps } from '../../deps';
import { sendJson } from '../../answer';
import { clientIpKey } from '../../client-ip';
import { MESSAGES, pickLanguage } from '../i18n';
import { messagePage } from '../layout';
import { checkSameOrigin, publicBodyReader, PublicWriteRefusal, WriteBudgets } from '../public-write';
import { REFUND_MESSAGES } from './refund-i18n';
import { refundMessagePage, renderRefundPage, type RefundPageText } from './refund-page';

export type RefundPageHandler = (req: Request<{ token: string }>, res: Response) => Promise<void>;

/**
 * Claim attempts an anonymous visitor may make: per client IP, and per refund (a refund is claimed
 * once; the rest are typing mistakes). Each attempt is one small transaction and nothing a
 * merchant owns is spent, so these only keep one visitor from keeping the database busy.
 */
const CLAIM_BUDGETS = {
  ip: { points: 30, durationSeconds: 3600 },
  refund: { points: 20, durationSeconds: 3600 },
};

/**
 * The refund claim page (issue 42): GET /refund/<token> shows the amount, token and network and a
 * plain form; POST /refund/<token> (the form, or JSON from a script) claims it with the address
 * typed twice, through the public write kit (body limit, same-origin check, budgets). The
 * unguessable token is the only key, and it reaches one refund. A refused address shows the page
 * again with a sentence in its language and changes nothing; a claim answers 303 to the page (the
 * form) or 200 with the refund's state (JSON).
 */
export function refundClaimRoutes(deps: ApiDeps): { method: 'get' | 'post'; path: string; handler: RefundPageHandler }[] {
  const { config, logger } = deps;
  const readBody = publicBodyReader(config.publicWrites.bodyLimitBytes);
  const budgets = new WriteBudgets({ redis: deps.pageLimitRedis, keyPrefix: `${config.redisPrefix}:pw:refund`, logger }, CLAIM_BUDGETS);
  const text = (req: Request): RefundPageText => {
    const lang = pickLanguage(req);
    return { lang, t: MESSAGES[lang], r: REFUND_MESSAGES[lang] };
  };
  const pagePath = (token: string) => `/refund/${encodeURIComponent(token)}`;
  const notFound = (res: Response, o: RefundPageText) => res.status(404).type('html').send(messagePage(o.lang, o.t, o.t.notFoundTitle, o.t.notFoundText));

  const showPage = async (req: Request<{ token: string }>, res: Response, extra: { status?: number; problem?: string; sent?: { destination?: string; confirmation?: string } } = {}) => {
    const o = text(req);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Vary', 'Accept-Language');
    res.setHeader('Content-Language', o.lang);
    const token = req.params.token;
    const facts = PAY_TOKEN_PATTERN.test(token) ? await findRefundClaim(deps.db, token) : null;
    if (!facts) return void notFound(res, o);
    const refund = presentRefund(deps, facts.refund);
    const claimable = facts.refund.status === 'awaiting_claim' && facts.refund.expiresAt > deps.clock.now();
    if (!claimable && !['claimed', 'approved', 'completed'].includes(refund.status)) {
      res.status(410).type('html').send(refundMessagePage(o, 'gone'));
      return;
    }
    const networkName = deps.registry.get(refund.chainId)?.name ?? refund.chainId;
    res
      .status(extra.status ?? 200)
      .type('html')
      .send(renderRefundPage({ refund, organizationName: facts.organizationName, supportContact: facts.supportContact, networkName, path: pagePath(token), claimable, ...extra }, o));
  };

  const page: RefundPageHandler = (req, res) => showPage(req, res);

  const claim: RefundPageHandler = async (req, res) => {
    const o = text(req);
    const json = req.is('application/json') === 'application/json';
    res.setHeader('Cache-Control', 'no-store');
    try {
      const body = await readBody(req, res);
      checkSameOrigin(req, config.publicBaseUrl, body.kind);
      const token = req.params.token;
      if (!PAY_TOKEN_PATTERN.test(token)) throw new AppError('RESOURCE_NOT_FOUND', 'Refund not found');
      const destination = typeof body.fields.destination === 'string' ? body.fields.destination.slice(0, 200) : '';
      const confirmation = typeof body.fields.confirmation === 'string' ? body.fields.confirmation.slice(0, 200) : '';
      await budgets.spend([
        { budget: 'ip', key: clientIpKey(req.ip) },
        { budget: 'refund', key: token },
      ]);
      const outcome = await claimRefund(deps, token, destination, confirmation, req.ip ?? null);
      if (!outcome.ok) {
        const problem = o.r.refusal(outcome.refusal);
        if (json) return sendJson(res, outcome.refusal.code === 'not_claimable' ? 409 : 400, { error: 'ADDRESS_REFUSED', reason: outcome.refusal.code, message: problem });
        if (outcome.refusal.code === 'not_claimable') return await showPage(req, res, { status: 409 });
        return await showPage(req, res, { status: 400, problem, sent: { destination, confirmation } });
      }
      logger.info({ refundId: outcome.refund.id }, 'refund claimed');
      if (json) return sendJson(res, 200, { status: outcome.refund.status, destination: outcome.refund.destination });
      res.redirect(303, `${pagePath(token)}?lang=${o.lang}`);
    } catch (err) {
      if (err instanceof PublicWriteRefusal) {
        if (err.retryAfter) res.setHeader('Retry-After', String(err.retryAfter));
        if (json) return sendJson(res, err.status, { error: err.kind, message: err.message });
        const kind = err.kind === 'tooMany' ? 'tooMany' : err.kind === 'busy' ? 'busy' : 'crossSite';
        res.status(err.status).type('html').send(refundMessagePage(o, kind));
        return;
      }
      if (err instanceof AppError && err.code === 'RESOURCE_NOT_FOUND') {
        if (json) return sendJson(res, 404, { error: 'NOT_FOUND', message: 'Not found' });
        return void notFound(res, o);
      }
      throw err;
    }
  };

  return [
    { method: 'get', path: '/refund/:token', handler: page },
    { method: 'post', path: '/refund/:token', handler: claim },
  ];
}
