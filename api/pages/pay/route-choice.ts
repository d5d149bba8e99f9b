import type { Request, Response } from 'express';
import { AppError } from '../../../core/platform/errors';
import { PAY_TOKEN_PATTERN } from '../../../core/orders/pay-token';
import { findPaymentPage } from '../../../core/orders/payment-page';
import { chooseOrderRoute } from '../../../core/orders/routes';
import type { ApiDeps } from '../../deps';
import { sendJson } from '../../answer';
import { clientIpKey } from '../../client-ip';
import { checkSameOrigin, publicPoolReserve, publicBodyReader, PublicWriteRefusal, WriteBudgets } from '../public-write';
import { sendPageError, type PageHandler } from './pay-routes';
import { MESSAGES, pickLanguage } from '../i18n';
import { messagePage } from '../layout';

/**
 * Choices an anonymous visitor may make: per client IP, and per order. A USD order holds at most one
 * address per family whatever is chosen (core/orders/routes.ts), so these only keep one visitor from
 * keeping the database busy; the pool reserve keeps a choice that takes an address from emptying the
 * merchant's pool, as the checkout's orders do.
 */
const ROUTE_BUDGETS = {
  ip: { points: 60, durationSeconds: 3600 },
  order: { points: 20, durationSeconds: 3600 },
};

/**
 * POST /pay/<token>/route (issue 41): the payer of a USD order picks, or switches to, one of its
 * routes. A plain form (`route=USDT@tron-mainnet`, the page's buttons) answers 303 to the payment
 * page; JSON (`{currency, chainId}`) answers the new route. Through the public write kit: body limit,
 * same-origin check, budgets, the pool reserve. The same domain operation as POST /orders/:id/route.
 */
export function routeChoiceHandler(deps: ApiDeps): PageHandler {
  const { config, logger } = deps;
  const readBody = publicBodyReader(config.publicWrites.bodyLimitBytes);
  const budgets = new WriteBudgets({ redis: deps.pageLimitRedis, keyPrefix: `${config.redisPrefix}:pw:route`, logger }, ROUTE_BUDGETS);
  const poolReserve = publicPoolReserve(deps);

  return async (req: Request<{ token: string }>, res: Response) => {
    const json = req.is('application/json') === 'application/json';
    res.setHeader('Cache-Control', 'no-store');
    const token = req.params.token;
    const pagePath = `/pay/${encodeURIComponent(token)}`;
    try {
      const body = await readBody(req, res);
      checkSameOrigin(req, config.publicBaseUrl, body.kind);
      const route = routeOf(body.fields);
      const facts = PAY_TOKEN_PATTERN.test(token) ? await findPaymentPage(deps, token) : null;
      if (!facts) throw new AppError('RESOURCE_NOT_FOUND', 'Order not found');
      const chain = deps.registry.get(route.chainId);
      if (!chain) throw new AppError('INVALID_CHAIN', `Unknown chainId "${route.chainId}"`);
      await budgets.spend([
        { budget: 'ip', key: clientIpKey(req.ip) },
        { budget: 'order', key: token },
      ]);
      const order = await poolReserve.take({ organizationId: facts.order.organizationId, protocol: chain.protocol }, () => chooseOrderRoute(deps, { payToken: token }, null, route));
      logger.info({ orderId: order.id, chainId: order.chainId, currency: order.routeCurrency }, 'payer chose a route');
      if (json) return sendJson(res, 200, { currency: order.routeCurrency, chainId: order.chainId, address: order.address, paymentUrl: `${config.publicBaseUrl}${pagePath}` });
      res.redirect(303, pagePath);
    } catch (err) {
      const retryAfter = err instanceof PublicWriteRefusal ? err.retryAfter : err instanceof AppError ? (err.extra?.retryAfter as number | undefined) : undefined;
      if (retryAfter) res.setHeader('Retry-After', String(retryAfter));
      if (err instanceof PublicWriteRefusal) {
        if (json) return sendJson(res, err.status, { error: err.kind, message: err.message });
        return sendPageError(req, res, err.status, err.kind === 'tooMany' ? 'tooMany' : err.status === 503 ? 'unavailable' : 'error');
      }
      if (err instanceof AppError) {
        if (json) return sendJson(res, err.status, { error: err.code, message: err.message });
        if (err.code === 'RESOURCE_NOT_FOUND') return sendPageError(req, res, 404, 'notFound');
        if (err.code === 'NO_AVAILABLE_ADDRESSES') return sendPageError(req, res, 503, 'unavailable');
        if (err.status === 400 && !['ORDER_EXPIRED', 'ORDER_ALREADY_PAID'].includes(err.code)) {
          // A route the order does not offer (only a form changed by hand sends one): refused, nothing changed.
          const lang = pickLanguage(req);
          return void res.status(400).type('html').send(messagePage(lang, MESSAGES[lang], MESSAGES[lang].headings.choosing, MESSAGES[lang].routeRefused));
        }
        // Ended, paid, or a token order (no route to choose): the page says where the order stands.
        return void res.redirect(303, pagePath);
      }
      throw err;
    }
  };
}

/** The route asked for: the form's `route` (TOKEN@chainId) or JSON's currency and chainId. */
function routeOf(fields: Record<string, unknown>): { currency: string; chainId: string } {
  if (typeof fields.route === 'string') {
    const [currency = '', chainId = ''] = fields.route.slice(0, 100).split('@');
    return { currency, chainId };
  }
  const text = (v: unknown) => (typeof v === 'string' ? v.slice(0, 64) : '');
  return { currency: text(fields.currency), chainId: text(fields.chainId) };
}
