import type { AttemptView, DeliveryStatus, WebhookEventView } from '../../../core/webhooks/history';
import { html, type Html } from '../html';
import { formatDate } from './layout';

export function deliveryBadge(status: DeliveryStatus): Html {
  return html`<span class="badge ${status === 'succeeded' ? 'ok' : status === 'failed' ? 'bad' : 'warn'}">${status}</span>`;
}

/** Each attempt of a delivery: when, outcome, HTTP status, duration, error and the response's first bytes. */
export function attemptList(attempts: AttemptView[]): Html[] {
  return attempts.map(
    (a) =>
      html`<div class="attempt">#${a.attemptNumber} ${formatDate(a.startedAt)} · ${a.outcome}${a.statusCode !== null ? html` · HTTP <span class="status-code">${a.statusCode}</span>` : null}${a.durationMs !== null ? html` · <span class="duration">${a.durationMs} ms</span>` : null}${a.error ? ` · ${a.error}` : ''}${a.responseExcerpt ? html`<br><code class="excerpt">${a.responseExcerpt.slice(0, 200)}</code>` : null}</div>`,
  );
}

/** An order's events, each with its delivery to every endpoint and every attempt. */
export function eventDeliveriesTable(events: WebhookEventView[], redeliver: ((eventId: string, endpointId: string) => Html) | null): Html {
  if (events.length === 0) return html`<p>No events yet.</p>`;
  return html`<table id="order-events"><caption class="skip">Events and their webhook deliveries</caption><thead><tr><th>Event</th><th>Type</th><th>Created</th><th>Endpoint</th><th>Delivery</th><th>Attempts</th>${redeliver ? html`<th><span class="skip">Actions</span></th>` : null}</tr></thead><tbody>
${events.flatMap((ev) =>
  (ev.deliveries.length ? ev.deliveries : [null]).map(
    (dl) => html`<tr data-event-id="${ev.id}"><td class="mono">${ev.id}</td><td>${ev.type}</td><td>${formatDate(ev.createdAt)}</td>
<td class="mono">${dl ? html`<a href="/dashboard/settings/webhooks/${dl.endpointId}">${dl.url}</a>` : ev.dispatchedAt ? 'no endpoint subscribed' : 'not sent yet'}</td>
<td>${dl ? deliveryBadge(dl.status) : '—'}</td><td>${dl ? attemptList(dl.attempts) : null}</td>${redeliver ? html`<td>${dl ? redeliver(ev.id, dl.endpointId) : null}</td>` : null}</tr>`,
  ),
)}
</tbody></table>`;
}
