import type { Express, Response } from 'express';
import { PROTOCOLS, type Protocol } from '../../../core/chains/registry';
import { CONFIG_KEYS, listConfig, resetConfigValue, setConfigValue } from '../../../core/organizations/org-config';
import { roleAtLeast } from '../../../core/organizations/roles';
import { AppError, validationError } from '../../../core/platform/errors';
import { derivePoolAddresses, importPoolAddresses, MAX_DERIVE_COUNT, type ImportMode, type LineError } from '../../../core/pool/import';
import { poolStatus } from '../../../core/pool/queries';
import { chromeText, langOf } from './chrome-text';
import { html, type Html } from '../html';
import { csrfField, formatDate, notice } from './layout';
import { action, field, page, sendPage, type Dashboard, type SignedIn } from './web';
import { longValue } from './cells';

/** What an import form held, shown again after a refused import so nothing pasted is lost. */
interface ImportForm {
  protocol: string;
  mode: string;
  csv: string;
}

const thresholdKey = (p: Protocol) => `address_pool.low_threshold.${p}`;

export function mountPoolPages(app: Express, d: Dashboard): void {
  const { deps } = d;
  const render = (res: Response, who: SignedIn, section: string, title: string, body: Html, status = 200) => sendPage(d, res, who, section, title, body, status);

  // ---- Address pool (Admins and Owners, as the API): status per protocol with its threshold; CSV import and derivation.
  const poolPage = async (res: Response, who: SignedIn, top: Html | null = null, status = 200, sent?: ImportForm) => {
    const counts = await poolStatus(deps.db, who.caller.organizationId);
    const config = new Map((await listConfig(deps.db, who.caller.organizationId)).map((e) => [e.key, e]));
    const admin = roleAtLeast(who.session.role, 'admin');
    const csrf = csrfField(who.session);
    await render(
      res,
      who,
      '/dashboard/pool',
      'Address pool',
      html`${top}<section class="panel"><table id="pool-status"><caption class="skip">Pool status per protocol</caption><thead><tr><th>Protocol</th><th>Total</th><th>Available</th><th>Allocated</th><th>Bound</th><th>Cooling down</th><th>Low threshold</th></tr></thead><tbody>
${PROTOCOLS.map((p) => {
  const c = counts[p];
  const threshold = config.get(thresholdKey(p));
  return html`<tr data-protocol="${p}"><td>${p}</td><td class="num">${c.total}</td><td class="num">${c.available}</td><td class="num">${c.allocated}</td><td class="num">${c.bound}</td><td class="num">${c.coolingDown}</td>
<td>${admin
    ? html`<form method="post" action="/dashboard/pool/threshold" class="inline">${csrf}<input type="hidden" name="protocol" value="${p}"><label class="skip" for="th-${p}">Low threshold for ${p}</label><input id="th-${p}" name="value" type="text" size="6" value="${String(threshold?.value ?? '')}"> <button class="secondary" type="submit">${chromeText(langOf(res), 'Save')}</button></form>`
    : String(threshold?.value ?? '')}</td></tr>`;
})}
</tbody></table><p class="muted">A threshold is a count (100) or a percentage of the pool ("10%"); 0 turns the alert off. Alert e-mails go to the addresses in <a href="/dashboard/settings/configuration">configuration</a> (alerts.email).</p></section>
${admin
  ? html`<section class="panel" aria-labelledby="imp-h"><h2 id="imp-h">${chromeText(langOf(res), 'Import addresses (CSV)')}</h2>
<form method="post" action="/dashboard/pool/import">${csrf}
<div class="row"><div><label for="imp-protocol">Protocol</label><select id="imp-protocol" name="protocol">${PROTOCOLS.map((p) => html`<option${sent?.protocol === p ? html` selected` : null}>${p}</option>`)}</select></div>
<div><label for="imp-mode">Mode</label><select id="imp-mode" name="mode">${['self_managed', 'hd_wallet'].map((m) => html`<option value="${m}"${sent?.mode === m ? html` selected` : null}>${m}</option>`)}</select></div></div>
<label for="imp-csv">CSV text (header: address,protocol[,derivation_index,master_public_key])</label><textarea id="imp-csv" name="addresses" rows="8" required>${sent?.csv ?? ''}</textarea>
<p><button type="submit">${chromeText(langOf(res), 'Import')}</button></p></form></section>
<section class="panel" aria-labelledby="der-h"><h2 id="der-h">${chromeText(langOf(res), 'Derive from an extended public key')}</h2>
<form method="post" action="/dashboard/pool/derive" class="row">${csrf}
<div><label for="der-protocol">Protocol</label><select id="der-protocol" name="protocol"><option>evm</option><option>tron</option></select></div>
<div><label for="der-xpub">Extended public key (xpub…)</label><input id="der-xpub" name="masterPublicKey" type="text" maxlength="200" required></div>
<div><label for="der-start">Start index</label><input id="der-start" name="start" type="number" min="0" value="0"></div>
<div><label for="der-count">Count</label><input id="der-count" name="count" type="number" min="1" max="${MAX_DERIVE_COUNT}" value="100"></div>
<div><button type="submit">${chromeText(langOf(res), 'Derive')}</button></div></form></section>`
  : null}`,
      status,
    );
  };
  // Admins and Owners, as the API's pool routes (Members and Viewers get 403 there too).
  app.get('/dashboard/pool', page(d, 'admin', (_req, res, who) => poolPage(res, who)));

  app.post(
    '/dashboard/pool/threshold',
    action(d, 'admin', async (req, res, who) => {
      const protocol = field(req, 'protocol') as Protocol;
      if (!PROTOCOLS.includes(protocol)) throw validationError('Unknown protocol');
      const entry = await setConfigValue(deps.db, who.caller.organizationId, thresholdKey(protocol), field(req, 'value'));
      await who.audit('config.updated', entry.key, { value: entry.value });
      await poolPage(res, who, notice(`Low threshold for ${protocol} set to ${String(entry.value)}.`));
    }),
  );

  const lineErrors = (errors: LineError[]) =>
    html`<table id="import-errors"><caption>Lines with errors</caption><thead><tr><th>Line</th><th>Address</th><th>Error</th></tr></thead><tbody>${errors.map(
      (e) => html`<tr><td class="num">${e.line}</td><td>${e.address ? longValue(e.address) : null}</td><td>${e.error}</td></tr>`,
    )}</tbody></table>`;

  app.post(
    '/dashboard/pool/import',
    action(d, 'admin', async (req, res, who) => {
      const protocol = field(req, 'protocol') as Protocol;
      const mode = field(req, 'mode') as ImportMode;
      if (!PROTOCOLS.includes(protocol) || !['self_managed', 'hd_wallet'].includes(mode)) throw validationError('Choose a protocol and a mode');
      try {
        const result = await importPoolAddresses(deps.db, { organizationId: who.caller.organizationId, protocol, mode, csv: field(req, 'addresses'), now: deps.clock.now() });
        await who.audit('pool.imported', protocol, { mode, imported: result.imported, skipped: result.skipped });
        await poolPage(res, who, html`<div class="notice" role="status">Imported ${result.imported} addresses, skipped ${result.skipped}.${result.errors.length ? lineErrors(result.errors) : null}</div>`);
      } catch (err) {
        if (!(err instanceof AppError) || err.status !== 400) throw err;
        const details = Array.isArray(err.details) ? (err.details as LineError[]).filter((e) => typeof e?.line === 'number') : [];
        // Said once: most refusals already end with it (core/pool/import.ts), the others get it here.
        const message = /nothing was imported/i.test(err.message) ? err.message : `${err.message.replace(/\.$/, '')}. Nothing was imported.`;
        // The pasted text is kept to correct, except when it held key material: that is never echoed.
        const sent = { protocol, mode, csv: err.code === 'IMPORT_REJECTED' ? '' : field(req, 'addresses') };
        await poolPage(res, who, html`<div class="notice error" role="alert"><p>${message}</p>${details.length ? lineErrors(details) : null}</div>`, 400, sent);
      }
    }),
  );

  app.post(
    '/dashboard/pool/derive',
    action(d, 'admin', async (req, res, who) => {
      const protocol = field(req, 'protocol');
      if (protocol !== 'evm' && protocol !== 'tron') throw validationError('Derivation is offered for evm and tron');
      const start = Number(field(req, 'start') || '0');
      const count = Number(field(req, 'count'));
      if (!Number.isInteger(start) || start < 0 || !Number.isInteger(count) || count < 1 || count > MAX_DERIVE_COUNT) {
        throw validationError(`start must be an integer ≥ 0 and count from 1 to ${MAX_DERIVE_COUNT}`);
      }
      const result = await derivePoolAddresses(deps.db, {
        organizationId: who.caller.organizationId,
        protocol,
        masterPublicKey: field(req, 'masterPublicKey').trim(),
        start,
        count,
        now: deps.clock.now(),
      });
      await who.audit('pool.derived', protocol, { start, count, imported: result.imported });
      await poolPage(res, who, notice(`Derived ${result.imported + result.skipped} addresses, imported ${result.imported}.`));
    }),
  );

  // ---- Settings, configuration: every organization key (redirect URLs, confirmations, thresholds, alert e-mails).
  const configPage = async (res: Response, who: SignedIn, top: Html | null = null, status = 200) => {
    const entries = await listConfig(deps.db, who.caller.organizationId);
    const csrf = csrfField(who.session);
    await render(
      res,
      who,
      '/dashboard/settings/configuration',
      'Configuration',
      html`${top}<section class="panel"><table><caption class="skip">Configuration keys</caption><thead><tr><th>Key</th><th>Value</th><th>Updated</th></tr></thead><tbody>
${entries.map(
  (e, i) => html`<tr><td><code>${e.key}</code><br><span class="muted">${e.description}</span></td>
<td><form method="post" action="/dashboard/settings/configuration" class="inline">${csrf}<input type="hidden" name="key" value="${e.key}">
<label class="skip" for="cfg-${i}">${e.key}</label><input id="cfg-${i}" name="value" type="text" value="${e.value === null ? '' : String(e.value)}" placeholder="${e.default === null ? '(none)' : String(e.default)}">
<button class="secondary" type="submit" name="do" value="set">${chromeText(langOf(res), 'Save')}</button>${e.isDefault ? null : html` <button class="secondary" type="submit" name="do" value="reset">${chromeText(langOf(res), 'Reset')}</button>`}</form></td>
<td>${e.isDefault ? html`<span class="muted">default</span>` : formatDate(e.updatedAt)}</td></tr>`,
)}
</tbody></table></section>`,
      status,
    );
  };
  app.get('/dashboard/settings/configuration', page(d, 'admin', (_req, res, who) => configPage(res, who)));
  app.post(
    '/dashboard/settings/configuration',
    action(d, 'admin', async (req, res, who) => {
      const key = field(req, 'key');
      if (!CONFIG_KEYS.some((k) => k.key === key)) throw validationError('Unknown configuration key');
      const entry =
        field(req, 'do') === 'reset'
          ? await resetConfigValue(deps.db, who.caller.organizationId, key)
          : await setConfigValue(deps.db, who.caller.organizationId, key, field(req, 'value'));
      await who.audit(field(req, 'do') === 'reset' ? 'config.reset' : 'config.updated', entry.key, { value: entry.value });
      await configPage(res, who, notice(`${entry.key} is now ${entry.value === null ? '(none)' : String(entry.value)}.`));
    }),
  );
}
