import { Type, type Static } from '@sinclair/typebox';
import { PROTOCOLS } from '../chains/registry';
import { POOL_ADDRESS_STATUSES, type PoolAddressView } from '../pool/queries';
import { DateTime, iso, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';

/** The address pool on the wire: its counts, its addresses and the result of an import. */

const POOL_MODES = ['hd_wallet', 'self_managed', 'derived'] as const;

export const poolCountsSchema = Type.Object({
  total: Type.Integer(),
  available: Type.Integer(),
  allocated: Type.Integer(),
  bound: Type.Integer(),
  coolingDown: Type.Integer(),
});

export const poolStatusSchema = Type.Object(Object.fromEntries(PROTOCOLS.map((p) => [p, poolCountsSchema])) as Record<(typeof PROTOCOLS)[number], typeof poolCountsSchema>);

const lineErrorSchema = Type.Object({ line: Type.Integer(), address: Type.String(), error: Type.String() });

/** The import (and derive) result, without the `success` the spec's answer carries (api/presenters/address-pool.ts adds it). */
export const importResultSchema = Type.Object({
  imported: Type.Integer({ description: 'Addresses added to the pool (available)' }),
  skipped: Type.Integer({ description: 'Lines not added: already in this pool, repeated in the input, or held by another organization' }),
  errors: Type.Array(lineErrorSchema, { description: 'Non-fatal: addresses skipped because another organization holds them' }),
  summary: Type.Object({
    protocol: StringEnum(PROTOCOLS),
    mode: StringEnum(POOL_MODES),
    derivation_range: Nullable(Type.Object({ start: Type.Integer(), end: Type.Integer() })),
    master_public_key: Nullable(Type.String()),
    master_public_keys: Type.Optional(Type.Array(Type.String(), { description: 'Present when the lines name several extended public keys' })),
    verified: Type.Optional(Type.Boolean({ description: 'Every address was checked against its master public key (EVM and Tron hd_wallet)' })),
    note: Type.Optional(Type.String()),
  }),
});

export const poolAddressSchema = Type.Object({
  id: Type.Integer(),
  address: Type.String(),
  protocol: StringEnum(PROTOCOLS),
  status: StringEnum(POOL_ADDRESS_STATUSES),
  mode: Type.String({ enum: [...POOL_MODES] }),
  derivationIndex: Nullable(Type.Integer()),
  masterPublicKey: Nullable(Type.String()),
  cooldownUntil: NullableDateTime(),
  recycledAt: NullableDateTime(),
  createdAt: DateTime(),
  updatedAt: DateTime(),
  heldBy: Type.Unsafe<PoolAddressView['heldBy']>({
    type: ['object', 'null'],
    description: 'The current holder: {kind: "order", orderId} or {kind: "deposit", depositBindingId}',
  }),
});

export function presentPoolAddress(a: PoolAddressView): Static<typeof poolAddressSchema> {
  return {
    ...a,
    cooldownUntil: iso(a.cooldownUntil),
    recycledAt: iso(a.recycledAt),
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
  };
}
