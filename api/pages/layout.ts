import { html, type Html } from './html';
import { LANGUAGE_NAMES, LANGUAGES, type Language, type Messages } from './i18n';
import { assetUrl } from './static-assets';
import { supportContactHref } from '../../core/organizations/organization-profile';

export interface LayoutOptions {
  lang: Language;
  t: Messages;
  title: string;
  body: Html;
  /** Without JavaScript the page reloads itself this often (seconds); omitted for final pages. */
  refreshSeconds?: number;
  /** Our own scripts (asset names). */
  scripts?: string[];
  /** The page's own path, for the language links. */
  path?: string;
}

/** The shell of every public page: our stylesheet, no third-party asset, noindex, no referrer. */
export function layout(o: LayoutOptions): Html {
  const languages = o.path
    ? html`<nav class="languages" aria-label="${o.t.languageLabel}">${LANGUAGES.map((l) =>
        l === o.lang
          ? html`<span aria-current="true" lang="${l}">${LANGUAGE_NAMES[l]}</span>`
          : html`<a href="${o.path}?lang=${l}" lang="${l}" hreflang="${l}">${LANGUAGE_NAMES[l]}</a>`,
      )}</nav>`
    : null;
  return html`<!doctype html>
<html lang="${o.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${o.title}</title>
<link rel="stylesheet" href="${assetUrl('pages.css')}">
${o.refreshSeconds ? html`<noscript><meta http-equiv="refresh" content="${o.refreshSeconds}"></noscript>` : null}
${(o.scripts ?? []).map((s) => html`<script src="${assetUrl(s)}" defer></script>`)}
</head>
<body>
${o.body}
<footer class="site-footer">${languages}${o.refreshSeconds ? html`<noscript><p>${o.t.autoRefresh}</p></noscript>` : null}</footer>
</body>
</html>
`;
}

/** A page with a heading and one sentence (not found, too many requests, error). */
export function messagePage(lang: Language, t: Messages, title: string, text: string): string {
  return layout({ lang, t, title, body: html`<main class="card"><h1>${title}</h1><p>${text}</p></main>` }).text;
}

/** The organization's support contact on a payer page (payment, checkout); nothing when it has none. */
export function supportLine(contact: string | null, t: Messages): Html | null {
  if (!contact) return null;
  // Only e-mail addresses and http(s) URLs are stored (core/organizations/organization-profile.ts): never a script URL.
  return html`<p class="support" id="support">${t.supportLabel} <a href="${supportContactHref(contact)}" rel="noreferrer noopener">${contact}</a></p>`;
}
