import type { ChainRegistry } from '../../../core/chains/registry';
import { html, type Html } from '../html';

/**
 * Table cells the dashboard's lists share (issue 40, a newcomer's trial: addresses and hashes
 * wrapped into ten-line cells, chains showed as ids, a completed deposit read "10/3").
 */

/** Characters kept at each end of a long value; shorter values are shown whole. */
const HEAD = 10;
const TAIL = 8;

/**
 * A long hex or base58 value (address, transaction hash) on one line: its start and end around an
 * ellipsis, the whole value in the title (hover) and for screen readers, never wrapped.
 */
export function longValue(value: string, href?: string | null): Html {
  const short = value.length > HEAD + TAIL + 1 ? `${value.slice(0, HEAD)}…${value.slice(-TAIL)}` : value;
  const inner = html`<span aria-hidden="true">${short}</span><span class="skip">${value}</span>`;
  return href
    ? html`<a class="long-value" href="${href}" title="${value}" rel="noopener noreferrer">${inner}</a>`
    : html`<span class="long-value" title="${value}">${inner}</span>`;
}

/** A chain as people know it: the registry's name (its id in the title); an unknown id as itself. */
export function chainLabel(registry: Pick<ChainRegistry, 'get'>, chainId: string | null): Html {
  // A USD order whose payer has not chosen a route yet.
  if (chainId === null) return html`<span class="muted">no route chosen yet</span>`;
  const name = registry.get(chainId)?.name;
  return name ? html`<span title="${chainId}">${name}</span>` : html`${chainId}`;
}

/**
 * Confirmations in words: while pending, how far it is ("2 of 3 confirmations"); once confirmed
 * or completed, how many it has ("10 confirmations", more than required is no news); nothing for
 * a dropped or reorged transfer, whose count means nothing.
 */
export function confirmationsText(status: string, confirmations: number, required: number | null): string {
  const plural = (n: number) => `${n} confirmation${n === 1 ? '' : 's'}`;
  if (status === 'pending') return required !== null ? `${confirmations} of ${plural(required)}` : plural(confirmations);
  if (status === 'confirmed' || status === 'completed') return plural(confirmations);
  return '';
}
