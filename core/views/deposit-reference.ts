import { Type, type Static } from '@sinclair/typebox';
import { PROTOCOLS, type Protocol } from '../chains/registry';
import { DateTime, metadataOut, StringEnum } from '../platform/wire-schema';

/**
 * A deposit reference's binding and registration on the wire. Where descriptions A and B conflict
 * (reference detail and list, unbind answer) api/presenters/deposits.ts picks the shape.
 */

/** A binding as core/deposits/bindings.ts hands it out (declared here, beside its presenter). */
export interface MonitoringTarget {
  chain: string;
  contract: string;
  token: string;
}

export interface Registration {
  chainId: string;
  currency: string;
  createdAt: Date;
}

export interface BindingView {
  bindingId: string;
  depositReference: string;
  protocol: Protocol;
  address: string;
  metadata: Record<string, unknown>;
  createdAt: Date;
  /** Every enabled chain of the family: where deposits to the address are seen. */
  monitoredChains: string[];
  /** Every (chain, token contract) watched for the address. */
  monitoringTargets: MonitoringTarget[];
  /** Description B registrations (currency, chain) of this binding; empty for family-wide binds. */
  registrations: Registration[];
}

/** A protocol family on the wire. */
export const protocolSchema = StringEnum(PROTOCOLS);

/** The fields of a deposit reference's binding (also in description A's reference detail). */
export const bindingFields = {
  depositReference: Type.String(),
  protocol: protocolSchema,
  address: Type.String(),
  depositAddress: Type.String({ description: 'Same as address' }),
  monitoredChains: Type.Array(Type.String()),
  monitoringTargets: Type.Array(Type.Object({ chain: Type.String(), contract: Type.String(), token: Type.String() })),
  metadata: metadataOut(),
  createdAt: DateTime(),
  bindingCreatedAt: DateTime({ description: 'Same as createdAt' }),
};
export const bindingSchema = Type.Object(bindingFields);

/** The bind answer: description A's fields plus the deposit service page's aliases. */
export function presentBinding(b: BindingView): Static<typeof bindingSchema> {
  return {
    depositReference: b.depositReference,
    protocol: b.protocol,
    address: b.address,
    depositAddress: b.address,
    monitoredChains: b.monitoredChains,
    monitoringTargets: b.monitoringTargets,
    metadata: b.metadata,
    createdAt: b.createdAt.toISOString(),
    bindingCreatedAt: b.createdAt.toISOString(),
  };
}

export const registrationSchema = Type.Object({
  depositReference: Type.String(),
  currency: Type.String(),
  chainId: Type.String(),
  protocol: protocolSchema,
  address: Type.String(),
  monitoredChains: Type.Array(Type.String()),
  metadata: metadataOut(),
  createdAt: DateTime(),
});

/** Description B's registration answer (one currency on one chain). */
export function presentRegistration(b: BindingView, r: Registration): Static<typeof registrationSchema> {
  return {
    depositReference: b.depositReference,
    currency: r.currency,
    chainId: r.chainId,
    protocol: b.protocol,
    address: b.address,
    monitoredChains: b.monitoredChains,
    metadata: b.metadata,
    createdAt: r.createdAt.toISOString(),
  };
}
