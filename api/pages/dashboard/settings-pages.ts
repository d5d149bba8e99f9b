import type { Express, Request, Response } from 'express';
import { createApiKey, listApiKeysPage } from '../../../core/organizations/organizations';
import { inviteMember } from '../../../core/users/sign-in-mail';
import { ROLES, roleAtLeast, type Role } from '../../../core/organizations/roles';
import { AppError, validationError } from '../../../core/platform/errors';
import { getOrganizationProfile, ORGANIZATION_NAME_MAX, SUPPORT_CONTACT_MAX, updateOrganizationProfile } from '../../../core/organizations/organization-profile';
import { createWebhookEndpoint, deleteWebhookEndpoint, getWebhookEndpoint, listWebhookEndpoints, updateWebhookEndpoint } from '../../../core/webhooks/endpoints';
import { listWebhookEvents, REDELIVER_FAILED_AT_ONCE, retryingDeliveries } from '../../../core/webhooks/history';
import { EVENT_TYPES, type EventType } from '../../../core/events/events';
import { changeMemberRole, listMembers, removeMember } from '../../../core/users/users';
import { redeliverEvent, redeliverFailed, revokeKeyEverywhere, sendRetryingDeliveriesNow, sendTestEvent } from '../../operations';
import { attemptList, deliveryBadge } from './webhook-views';
import { chromeText, langOf } from './chrome-text';
import { html, type Html } from '../html';
import { csrfField, formatDate, notice, pager, postButton } from './layout';
import { action, field, page, sendPage, type Dashboard, type SignedIn } from './web';

const PAGE_SIZE = 50;

/** A form's date and time (datetime-local, read as UTC; seconds optional); a date that does not exist is refused. */
function parseUtcDateTime(text: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text.trim());
  const date = m ? new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] ?? 0))) : null;
  if (!date || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 16) !== `${m![1]}-${m![2]}-${m![3]}T${m![4]}:${m![5]}`) {
    throw validationError('Enter the time as YYYY-MM-DDTHH:MM (UTC)');
  }
  return date;
}

/** "2 deliveries are still retrying; the next attempt is at …" */
function retryingText(r: { count: number; nextAttemptAt: Date | null }): string {
  const which = r.count === 1 ? '1 delivery is' : `${r.count.toLocaleString('en')} deliveries are`;
  return `${which} still retrying after failed attempts; the next attempt is ${r.nextAttemptAt ? `at ${formatDate(r.nextAttemptAt)}` : 'due now'}.`;
}

export function pageNumber(req: Request): number {
  const n = Number(req.query.page);
  return Number.isInteger(n) && n >= 1 && n <= 100_000 ? n : 1;
}

/** Roles this user may hand out (the domain refuses anything else anyway). */
function grantable(role: Role): Role[] {
  return ROLES.filter((r) => roleAtLeast(role, r) && (r !== 'owner' || role === 'owner'));
}

function roleOptions(role: Role, selected?: Role): Html[] {
  return grantable(role).map((r) => html`<option value="${r}"${r === (selected ?? 'member') ? html` selected` : null}>${r}</option>`);
}

export function mountSettingsPages(app: Express, d: Dashboard): void {
  const { deps } = d;
  const render = (res: Response, who: SignedIn, section: string, title: string, body: Html, status = 200) => sendPage(d, res, who, section, title, body, status);

  // ---- Organization (Settings, Organization): what payers see. Everyone reads it; Admins and
  // Owners change it through the API's operation (PUT /organizations/:id), which audit-logs it.
  const organizationPage = async (res: Response, who: SignedIn, top: Html | null = null, status = 200, sent?: { name: string; supportContact: string }) => {
    const org = await getOrganizationProfile(deps.db, who.caller);
    const admin = roleAtLeast(who.session.role, 'admin');
    const name = sent?.name ?? org.name;
    const contact = sent?.supportContact ?? org.supportContact ?? '';
    await render(
      res,
      who,
      '/dashboard/settings/organization',
      'Organization',
      html`${top}
<section class="panel" aria-labelledby="org-profile"><h2 id="org-profile">What payers see</h2>
<p class="muted">The payment and checkout pages say "Payment to <strong>${org.name}</strong>"${org.supportContact ? html` and offer <strong>${org.supportContact}</strong> for questions` : null}.</p>
${admin
  ? html`<form method="post" action="/dashboard/settings/organization">${csrfField(who.session)}
<label for="org-name">Display name</label><input id="org-name" name="name" type="text" maxlength="${ORGANIZATION_NAME_MAX}" required value="${name}">
<label for="org-support">Support contact (an e-mail address or an https:// link; empty for none)</label><input id="org-support" name="supportContact" type="text" maxlength="${SUPPORT_CONTACT_MAX}" value="${contact}" placeholder="support@shop.example">
<p><button type="submit">${chromeText(langOf(res), 'Save')}</button></p></form>`
  : html`<dl class="facts"><dt>Display name</dt><dd>${org.name}</dd><dt>Support contact</dt><dd>${org.supportContact ?? '—'}</dd></dl><p class="muted">Admins and Owners can change these.</p>`}
</section>`,
      status,
    );
  };
  app.get('/dashboard/settings/organization', page(d, 'viewer', (_req, res, who) => organizationPage(res, who)));
  app.post(
    '/dashboard/settings/organization',
    action(d, 'admin', async (req, res, who) => {
      const sent = { name: field(req, 'name'), supportContact: field(req, 'supportContact') };
      try {
        const org = await updateOrganizationProfile(deps.db, who.caller, who.caller.organizationId, sent, { userId: who.session.userId, actor: who.session.email, ip: who.ip });
        await organizationPage(res, who, notice(`Saved: payers now see "${org.name}".`));
      } catch (err) {
        // A bad value: the form again with what was typed and what is wrong, nothing changed.
        if (!(err instanceof AppError) || err.status !== 400) throw err;
        await organizationPage(res, who, notice(err.message, 'error'), 400, sent);
      }
    }),
  );

  // ---- API keys (Settings, API Keys): Admins and Owners, as the API's key routes.
  const keysPage = async (req: Request, res: Response, who: SignedIn, top: Html | null = null, status = 200) => {
    const pageNo = pageNumber(req);
    const { items, total } = await listApiKeysPage(deps.db, who.caller, who.caller.organizationId, { page: pageNo, limit: PAGE_SIZE });
    const csrf = csrfField(who.session);
    await render(
      res,
      who,
      '/dashboard/settings/api-keys',
      'API keys',
      html`${top}
<section class="panel" aria-labelledby="new-key"><h2 id="new-key">${chromeText(langOf(res), 'Create an API key')}</h2>
<form method="post" action="/dashboard/settings/api-keys" class="row">${csrf}
<div><label for="key-name">Name</label><input id="key-name" name="name" type="text" maxlength="100" required></div>
<div><label for="key-role">Role</label><select id="key-role" name="role">${roleOptions(who.session.role)}</select></div>
<div><button type="submit">${chromeText(langOf(res), 'Create key')}</button></div></form></section>
<section class="panel"><table><caption class="skip">API keys</caption><thead><tr><th>Name</th><th>Role</th><th>Key</th><th>Created</th><th>Status</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
${items.map(
  (k) => html`<tr data-key-id="${k.id}"><td>${k.name}</td><td>${k.role}</td><td class="mono">${k.keyPrefix}…</td><td>${formatDate(k.createdAt)}</td>
<td>${k.revokedAt ? html`<span class="badge bad">revoked ${formatDate(k.revokedAt)}</span>` : html`<span class="badge ok">active</span>`}</td>
<td>${k.revokedAt ? null : html`<form method="post" action="/dashboard/settings/api-keys/${k.id}/revoke" class="inline">${csrf}<button class="danger" type="submit" aria-label="${chromeText(langOf(res), 'Revoke')} ${k.name}">${chromeText(langOf(res), 'Revoke')}</button></form>`}</td></tr>`,
)}
</tbody></table>${pager('/dashboard/settings/api-keys', {}, pageNo, PAGE_SIZE, total, langOf(res))}</section>`,
      status,
    );
  };
  app.get('/dashboard/settings/api-keys', page(d, 'admin', (req, res, who) => keysPage(req, res, who)));
  app.post(
    '/dashboard/settings/api-keys',
    action(d, 'admin', async (req, res, who) => {
      const name = field(req, 'name').trim();
      if (!name || name.length > 100) throw validationError('A key needs a name of 1 to 100 characters');
      const role = field(req, 'role') as Role;
      if (!ROLES.includes(role)) throw validationError(`role must be one of ${ROLES.join(', ')}`);
      const created = await createApiKey(deps.db, who.caller, who.caller.organizationId, { name, role });
      await who.audit('api_key.created', created.id, { name, role, keyPrefix: created.keyPrefix });
      res.setHeader('Cache-Control', 'no-store');
      await keysPage(
        req,
        res,
        who,
        html`<div class="notice" role="status"><p>API key <strong>${name}</strong> (${role}) created. Copy it now: it is not shown again.</p><code class="secret" id="new-secret">${created.key}</code></div>`,
        201,
      );
    }),
  );
  app.post(
    '/dashboard/settings/api-keys/:keyId/revoke',
    action(d, 'admin', async (req, res, who) => {
      const revoked = await revokeKeyEverywhere(deps, who.caller, String(req.params.keyId));
      await who.audit('api_key.revoked', revoked.id, { name: revoked.name, role: revoked.role });
      await keysPage(req, res, who, notice(`API key ${revoked.name} revoked.`));
    }),
  );

  // ---- Webhooks (Settings, Webhooks): everyone sees them; Admins and Owners change them.
  const webhooksPage = async (req: Request, res: Response, who: SignedIn, top: Html | null = null, status = 200) => {
    const pageNo = pageNumber(req);
    const { items, total } = await listWebhookEndpoints(deps.db, who.caller, { page: pageNo, limit: PAGE_SIZE });
    const admin = roleAtLeast(who.session.role, 'admin');
    const csrf = csrfField(who.session);
    const button = (id: string, verb: string, label: string, cls = 'secondary') => html`${postButton(`/dashboard/settings/webhooks/${id}/${verb}`, who.session, label, cls, langOf(res))} `;
    await render(
      res,
      who,
      '/dashboard/settings/webhooks',
      'Webhooks',
      html`${top}
${admin
  ? html`<section class="panel" aria-labelledby="new-ep"><h2 id="new-ep">${chromeText(langOf(res), 'Add an endpoint')}</h2>
<form method="post" action="/dashboard/settings/webhooks">${csrf}
<label for="ep-url">URL (HTTPS)</label><input id="ep-url" name="url" type="url" maxlength="2048" required placeholder="https://shop.example/webhooks/stablegate">
<fieldset><legend>Events</legend>${EVENT_TYPES.map(
      (t) => html`<label style="font-weight:normal"><input type="checkbox" name="events" value="${t}"${t.startsWith('order.') ? html` checked` : null}> ${t}</label>`,
    )}</fieldset>
<p><button type="submit">${chromeText(langOf(res), 'Add endpoint')}</button></p></form></section>`
  : null}
<section class="panel"><table><caption class="skip">Webhook endpoints</caption><thead><tr><th>URL</th><th>Events</th><th>State</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
${items.map(
  (e) => html`<tr data-endpoint-id="${e.id}"><td class="mono"><a href="/dashboard/settings/webhooks/${e.id}">${e.url}</a></td><td>${e.events.join(', ')}</td>
<td>${e.enabled ? html`<span class="badge ok">enabled</span>` : html`<span class="badge bad">disabled</span> ${e.disabledReason}`}${e.failingSince ? html` <span class="badge warn">failing since ${formatDate(e.failingSince)}</span>` : null}</td>
<td>${admin
    ? html`${button(e.id, 'test', 'Send test event')}${button(e.id, 'rotate-secret', 'Rotate secret')}${e.enabled ? button(e.id, 'disable', 'Disable') : button(e.id, 'enable', 'Enable')}${button(e.id, 'delete', 'Delete', 'danger')}`
    : null}</td></tr>`,
)}
</tbody></table>${pager('/dashboard/settings/webhooks', {}, pageNo, PAGE_SIZE, total, langOf(res))}</section>`,
      status,
    );
  };
  app.get('/dashboard/settings/webhooks', page(d, 'viewer', (req, res, who) => webhooksPage(req, res, who)));

  const secretNotice = (text: string, secret: string) =>
    html`<div class="notice" role="status"><p>${text} Copy the signing secret now: it is not shown again.</p><code class="secret" id="new-secret">${secret}</code></div>`;

  app.post(
    '/dashboard/settings/webhooks',
    action(d, 'admin', async (req, res, who) => {
      const body = req.body as Record<string, unknown>;
      const events = (Array.isArray(body.events) ? body.events : [body.events]).filter((e): e is EventType => (EVENT_TYPES as readonly unknown[]).includes(e));
      if (events.length === 0) throw validationError('Choose at least one event');
      const url = field(req, 'url').trim();
      if (!url || url.length > 2048) throw validationError('Enter the endpoint URL');
      const { endpoint, secret } = await createWebhookEndpoint(deps, who.caller, { url, events });
      await who.audit('webhook_endpoint.created', endpoint.id, { url, events });
      await webhooksPage(req, res, who, secretNotice(`Endpoint ${url} added.`, secret), 201);
    }),
  );
  const endpointAction = (verb: string, work: (who: SignedIn, id: string) => Promise<Html | null>) =>
    app.post(
      `/dashboard/settings/webhooks/:id/${verb}`,
      action(d, 'admin', async (req, res, who) => webhooksPage(req, res, who, await work(who, String(req.params.id)))),
    );
  endpointAction('rotate-secret', async (who, id) => {
    const { endpoint, secret } = await updateWebhookEndpoint(deps, who.caller, id, { rotateSecret: true });
    await who.audit('webhook_endpoint.secret_rotated', endpoint.id);
    return secretNotice(`The secret of ${endpoint.url} was rotated.`, secret!);
  });
  endpointAction('enable', async (who, id) => {
    const { endpoint } = await updateWebhookEndpoint(deps, who.caller, id, { enabled: true });
    await who.audit('webhook_endpoint.enabled', endpoint.id);
    return notice(`${endpoint.url} enabled.`);
  });
  endpointAction('disable', async (who, id) => {
    const { endpoint } = await updateWebhookEndpoint(deps, who.caller, id, { enabled: false });
    await who.audit('webhook_endpoint.disabled', endpoint.id);
    return notice(`${endpoint.url} disabled.`);
  });
  endpointAction('delete', async (who, id) => {
    const endpoint = await deleteWebhookEndpoint(deps, who.caller, id);
    await who.audit('webhook_endpoint.deleted', endpoint.id, { url: endpoint.url });
    return notice(`${endpoint.url} deleted.`);
  });
  endpointAction('test', async (who, id) => {
    const event = await sendTestEvent(deps, who.caller, id);
    return html`<div class="notice" role="status">Test event ${event.id} queued. <a href="/dashboard/settings/webhooks/${id}">See its delivery</a>.</div>`;
  });

  // The delivery log of one endpoint: each event, its delivery state, every attempt.
  const deliveriesPage = async (req: Request, res: Response, who: SignedIn, top: Html | null = null) => {
    const id = String(req.params.id);
    const endpoint = await getWebhookEndpoint(deps.db, who.caller, id);
    const pageNo = pageNumber(req);
    const { items, total } = await listWebhookEvents(deps.db, who.caller, { page: pageNo, limit: 25, endpointId: id });
    const admin = roleAtLeast(who.session.role, 'admin');
    const retrying = await retryingDeliveries(deps.db, who.caller, id);
    await render(
      res,
      who,
      '/dashboard/settings/webhooks',
      'Webhook deliveries',
      html`${top}<p class="mono">${endpoint.url}</p>
${retrying.count > 0
  ? html`<section class="panel" id="retrying" aria-labelledby="retrying-h"><h2 id="retrying-h">Still retrying</h2>
<p>${retryingText(retrying)} They are not failed until their retries are spent, so "Redeliver all failed" does not take them.</p>
${admin ? html`<form method="post" action="/dashboard/settings/webhooks/${id}/send-retrying-now" class="inline">${csrfField(who.session)}<button type="submit">Send them now</button></form>` : null}</section>`
  : null}
${admin
  ? html`<section class="panel" aria-labelledby="bulk-h"><h2 id="bulk-h">${chromeText(langOf(res), 'Redeliver failed deliveries')}</h2>
<form method="post" action="/dashboard/settings/webhooks/${id}/redeliver-failed" class="row">${csrfField(who.session)}
<div><label for="since">Failed since (UTC)</label><input id="since" name="since" type="datetime-local" required value="${new Date(deps.clock.now().getTime() - 24 * 3600_000).toISOString().slice(0, 16)}"></div>
<div><button type="submit">${chromeText(langOf(res), 'Redeliver all failed')}</button></div></form></section>`
  : null}
<section class="panel"><table id="deliveries"><caption class="skip">Events sent to this endpoint</caption><thead><tr><th>Event</th><th>Type</th><th>Created</th><th>Delivery</th><th>Attempts</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
${items.map((ev) => {
  const delivery = ev.deliveries.find((x) => x.endpointId === id);
  return html`<tr data-event-id="${ev.id}"><td class="mono">${ev.id}</td><td>${ev.type}</td><td>${formatDate(ev.createdAt)}</td>
<td>${delivery ? deliveryBadge(delivery.status) : '—'}</td>
<td>${attemptList(delivery?.attempts ?? [])}</td>
<td>${admin ? postButton(`/dashboard/settings/webhooks/${id}/events/${ev.id}/redeliver`, who.session, 'Redeliver', 'secondary', langOf(res)) : null}</td></tr>`;
})}
</tbody></table>${pager(`/dashboard/settings/webhooks/${id}`, {}, pageNo, 25, total, langOf(res))}</section>`,
    );
  };
  app.get('/dashboard/settings/webhooks/:id', page(d, 'viewer', (req, res, who) => deliveriesPage(req, res, who)));
  app.post(
    '/dashboard/settings/webhooks/:id/events/:eventId/redeliver',
    action(d, 'admin', async (req, res, who) => {
      const event = await redeliverEvent(deps, who.caller, String(req.params.eventId), { endpointId: String(req.params.id) });
      await who.audit('webhook_event.redelivered', event.id, { endpointId: String(req.params.id) });
      await deliveriesPage(req, res, who, notice(`Event ${event.id} queued for redelivery.`));
    }),
  );

  app.post(
    '/dashboard/settings/webhooks/:id/send-retrying-now',
    action(d, 'admin', async (req, res, who) => {
      const { count, more } = await sendRetryingDeliveriesNow(deps, who.caller, String(req.params.id));
      await who.audit('webhook_deliveries.sent_now', String(req.params.id), { count });
      const sent = count ? `${count} retrying ${count === 1 ? 'delivery' : 'deliveries'} sent now.` : 'No delivery is waiting for a retry.';
      await deliveriesPage(req, res, who, notice(more ? `${sent} More are waiting (at most ${REDELIVER_FAILED_AT_ONCE.toLocaleString('en')} go at once): send again for the next ones.` : sent));
    }),
  );

  app.post(
    '/dashboard/settings/webhooks/:id/redeliver-failed',
    action(d, 'admin', async (req, res, who) => {
      const since = parseUtcDateTime(field(req, 'since'));
      const { count, more } = await redeliverFailed(deps, who.caller, String(req.params.id), since);
      await who.audit('webhook_deliveries.redelivered', String(req.params.id), { since: since.toISOString(), count });
      const retrying = count ? null : await retryingDeliveries(deps.db, who.caller, String(req.params.id));
      // Deliveries whose every attempt failed are still "retrying", not "failed", until their schedule is spent: say so.
      const queued = count
        ? `${count} failed ${count === 1 ? 'delivery' : 'deliveries'} since ${formatDate(since)} queued again.`
        : `No delivery failed since ${formatDate(since)}.${retrying?.count ? ` ${retryingText(retrying)} Use "Send them now" to try them at once.` : ''}`;
      await deliveriesPage(req, res, who, notice(more ? `${queued} More failed since then (at most ${REDELIVER_FAILED_AT_ONCE.toLocaleString('en')} go at once): submit again for the next ones.` : queued));
    }),
  );

  // ---- Members: everyone sees who belongs; Admins and Owners invite, change roles, remove.
  const membersPage = async (res: Response, who: SignedIn, top: Html | null = null, status = 200) => {
    const members = await listMembers(deps.db, who.caller);
    const admin = roleAtLeast(who.session.role, 'admin');
    const csrf = csrfField(who.session);
    await render(
      res,
      who,
      '/dashboard/settings/members',
      'Members',
      html`${top}
${admin
  ? html`<section class="panel" aria-labelledby="invite-h"><h2 id="invite-h">${chromeText(langOf(res), 'Invite someone')}</h2>
<form method="post" action="/dashboard/settings/members" class="row">${csrf}
<div><label for="invite-email">E-mail</label><input id="invite-email" name="email" type="email" required></div>
<div><label for="invite-role">Role</label><select id="invite-role" name="role">${roleOptions(who.session.role)}</select></div>
<div><button type="submit">${chromeText(langOf(res), 'Invite')}</button></div></form></section>`
  : null}
<section class="panel"><table><caption class="skip">Members</caption><thead><tr><th>E-mail</th><th>Role</th><th>Since</th><th><span class="skip">Actions</span></th></tr></thead><tbody>
${members.map(
  (m) => html`<tr data-user-id="${m.userId}"><td>${m.email}${m.hasPassword ? null : html` <span class="badge warn">invited</span>`}</td><td>${m.role}</td><td>${formatDate(m.createdAt)}</td>
<td>${admin && m.userId !== who.session.userId
    ? html`<form method="post" action="/dashboard/settings/members/${m.userId}/role" class="inline">${csrf}<label class="skip" for="role-${m.userId}">Role of ${m.email}</label><select id="role-${m.userId}" name="role">${roleOptions(who.session.role, m.role)}</select> <button class="secondary" type="submit">${chromeText(langOf(res), 'Change role')}</button></form>
${postButton(`/dashboard/settings/members/${m.userId}/remove`, who.session, 'Remove', 'danger', langOf(res))}`
    : null}</td></tr>`,
)}
</tbody></table></section>`,
      status,
    );
  };
  app.get('/dashboard/settings/members', page(d, 'viewer', (_req, res, who) => membersPage(res, who)));
  app.post(
    '/dashboard/settings/members',
    action(d, 'admin', async (req, res, who) => {
      const { user, role, link, mailed } = await inviteMember(deps, who.caller, { email: field(req, 'email'), role: field(req, 'role') });
      await who.audit('member.invited', user.email, { role });
      if (mailed) return membersPage(res, who, notice(`${user.email} was added as ${role}; an invitation link was e-mailed to them.`), 201);
      await membersPage(
        res,
        who,
        html`<div class="notice" role="status"><p>${user.email} was added as ${role}. Send them this one-time invitation link (valid 7 days; it is not shown again):</p><code class="secret" id="invite-link">${link}</code></div>`,
        201,
      );
    }),
  );
  app.post(
    '/dashboard/settings/members/:userId/role',
    action(d, 'admin', async (req, res, who) => {
      const member = await changeMemberRole(deps.db, who.caller, String(req.params.userId), field(req, 'role'));
      await who.audit('member.role_changed', member.email, { role: member.role });
      await membersPage(res, who, notice(`${member.email} is now ${member.role}.`));
    }),
  );
  app.post(
    '/dashboard/settings/members/:userId/remove',
    action(d, 'admin', async (req, res, who) => {
      const member = await removeMember(deps.db, who.caller, String(req.params.userId));
      await who.audit('member.removed', member.email, { role: member.role });
      await membersPage(res, who, notice(`${member.email} was removed.`));
    }),
  );
}
