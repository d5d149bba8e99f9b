import type { BindingView, Registration } from '../core/deposits/bindings';
import type { ReferenceSummary } from '../core/deposits/queries';
import { iso } from './present';

/**
 * Style-neutral wire objects of deposit references and deposits. Where descriptions A and B
 * conflict (reference detail and list items) api/format.ts picks the shape.
 */

/** The bind answer: description A's fields plus the deposit service page's aliases. */
export function presentBinding(b: BindingView) {
  return {
    depositReference: b.depositReference,
    protocol: b.protocol,
    address: b.address,
    depositAddress: b.address,
    monitoredChains: b.monitoredChains,
    monitoringTargets: b.monitoringTargets,
    metadata: b.metadata,
    createdAt: iso(b.createdAt),
    bindingCreatedAt: iso(b.createdAt),
  };
}

/** Description B's registration answer (one currency on one chain). */
export function presentRegistration(b: BindingView, r: Registration) {
  return {
    depositReference: b.depositReference,
    currency: r.currency,
    chainId: r.chainId,
    protocol: b.protocol,
    address: b.address,
    monitoredChains: b.monitoredChains,
    metadata: b.metadata,
    createdAt: iso(r.createdAt),
  };
}

/**
 * B's `addresses` of a reference: one entry per registration; a family-wide binding (made with
 * POST /deposits/bind) lists every currency it is monitored for on every enabled chain.
 */
export function addressEntries(s: ReferenceSummary) {
  return s.bindings.flatMap((b) =>
    b.registrations.length > 0
      ? b.registrations.map((r) => ({ currency: r.currency, chainId: r.chainId, protocol: b.protocol, address: b.address, createdAt: iso(r.createdAt) }))
      : b.monitoringTargets.map((t) => ({ currency: t.token, chainId: t.chain, protocol: b.protocol, address: b.address, createdAt: iso(b.createdAt) })),
  );
}
