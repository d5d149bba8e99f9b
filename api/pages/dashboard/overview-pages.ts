import type { Express } from 'express';
import { PROTOCOLS } from '../../../core/chains/registry';
import { stalledChains } from '../../../core/detection/stall';
import { listConfig } from '../../../core/organizations/org-config';
import { poolStatus } from '../../../core/pool/queries';
import { roleAtLeast } from '../../../core/organizations/roles';
import { organizationOverview, type Overview, type VolumeLine } from '../../../core/reports/overview';
import { listAudit } from '../../../core/platform/audit';
import { listWebhookEndpoints } from '../../../core/webhooks/endpoints';
import { chromeText, langOf } from './chrome-text';
import { html, trustedHtml, type Html } from '../html';
import { formatDate, pager } from './layout';
import { page, sendPage, type Dashboard } from './web';
import { pageNumber } from './settings-pages';

function volumeTable(id: string, caption: string, rows: VolumeLine[]): Html {
  const count = rows.reduce((n, r) => n + r.count, 0);
  return html`<div class="panel stat" id="${id}"><span>${caption}</span><strong data-count="${count}">${count}</strong>
${rows.length ? html`<table><tbody>${rows.map((r) => html`<tr><td>${r.chainId}</td><td class="num">${r.volume} ${r.currency}</td><td class="num">${r.count}</td></tr>`)}</tbody></table>` : html`<span class="muted">none</span>`}</div>`;
}

/** Completed volume per day as bars: server-rendered SVG, no script. Numbers only, built by us. */
function dailyChart(daily: Overview['daily']): Html {
  const max = Math.max(1, ...daily.map((d) => d.volume));
  const w = 10;
  const bars = daily
    .map((d, i) => {
      const h = Math.round((d.volume / max) * 90);
      return `<rect x="${i * w + 1}" y="${100 - h}" width="${w - 2}" height="${h}"><title>${d.day}: ${d.volume.toFixed(2)} (${d.count} orders)</title></rect>`;
    })
    .join('');
  return trustedHtml(`<svg class="chart" viewBox="0 0 ${daily.length * w} 100" preserveAspectRatio="none" role="img" aria-label="Completed order volume per day, last 30 days" xmlns="http://www.w3.org/2000/svg">${bars}</svg>`);
}

export function mountOverviewPages(app: Express, d: Dashboard): void {
  const { deps } = d;

  app.get(
    '/dashboard',
    page(d, 'viewer', async (_req, res, who) => {
      const org = who.caller.organizationId;
      // The API keeps the pool and the configuration to Admins and Owners; so does the overview.
      const poolVisible = roleAtLeast(who.session.role, 'admin');
      const [overview, counts, config, endpoints, stalled] = await Promise.all([
        organizationOverview(deps.db, deps.registry, org, deps.clock.now()),
        poolVisible ? poolStatus(deps.db, org) : null,
        poolVisible ? listConfig(deps.db, org) : [],
        listWebhookEndpoints(deps.db, who.caller, { page: 1, limit: 100 }),
        stalledChains(deps.db),
      ]);
      const threshold = new Map(config.map((e) => [e.key, e.value]));
      const failing = endpoints.items.filter((e) => !e.enabled || e.failingSince);
      const enabledChains = new Set(deps.registry.list().map((c) => c.chainId));
      const stalledHere = stalled.filter((s) => enabledChains.has(s.chainId));
      await sendPage(
        d,
        res,
        who,
        '/dashboard',
        'Overview',
        html`<div class="stats">
${volumeTable('orders-today', 'Completed orders today', overview.orders.today)}
${volumeTable('orders-month', 'Completed orders this month', overview.orders.month)}
${volumeTable('deposits-today', 'Confirmed deposits today', overview.deposits.today)}
${volumeTable('deposits-month', 'Confirmed deposits this month', overview.deposits.month)}
</div>
<section class="panel"><h2>${chromeText(langOf(res), 'Completed volume per day (30 days)')}</h2>${dailyChart(overview.daily)}</section>
${counts
  ? html`<section class="panel" id="pool-health"><h2>${chromeText(langOf(res), 'Address pools')}</h2><table><thead><tr><th>Protocol</th><th>Available</th><th>Allocated</th><th>Cooling down</th><th>Threshold</th></tr></thead><tbody>
${PROTOCOLS.map((p) => html`<tr><td>${p}</td><td class="num">${counts[p].available}</td><td class="num">${counts[p].allocated + counts[p].bound}</td><td class="num">${counts[p].coolingDown}</td><td>${String(threshold.get(`address_pool.low_threshold.${p}`) ?? '')}</td></tr>`)}
</tbody></table></section>`
  : null}
<section class="panel"><h2>${chromeText(langOf(res), 'Webhook endpoints needing attention')}</h2>${failing.length
            ? html`<ul>${failing.map((e) => html`<li><a href="/dashboard/settings/webhooks/${e.id}" class="mono">${e.url}</a> ${e.enabled ? html`<span class="badge warn">failing since ${formatDate(e.failingSince)}</span>` : html`<span class="badge bad">disabled</span>`}</li>`)}</ul>`
            : html`<p>None.</p>`}</section>
<section class="panel"><h2>${chromeText(langOf(res), 'Chains')}</h2>${stalledHere.length
            ? html`<ul>${stalledHere.map((s) => html`<li><span class="badge bad">stalled</span> ${s.chainId} since ${formatDate(s.since)} (${s.reason ?? 'unknown'})</li>`)}</ul>`
            : html`<p>Every chain is being scanned.</p>`}</section>`,
      );
    }),
  );

  app.get(
    '/dashboard/audit',
    page(d, 'admin', async (req, res, who) => {
      const pageNo = pageNumber(req);
      const { items, total } = await listAudit(deps.db, who.caller.organizationId, { page: pageNo, limit: 100 });
      await sendPage(
        d,
        res,
        who,
        '/dashboard/audit',
        'Audit log',
        html`<section class="panel"><table id="audit"><caption class="skip">Audit log</caption><thead><tr><th>When</th><th>Who</th><th>What</th><th>Target</th><th>Details</th><th>IP</th></tr></thead><tbody>
${items.map((a) => html`<tr><td>${formatDate(a.createdAt)}</td><td>${a.actor}</td><td><code>${a.action}</code></td><td class="mono">${a.target ?? ''}</td><td class="mono">${a.detail ? JSON.stringify(a.detail) : ''}</td><td class="mono">${a.ip ?? ''}</td></tr>`)}
</tbody></table>${pager('/dashboard/audit', {}, pageNo, 100, total, langOf(res))}</section>`,
      );
    }),
  );
}
