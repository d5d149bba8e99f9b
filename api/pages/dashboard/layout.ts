import { html, type Html } from '../html';
import { assetUrl } from '../static-assets';
import type { Session } from '../../../core/users/sessions';
import type { MembershipView } from '../../../core/users/users';
import { roleAtLeast, type Role } from '../../../core/organizations/roles';
import { LANGUAGE_NAMES, LANGUAGES, type Language } from '../i18n';
import { chromeText } from './chrome-text';

/** The dashboard's sections, in the navigation's order, with the lowest role that sees each. */
export const SECTIONS: readonly { path: string; label: string; minRole: Role }[] = [
  { path: '/dashboard', label: 'Overview', minRole: 'viewer' },
  { path: '/dashboard/orders', label: 'Orders', minRole: 'viewer' },
  { path: '/dashboard/deposits', label: 'Deposits', minRole: 'viewer' },
  { path: '/dashboard/transfers', label: 'Transfers', minRole: 'viewer' },
  { path: '/dashboard/attention', label: 'Needs attention', minRole: 'viewer' },
  { path: '/dashboard/refunds', label: 'Refunds', minRole: 'viewer' },
  { path: '/dashboard/payouts', label: 'Payouts', minRole: 'viewer' },
  { path: '/dashboard/payment-links', label: 'Payment links', minRole: 'viewer' },
  { path: '/dashboard/pool', label: 'Address pool', minRole: 'admin' },
  { path: '/dashboard/settings/organization', label: 'Organization', minRole: 'viewer' },
  { path: '/dashboard/settings/webhooks', label: 'Webhooks', minRole: 'viewer' },
  { path: '/dashboard/settings/api-keys', label: 'API keys', minRole: 'admin' },
  { path: '/dashboard/settings/members', label: 'Members', minRole: 'viewer' },
  { path: '/dashboard/settings/configuration', label: 'Configuration', minRole: 'admin' },
  { path: '/dashboard/audit', label: 'Audit log', minRole: 'admin' },
  { path: '/dashboard/account', label: 'Account', minRole: 'viewer' },
];

function shell(title: string, header: Html | null, body: Html, lang: Language = 'en'): Html {
  return html`<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${title} · Stablegate</title>
<link rel="stylesheet" href="${assetUrl('dashboard.css')}">
</head>
<body>
<a class="skip" href="#content">${chromeText(lang, 'Skip to content')}</a>
${header}
<main id="content" tabindex="-1">
${body}
</main>
</body>
</html>
`;
}

export interface ChromeOptions {
  session: Session;
  memberships: MembershipView[];
  /** The section this page belongs to (its path). */
  section: string;
  title: string;
  body: Html;
  /** The chrome's language (chrome-text.ts); English when not given. */
  lang?: Language;
  /** The language came from `?lang=`: the navigation's links carry it on. */
  keepLang?: boolean;
}

/** A signed-in page: the organization switcher, sign-out, the sections this role may see. */
export function dashboardPage(o: ChromeOptions): Html {
  const lang = o.lang ?? 'en';
  const t = (text: string) => chromeText(lang, text);
  const withLang = (path: string) => (o.keepLang ? `${path}?lang=${lang}` : path);
  const csrf = o.session.csrfToken;
  const current = o.memberships.find((m) => m.organizationId === o.session.organizationId);
  const switcher =
    o.memberships.length > 1
      ? html`<form method="post" action="/dashboard/switch-organization"><input type="hidden" name="_csrf" value="${csrf}">
<label for="org-switch" class="skip">${t('Organization')}</label>
<select id="org-switch" name="organizationId">${o.memberships.map(
          (m) => html`<option value="${m.organizationId}"${m.organizationId === o.session.organizationId ? html` selected` : null}>${m.organizationName}</option>`,
        )}</select> <button class="secondary" type="submit">${t('Switch')}</button></form>`
      : html`<span>${current?.organizationName ?? ''}</span>`;
  const languages = html`<nav class="languages" aria-label="${t('Language')}">${LANGUAGES.map((l) =>
    l === lang ? html`<span aria-current="true" lang="${l}">${LANGUAGE_NAMES[l]}</span> ` : html`<a href="${o.section}?lang=${l}" lang="${l}" hreflang="${l}">${LANGUAGE_NAMES[l]}</a> `,
  )}</nav>`;
  const header = html`<header class="top">
<span class="brand">Stablegate</span>
${switcher}
<span>${o.session.email} <span class="badge" data-role="${o.session.role}">${o.session.role}</span></span>
${languages}
<form method="post" action="/dashboard/sign-out"><input type="hidden" name="_csrf" value="${csrf}"><button class="secondary" type="submit">${t('Sign out')}</button></form>
</header>
<nav class="main" aria-label="${t('Dashboard')}">${SECTIONS.filter((s) => roleAtLeast(o.session.role, s.minRole)).map(
    (s) => html`<a href="${withLang(s.path)}"${s.path === o.section ? html` aria-current="page"` : null}>${t(s.label)}</a>`,
  )}</nav>`;
  const title = t(o.title);
  return shell(title, header, html`<h1>${title}</h1>${o.body}`, lang);
}

/** A page outside the signed-in chrome (sign-in, links, errors). */
export function plainPage(title: string, body: Html): Html {
  return shell(title, html`<header class="top"><span class="brand">Stablegate</span></header>`, html`<div class="panel narrow"><h1>${title}</h1>${body}</div>`);
}

export function messageView(title: string, text: string): Html {
  return plainPage(title, html`<p>${text}</p><p><a href="/dashboard">Back to the dashboard</a></p>`);
}

/** The hidden CSRF field every form of a signed-in page carries. */
export function csrfField(session: Session): Html {
  return html`<input type="hidden" name="_csrf" value="${session.csrfToken}">`;
}

/** A row's action: a form of one button posting to `action` with the session's CSRF field; the label is chrome text. */
export function postButton(action: string, session: Session, label: string, cls: string, lang: Language): Html {
  return html`<form method="post" action="${action}" class="inline">${csrfField(session)}<button class="${cls}" type="submit">${chromeText(lang, label)}</button></form>`;
}

export function notice(text: string | null, kind: 'ok' | 'error' = 'ok'): Html | null {
  return text ? html`<div class="notice${kind === 'error' ? ' error' : ''}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</div>` : null;
}

export function formatDate(d: Date | string | null | undefined): string {
  if (!d) return '—';
  const date = typeof d === 'string' ? new Date(d) : d;
  return date.toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
}

/** Previous/next links of a list, keeping the other query parameters. */
export function pager(path: string, query: Record<string, string | undefined>, page: number, limit: number, total: number, lang: Language = 'en'): Html {
  const t = (text: string) => chromeText(lang, text);
  const link = (p: number) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '' && k !== 'page') q.set(k, v);
    q.set('page', String(p));
    return `${path}?${q.toString()}`;
  };
  const pages = Math.max(1, Math.ceil(total / limit));
  return html`<div class="pager"><span>${t('Page')} ${page} ${t('of')} ${pages} · ${total} ${t('in all')}</span>${page > 1 ? html`<a href="${link(page - 1)}" rel="prev">${t('Previous')}</a>` : null}${page < pages ? html`<a href="${link(page + 1)}" rel="next">${t('Next')}</a>` : null}</div>`;
}

function listLink(path: string, query: Record<string, string | undefined>, extra: Record<string, string>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '' && k !== 'page' && k !== 'after' && k !== 'before') q.set(k, v);
  for (const [k, v] of Object.entries(extra)) q.set(k, v);
  const text = q.toString();
  return text ? `${path}?${text}` : path;
}

/** Newer/older links of a list read by cursor (the first/last row shown), and its bounded count. */
export function keysetPager(path: string, query: Record<string, string | undefined>, at: { newer: string | null; older: string | null; totalText: string }, lang: Language = 'en'): Html {
  const t = (text: string) => chromeText(lang, text);
  return html`<div class="pager"><span>${at.totalText} ${t('in all')}</span>${at.newer ? html`<a href="${listLink(path, query, {})}">${t('First')}</a><a href="${listLink(path, query, { before: at.newer })}" rel="prev">${t('Previous')}</a>` : null}${at.older ? html`<a href="${listLink(path, query, { after: at.older })}" rel="next">${t('Next')}</a>` : null}</div>`;
}

/** Previous/next links by page number when the total is only known up to a bound. */
export function offsetPager(path: string, query: Record<string, string | undefined>, page: number, more: boolean, totalText: string, lang: Language = 'en'): Html {
  const t = (text: string) => chromeText(lang, text);
  return html`<div class="pager"><span>${t('Page')} ${page} · ${totalText} ${t('in all')}</span>${page > 1 ? html`<a href="${listLink(path, query, { page: String(page - 1) })}" rel="prev">${t('Previous')}</a>` : null}${more ? html`<a href="${listLink(path, query, { page: String(page + 1) })}" rel="next">${t('Next')}</a>` : null}</div>`;
}
