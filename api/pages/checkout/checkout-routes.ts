import type { Request, Response } from 'express';
import { AppError } from '../../../core/platform/errors';
import { linkStatus } from '../../../core/payment-links/links';
import { assertCheckoutOpen, createCheckoutOrder, findCheckout, findOpenCheckoutOrder, isUsdLink, linkUsdRoutes, resolveCheckoutChoice, type CheckoutChoice } from '../../../core/payment-links/checkout';
import { checkoutUrlOf } from '../../../core/views/payment-link';
import type { ApiDeps } from '../../deps';
import { sendJson } from '../../answer';
import { MESSAGES, pickLanguage } from '../i18n';
import { messagePage } from '../layout';
import { checkSameOrigin, publicPoolReserve, publicBodyReader, PublicWriteRefusal, WriteBudgets } from '../public-write';
import { clientIpKey } from '../../client-ip';
import { CHECKOUT_MESSAGES } from './checkout-i18n';
import { checkoutMessagePage, renderCheckoutPage, type PageText } from './checkout-page';
import { readCookies } from '../dashboard/cookies';

/** The visitor's open order of a link: its payment page token, scoped to the link's path. */
const COOKIE = 'sg_checkout';

function cookieToken(req: Request): string | null {
  return readCookies(req).get(COOKIE) ?? null;
}

export type CheckoutHandler = (req: Request<{ slug: string }>, res: Response) => Promise<void>;

/**
 * The payment links' public checkout (issue 28): GET /l/<slug> shows the link; POST
 * /l/<slug>/orders (a plain form, or JSON from a script) makes a fresh order through the same
 * operation as POST /orders and answers 303 to its payment page (a link priced in USD: a USD order,
 * whose payer picks the route there). The post goes through the public
 * write kit (api/pages/public-write/): a size-limited body, a same-origin check, budgets per client
 * IP and per link, and the pool reserve; a returning visitor (cookie) gets their open order back.
 * Full paths: api/pages/index.ts mounts them behind the public headers and the per-IP page limit.
 */
export function checkoutRoutes(deps: ApiDeps): { method: 'get' | 'post'; path: string; handler: CheckoutHandler }[] {
  const { config, logger } = deps;
  const readBody = publicBodyReader(config.publicWrites.bodyLimitBytes);
  const budgets = new WriteBudgets(
    { redis: deps.pageLimitRedis, keyPrefix: `${config.redisPrefix}:pw:checkout`, logger },
    {
      ip: { points: config.checkout.ordersPerIp, durationSeconds: config.checkout.ipWindowSeconds },
      link: { points: config.checkout.ordersPerLinkPerMinute, durationSeconds: 60 },
    },
  );
  const poolReserve = publicPoolReserve(deps);
  const secureCookie = config.publicBaseUrl.startsWith('https://');
  const chainName = (chainId: string) => deps.registry.get(chainId)?.name ?? chainId;

  const text = (req: Request): PageText => {
    const lang = pickLanguage(req);
    return { lang, t: MESSAGES[lang], c: CHECKOUT_MESSAGES[lang] };
  };
  const pagePath = (slug: string) => `/l/${encodeURIComponent(slug)}`;

  const showPage = async (req: Request<{ slug: string }>, res: Response, extra: { status?: number; problem?: string; sent?: { choice?: string; amount?: string } } = {}) => {
    const o = text(req);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Vary', 'Accept-Language, Cookie');
    res.setHeader('Content-Language', o.lang);
    const facts = await findCheckout(deps, req.params.slug);
    if (!facts || facts.link.status === 'draft') {
      res.status(404).type('html').send(messagePage(o.lang, o.t, o.t.notFoundTitle, o.t.notFoundText));
      return;
    }
    const { link } = facts;
    const status = linkStatus(link, deps.clock.now());
    if (status === 'archived' || status === 'expired') {
      res.status(410).type('html').send(checkoutMessagePage(o, 'gone'));
      return;
    }
    const token = cookieToken(req);
    const open = token ? await findOpenCheckoutOrder(deps, link, token) : null;
    res.status(extra.status ?? 200).type('html').send(
      await renderCheckoutPage(
        {
          link,
          status,
          organizationName: facts.organizationName,
          supportContact: facts.supportContact,
          checkoutUrl: checkoutUrlOf(config, link),
          path: pagePath(link.slug),
          chainName,
          usdRoutes: isUsdLink(link) ? linkUsdRoutes(deps.registry, link) : null,
          openOrderUrl: open ? `/pay/${open.payToken}` : null,
          problem: extra.problem,
          sent: extra.sent,
        },
        o,
      ),
    );
  };

  const page: CheckoutHandler = (req, res) => showPage(req, res);

  const createOrder: CheckoutHandler = async (req, res) => {
    const o = text(req);
    const json = req.is('application/json') === 'application/json';
    res.setHeader('Cache-Control', 'no-store');
    let sent: { choice?: string; amount?: string } = {};
    try {
      const body = await readBody(req, res);
      checkSameOrigin(req, config.publicBaseUrl, body.kind);
      const facts = await findCheckout(deps, req.params.slug);
      if (!facts || facts.link.status === 'draft') throw new AppError('RESOURCE_NOT_FOUND', 'Payment link not found');
      const { link } = facts;
      const choice = choiceOf(body.fields);
      sent = { choice: isUsdLink(link) ? undefined : `${choice.currency}@${choice.chainId}`, amount: typeof choice.amount === 'string' ? choice.amount : undefined };

      // A returning visitor within the payment window gets their open order back: no new address.
      const token = cookieToken(req);
      const open = token ? await findOpenCheckoutOrder(deps, link, token) : null;
      if (open) return answerOrder(res, json, open.payToken, false);

      // Everything the payer sent is checked before any budget is spent or address taken.
      assertCheckoutOpen(deps, link);
      const { chainId } = resolveCheckoutChoice(deps, link, choice);
      const spent = [
        { budget: 'ip' as const, key: clientIpKey(req.ip) },
        { budget: 'link' as const, key: link.id },
      ];
      await budgets.spend(spent);
      // A token order takes an address now, so the pool reserve guards it; a USD order takes none
      // until its payer picks a route on the payment page, whose choice has its own guard.
      const create = () => createCheckoutOrder(deps, link, choice);
      const made = chainId === null ? create() : poolReserve.take({ organizationId: link.organizationId, protocol: deps.registry.requireOfferedChain(chainId).protocol }, create);
      const order = await made.catch(async (err: unknown) => {
        // No order was made (busy, the reserve, sold out meanwhile, the database away): the
        // visitor's and the link's budgets pay for orders made, so the points go back (issue 37).
        await budgets.refund(spent);
        throw err;
      });
      // A USD order's window starts again when its route is chosen (up to a whole window later): the cookie lasts until then.
      const lastsUntil = order.routes ? order.expiresAt.getTime() + order.paymentWindowMinutes * 60_000 : order.expiresAt.getTime();
      const maxAge = Math.max(1, Math.floor((lastsUntil - deps.clock.now().getTime()) / 1000));
      res.setHeader(
        'Set-Cookie',
        `${COOKIE}=${encodeURIComponent(order.payToken)}; Path=${pagePath(link.slug)}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${secureCookie ? '; Secure' : ''}`,
      );
      logger.info({ paymentLinkId: link.id, orderId: order.id }, 'checkout order created');
      return answerOrder(res, json, order.payToken, true);
    } catch (err) {
      await answerFailure(req, res, o, json, err, sent);
    }
  };

  function answerOrder(res: Response, json: boolean, payToken: string, created: boolean): void {
    const path = `/pay/${payToken}`;
    if (json) {
      sendJson(res, created ? 201 : 200, { paymentUrl: `${config.publicBaseUrl}${path}`, reused: !created });
      return;
    }
    res.redirect(303, path);
  }

  async function answerFailure(req: Request<{ slug: string }>, res: Response, o: PageText, json: boolean, err: unknown, sent: { choice?: string; amount?: string }): Promise<void> {
    const retryAfter = err instanceof PublicWriteRefusal ? err.retryAfter : err instanceof AppError ? (err.extra?.retryAfter as number | undefined) : undefined;
    if (retryAfter) res.setHeader('Retry-After', String(retryAfter));
    if (err instanceof PublicWriteRefusal) {
      if (json) return sendJson(res, err.status, { error: refusalCode(err), message: err.message, ...(retryAfter ? { retryAfter } : {}) });
      const kind = err.kind === 'tooMany' ? 'tooMany' : err.kind === 'poolReserve' || err.kind === 'busy' ? 'busy' : 'crossSite';
      res.status(err.status).type('html').send(checkoutMessagePage(o, kind));
      return;
    }
    if (!(err instanceof AppError)) throw err;
    if (json) return sendJson(res, err.status, { error: err.code, message: err.message, ...(retryAfter ? { retryAfter } : {}) });
    switch (err.code) {
      case 'INVALID_AMOUNT':
      case 'INVALID_CURRENCY':
      case 'INVALID_CHAIN':
      case 'VALIDATION_ERROR': {
        const bound = err.extra as { minAmount?: string; maxAmount?: string } | undefined;
        const problem =
          err.code !== 'INVALID_AMOUNT' ? o.c.choiceInvalid : bound?.minAmount ? o.c.amountBelow(bound.minAmount) : bound?.maxAmount ? o.c.amountAbove(bound.maxAmount) : o.c.amountInvalid;
        return showPage(req, res, { status: 400, problem, sent });
      }
      case 'RESOURCE_NOT_FOUND':
        res.status(404).type('html').send(messagePage(o.lang, o.t, o.t.notFoundTitle, o.t.notFoundText));
        return;
      case 'PAYMENT_LINK_UNAVAILABLE':
        res.status(410).type('html').send(checkoutMessagePage(o, 'gone'));
        return;
      case 'PAYMENT_LINK_SOLD_OUT':
        res.status(409).type('html').send(checkoutMessagePage(o, 'soldOut'));
        return;
      case 'PAYMENT_LINK_BUSY':
      case 'NO_AVAILABLE_ADDRESSES':
        res.status(503).type('html').send(checkoutMessagePage(o, 'busy'));
        return;
      default:
        throw err;
    }
  }

  return [
    { method: 'get', path: '/l/:slug', handler: page },
    { method: 'post', path: '/l/:slug/orders', handler: createOrder },
  ];
}

/** The payer's choice from a form (`choice` = `<currency>@<chainId>`, `amount`) or JSON (`currency`, `chainId`, `amount`); a USD link reads the amount only. */
function choiceOf(fields: Record<string, unknown>): CheckoutChoice {
  const amount = typeof fields.amount === 'string' ? fields.amount.trim() : fields.amount;
  if (typeof fields.choice === 'string') {
    const [currency = '', chainId = ''] = fields.choice.split('@');
    return { currency, chainId, amount };
  }
  return { currency: String(fields.currency ?? ''), chainId: String(fields.chainId ?? ''), amount };
}

function refusalCode(err: PublicWriteRefusal): string {
  return { crossSite: 'CROSS_SITE_REQUEST', tooLarge: 'PAYLOAD_TOO_LARGE', unsupportedType: 'UNSUPPORTED_MEDIA_TYPE', badBody: 'INVALID_BODY', tooMany: 'RATE_LIMIT_EXCEEDED', poolReserve: 'NO_AVAILABLE_ADDRESSES', busy: 'SERVICE_UNAVAILABLE' }[err.kind];
}
