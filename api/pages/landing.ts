import type { Request, Response } from 'express';
import { SERVICE_VERSION } from '../../core/platform/version';
import { html } from './html';
import { pickLanguage, MESSAGES } from './i18n';
import { layout } from './layout';

/** A link of the landing page. */
export interface LandingLink {
  href: string;
  label: string;
  text: string;
}

export const LANDING_LINKS: LandingLink[] = [
  { href: '/dashboard', label: 'Dashboard', text: "sign in to see your organization's orders and payments" },
  { href: '/api/v1/docs', label: 'API reference', text: 'every route, its parameters and answers, with "try it"' },
  { href: '/api/v1/openapi.json', label: 'OpenAPI document', text: 'the same, for client generators' },
  { href: '/api/v1/chains', label: 'Chains', text: 'enabled chains and their currencies (needs an API key)' },
  { href: '/health', label: 'Health', text: 'database, Redis and chains, as load balancers see them' },
];

/**
 * GET /: what this server is, its version and where to go (instead of Express's "Cannot GET /").
 * A public page: its headers and no third-party asset (design.md §6a); JSON for API clients.
 */
export function landingPage(req: Request, res: Response): void {
  res.setHeader('Cache-Control', 'no-store');
  if (req.accepts(['html', 'json']) === 'json') {
    res.json({ service: 'Stablegate', version: SERVICE_VERSION, links: Object.fromEntries(LANDING_LINKS.map((l) => [l.label, l.href])) });
    return;
  }
  const lang = pickLanguage(req);
  const body = html`<main class="card">
<h1>Stablegate</h1>
<p>A self-hosted stablecoin payment service (USDT, USDC, DAI). Version ${SERVICE_VERSION}.</p>
<ul class="links">${LANDING_LINKS.map((l) => html`<li><a href="${l.href}">${l.label}</a>: ${l.text}</li>`)}</ul>
<p>Payers reach their payment page from the link the shop gives them.</p>
</main>`;
  res.type('html').send(layout({ lang, t: MESSAGES[lang], title: `Stablegate ${SERVICE_VERSION}`, body }).text);
}
