import type { ServerResponse } from 'node:http';
import type { Express } from 'express';
import type { ApiDeps } from '../../deps';
import { mountAuthPages } from './auth-pages';
import { mountMoneyPages } from './money-pages';
import { mountRefundPages } from './refund-pages';
import { mountPayoutPages } from './payout-pages';
import { mountAttentionPages } from './attention-pages';
import { mountOverviewPages } from './overview-pages';
import { mountPaymentLinkPages } from './payment-link-pages';
import { mountPoolPages } from './pool-pages';
import { mountSettingsPages } from './settings-pages';
import { plainPage } from './layout';
import { html } from '../html';
import { dashboardOf, publicStep, sendHtml } from './web';

/**
 * The merchant dashboard (issue 29) under /dashboard: server-rendered pages behind the public
 * pages' headers, signed in with server-side sessions. Every action calls the same domain
 * operation as the API route that does the same thing (api/operations.ts where the API adds a step).
 */
export function mountDashboard(app: Express, deps: ApiDeps, options: { setHeaders: (res: ServerResponse) => void }): void {
  const d = dashboardOf(deps, options.setHeaders);
  mountAuthPages(app, d);
  mountOverviewPages(app, d);
  mountMoneyPages(app, d);
  mountRefundPages(app, d);
  mountPayoutPages(app, d);
  mountAttentionPages(app, d);
  mountPaymentLinkPages(app, d);
  mountPoolPages(app, d);
  mountSettingsPages(app, d);
  // Anything else under /dashboard (any method): a page saying so, behind the same headers.
  app.use(
    '/dashboard',
    publicStep(d, async (_req, res) => sendHtml(res, 404, plainPage('Not found', html`<p>There is no such page.</p><p><a href="/dashboard">Back to the dashboard</a></p>`))),
  );
}
