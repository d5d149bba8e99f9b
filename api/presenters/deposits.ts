import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { UnbindResult } from '../../core/deposits/bindings';
import type { ReferenceDetail, ReferenceSummary } from '../../core/deposits/queries';
import { DateTime, iso, metadataOut, NullableDateTime } from '../../core/platform/wire-schema';
import { depositSchema, presentDeposit } from '../../core/views/deposit';
import { bindingFields, presentBinding, protocolSchema } from '../../core/views/deposit-reference';
import type { Page, WireFormat } from '../format';

/**
 * Deposit references where descriptions A and B conflict (reference detail and list, unbind
 * answer): the functions taking the deployment's WireFormat pick the shape. The resources' own
 * wire objects are in core/views/ (deposit.ts, deposit-reference.ts); api/format.ts keeps only the
 * envelope and list shape.
 */

const addressEntrySchema = Type.Object({ currency: Type.String(), chainId: Type.String(), protocol: protocolSchema, address: Type.String(), createdAt: DateTime() });

/**
 * B's `addresses` of a reference: one entry per registration; a family-wide binding (made with
 * POST /deposits/bind) lists every currency it is monitored for on every enabled chain.
 */
function addressEntries(s: ReferenceSummary): Static<typeof addressEntrySchema>[] {
  return s.bindings.flatMap((b) =>
    b.registrations.length > 0
      ? b.registrations.map((r) => ({ currency: r.currency, chainId: r.chainId, protocol: b.protocol, address: b.address, createdAt: r.createdAt.toISOString() }))
      : b.monitoringTargets.map((t) => ({ currency: t.token, chainId: t.chain, protocol: b.protocol, address: b.address, createdAt: b.createdAt.toISOString() })),
  );
}

// --- Unbind ----------------------------------------------------------------------------------

const unbindFields = {
  depositReference: Type.String(),
  unboundAddresses: Type.Integer({ description: 'Addresses released (each goes to cooldown for address_pool.unbind_cooldown_minutes)' }),
  addresses: Type.Array(Type.Object({ protocol: protocolSchema, address: Type.String() })),
};
/** A wraps the unbind result in its envelope; B answers flat with success and message. */
export const unbindSchemas = {
  a: Type.Object(unbindFields),
  b: Type.Object({ success: Type.Boolean(), message: Type.String(), ...unbindFields }),
};

/** Unbind answer: B flat {success, message, depositReference, unboundAddresses}; A enveloped. */
export function unbindAnswer(format: WireFormat, result: UnbindResult, message: string): unknown {
  const data: Static<typeof unbindSchemas.a> = { depositReference: result.depositReference, unboundAddresses: result.unboundAddresses, addresses: result.addresses };
  return format.flatSuccessBody(data, message, { withMessage: true });
}

// --- Reference detail and list -----------------------------------------------------------------

const totalsFields = {
  totalDeposits: Type.Integer({ description: 'Credited (confirmed or completed) deposits' }),
  lastDepositAt: NullableDateTime(),
};
const amountByCurrency = Type.Unsafe<Record<string, string>>({
  type: 'object',
  additionalProperties: { type: 'string' },
  example: { USDT: '10.5', DAI: '1.000000000000000001' },
});
const nominalTotal = Type.String({ description: 'Face-value sum over all currencies (USD stablecoins added 1:1, exactly)', example: '11.5' });

export const referenceDetailSchemas = {
  a: Type.Object({
    ...bindingFields,
    ...totalsFields,
    totalAmount: nominalTotal,
    totalAmountByCurrency: amountByCurrency,
    boundAt: DateTime(),
    deposits: Type.Array(depositSchema),
  }),
  b: Type.Object({
    depositReference: Type.String(),
    protocols: Type.Array(protocolSchema),
    addresses: Type.Array(addressEntrySchema),
    ...totalsFields,
    totalAmount: amountByCurrency,
    metadata: metadataOut(),
    createdAt: DateTime(),
  }),
};

/**
 * A deposit reference's detail. A (one family: the earliest bound, or the one asked for with
 * ?protocol=): protocol, address/depositAddress, boundAt, totalDeposits, totalAmount as ONE
 * string — the face-value sum of every currency (all USD stablecoins, added 1:1, exactly) —
 * with totalAmountByCurrency beside it, and the recent deposits. B: addresses of every family
 * and chain, totalAmount keyed by currency.
 */
export function referenceDetailAnswer(format: WireFormat, detail: ReferenceDetail): unknown {
  if (format.style === 'a') {
    const b = detail.bindings[0];
    const totals = detail.totalsByProtocol[b.protocol]!;
    const data: Static<typeof referenceDetailSchemas.a> = {
      ...presentBinding(b),
      totalDeposits: totals.count,
      totalAmount: totals.nominal,
      totalAmountByCurrency: totals.byCurrency,
      lastDepositAt: iso(totals.lastDepositAt),
      boundAt: b.createdAt.toISOString(),
      deposits: detail.recentDeposits.filter((d) => d.protocol === b.protocol).map(presentDeposit),
    };
    return format.body(data);
  }
  const data: Static<typeof referenceDetailSchemas.b> = {
    depositReference: detail.depositReference,
    protocols: detail.bindings.map((b) => b.protocol),
    addresses: addressEntries(detail),
    totalDeposits: detail.totals.count,
    totalAmount: detail.totals.byCurrency,
    lastDepositAt: iso(detail.totals.lastDepositAt),
    metadata: detail.bindings[0].metadata,
    createdAt: detail.bindings[0].createdAt.toISOString(),
  };
  return data;
}

const referenceItemA = Type.Object({
  depositReference: Type.String(),
  protocol: protocolSchema,
  address: Type.String(),
  depositAddress: Type.String(),
  monitoredChains: Type.Array(Type.String()),
  ...totalsFields,
  totalAmount: nominalTotal,
  totalAmountByCurrency: amountByCurrency,
  boundAt: DateTime(),
  metadata: metadataOut(),
});
const referenceItemB = Type.Object({
  depositReference: Type.String(),
  protocols: Type.Array(protocolSchema),
  addressCount: Type.Integer(),
  ...totalsFields,
  totalAmount: amountByCurrency,
  metadata: metadataOut(),
  createdAt: DateTime(),
});

/** A's list is data.references with total/page/limit (not a standard list); B's is a standard list. */
export const referenceListDocs: { a: { response: TSchema }; b: { response: TSchema; listOf: string } } = {
  a: {
    response: Type.Object({ references: Type.Array(referenceItemA), total: Type.Integer(), page: Type.Integer(), limit: Type.Integer() }),
  },
  b: { response: referenceItemB, listOf: 'references' },
};

/**
 * Deposit reference list. A: one item per bound family (depositReference, protocol,
 * depositAddress, totals, lastDepositAt, boundAt) in data.references with total/page/limit
 * counting references (the deposit service page's shape). B: one item per reference (protocols,
 * addressCount, totalAmount by currency) in the standard list shape.
 */
export function referenceListAnswer(format: WireFormat, items: ReferenceSummary[], page: Page): unknown {
  if (format.style === 'a') {
    const rows = items.flatMap((s) =>
      s.bindings.map((b): Static<typeof referenceItemA> => {
        const totals = s.totalsByProtocol[b.protocol]!;
        return {
          depositReference: s.depositReference,
          protocol: b.protocol,
          address: b.address,
          depositAddress: b.address,
          monitoredChains: b.monitoredChains,
          totalDeposits: totals.count,
          totalAmount: totals.nominal,
          totalAmountByCurrency: totals.byCurrency,
          lastDepositAt: iso(totals.lastDepositAt),
          boundAt: b.createdAt.toISOString(),
          metadata: b.metadata,
        };
      }),
    );
    return format.body({ references: rows, total: page.total, page: page.page, limit: page.limit });
  }
  const rows = items.map((s): Static<typeof referenceItemB> => ({
    depositReference: s.depositReference,
    protocols: s.bindings.map((b) => b.protocol),
    addressCount: new Set(s.bindings.map((b) => b.address)).size,
    totalDeposits: s.totals.count,
    totalAmount: s.totals.byCurrency,
    lastDepositAt: iso(s.totals.lastDepositAt),
    metadata: s.bindings[0].metadata,
    createdAt: s.bindings[0].createdAt.toISOString(),
  }));
  return format.listBody('references', rows, page);
}
