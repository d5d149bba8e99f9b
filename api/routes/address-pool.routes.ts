import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { listQuerySchema } from '../validation';
import { iso } from '../present';
import { PROTOCOLS, type Protocol } from '../../core/chains/registry';
import { derivePoolAddresses, importPoolAddresses, MAX_DERIVE_COUNT, MAX_IMPORT_LINES, type ImportMode } from '../../core/pool/import';
import { MAX_DERIVATION_INDEX } from '../../core/pool/hd';
import {
  listPoolAddresses,
  poolStatus,
  POOL_ADDRESS_SORT,
  POOL_ADDRESS_STATUSES,
  type PoolAddressQuery,
  type PoolAddressView,
} from '../../core/pool/queries';

const countsSchema = {
  type: 'object',
  properties: {
    total: { type: 'integer' },
    available: { type: 'integer' },
    allocated: { type: 'integer' },
    bound: { type: 'integer' },
    coolingDown: { type: 'integer' },
  },
};

const lineErrorSchema = {
  type: 'object',
  properties: { line: { type: 'integer' }, address: { type: 'string' }, error: { type: 'string' } },
};

const importResultSchema = {
  type: 'object',
  properties: {
    success: { const: true },
    imported: { type: 'integer', description: 'Addresses added to the pool (available)' },
    skipped: { type: 'integer', description: 'Lines not added: already in this pool, repeated in the input, or held by another organization' },
    errors: { type: 'array', items: lineErrorSchema, description: 'Non-fatal: addresses skipped because another organization holds them' },
    summary: {
      type: 'object',
      properties: {
        protocol: { type: 'string', enum: PROTOCOLS },
        mode: { type: 'string', enum: ['hd_wallet', 'self_managed', 'derived'] },
        derivation_range: { type: ['object', 'null'], properties: { start: { type: 'integer' }, end: { type: 'integer' } } },
        master_public_key: { type: ['string', 'null'] },
        master_public_keys: { type: 'array', items: { type: 'string' }, description: 'Present when the lines name several extended public keys' },
        verified: { type: 'boolean', description: 'Every address was checked against its master public key (EVM and Tron hd_wallet)' },
        note: { type: 'string' },
      },
    },
  },
};

const poolAddressSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    address: { type: 'string' },
    protocol: { type: 'string', enum: PROTOCOLS },
    status: { type: 'string', enum: POOL_ADDRESS_STATUSES },
    mode: { type: 'string', enum: ['hd_wallet', 'self_managed', 'derived'] },
    derivationIndex: { type: ['integer', 'null'] },
    masterPublicKey: { type: ['string', 'null'] },
    cooldownUntil: { type: ['string', 'null'], format: 'date-time' },
    recycledAt: { type: ['string', 'null'], format: 'date-time' },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    heldBy: {
      type: ['object', 'null'],
      description: 'The current holder: {kind: "order", orderId} or {kind: "deposit", depositBindingId}',
    },
  },
};

function presentAddress(a: PoolAddressView) {
  return {
    ...a,
    cooldownUntil: iso(a.cooldownUntil),
    recycledAt: iso(a.recycledAt),
    createdAt: iso(a.createdAt),
    updatedAt: iso(a.updatedAt),
  };
}

export function registerAddressPoolRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route<{ protocol: Protocol; mode: ImportMode; addresses: string }>(
    {
      method: 'post',
      path: '/address-pool/import',
      summary: 'Import addresses into the pool (CSV)',
      description:
        `addresses holds CSV text with the header address,protocol,derivation_index,master_public_key (at most ${MAX_IMPORT_LINES} lines). ` +
        'Every line is validated: EVM 0x + 40 hex (all-lowercase is normalised to the EIP-55 checksum form; a mixed-case address with a wrong checksum is an error), ' +
        'Tron base58check of 0x41 + 20 bytes (starts with T), Solana base58 of a 32-byte public key; the line protocol must equal the request protocol. ' +
        'self_managed: derivation_index and master_public_key empty. hd_wallet: both required; EVM and Tron addresses must derive from master_public_key at non-hardened 0/derivation_index ' +
        '(Solana cannot be derived from a public key: its lines are accepted as given, and the summary says so). ' +
        'Any invalid line: 400 VALIDATION_ERROR, details [{line, address, error}] with line numbers of the CSV text (the header is line 1), nothing imported. ' +
        'Anything resembling a private key or seed phrase (64-hex key, xprv/tprv, WIF, 12+ BIP39 words, Solana 64-byte secret) anywhere: 400 IMPORT_REJECTED without echoing it, nothing imported. ' +
        "Addresses already in this organization's pool or repeated in the input are skipped; addresses held by another organization are skipped and listed in errors.",
      tag: 'Address pool',
      minRole: 'admin',
      creates: true,
      bodyLimitBytes: deps.config.importBodyLimitBytes,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['protocol', 'mode', 'addresses'],
        properties: {
          protocol: { type: 'string', enum: PROTOCOLS },
          mode: { type: 'string', enum: ['hd_wallet', 'self_managed'] },
          addresses: { type: 'string', minLength: 1, description: 'CSV text' },
        },
      },
      response: importResultSchema,
    },
    async ({ caller, body, reply }) => {
      const result = await importPoolAddresses(deps.db, {
        organizationId: caller.organizationId,
        protocol: body.protocol,
        mode: body.mode,
        csv: body.addresses,
        now: deps.clock.now(),
      });
      // The spec's import answer carries `success` in the body itself, whatever the style.
      return reply.ok({ success: true, ...result }, `Imported ${result.imported} addresses, skipped ${result.skipped}`);
    },
  );

  api.route<{ protocol: 'evm' | 'tron'; masterPublicKey: string; start: number; count: number }>(
    {
      method: 'post',
      path: '/address-pool/derive',
      summary: 'Add watch-only addresses derived from an extended public key (beyond the spec)',
      description:
        'Derives the EVM or Tron addresses at non-hardened 0/start … 0/(start+count-1) below masterPublicKey (an xpub; never a private key) and adds them to the pool like an hd_wallet import. ' +
        `count is at most ${MAX_DERIVE_COUNT}. Addresses already in the pool are skipped; ones held by another organization are skipped and listed in errors. ` +
        'Solana is not offered: ed25519 keys cannot be derived from a public key.',
      tag: 'Address pool',
      minRole: 'admin',
      creates: true,
      body: {
        type: 'object',
        additionalProperties: false,
        required: ['protocol', 'masterPublicKey', 'count'],
        properties: {
          protocol: { type: 'string', enum: ['evm', 'tron'] },
          masterPublicKey: { type: 'string', minLength: 1, maxLength: 200, description: 'BIP32 extended public key (xpub…)' },
          start: { type: 'integer', minimum: 0, maximum: MAX_DERIVATION_INDEX, default: 0 },
          count: { type: 'integer', minimum: 1, maximum: MAX_DERIVE_COUNT },
        },
      },
      response: importResultSchema,
    },
    async ({ caller, body, reply }) => {
      const result = await derivePoolAddresses(deps.db, {
        organizationId: caller.organizationId,
        protocol: body.protocol,
        masterPublicKey: body.masterPublicKey,
        start: body.start,
        count: body.count,
        now: deps.clock.now(),
      });
      return reply.ok({ success: true, ...result }, `Derived ${result.imported + result.skipped} addresses, imported ${result.imported}`);
    },
  );

  api.route(
    {
      method: 'get',
      path: '/address-pool/status',
      summary: 'Pool statistics per protocol: total, available, allocated, bound, coolingDown',
      tag: 'Address pool',
      minRole: 'admin',
      response: { type: 'object', properties: Object.fromEntries(PROTOCOLS.map((p) => [p, countsSchema])) },
    },
    async ({ caller, reply }) => reply.ok(await poolStatus(deps.db, caller.organizationId)),
  );

  api.route<unknown, PoolAddressQuery>(
    {
      method: 'get',
      path: '/address-pool/addresses',
      summary: "List the organization's pool addresses",
      description: 'Filters: protocol, status (available, allocated, bound, cooldown). Never another organization\'s addresses.',
      tag: 'Address pool',
      minRole: 'admin',
      query: listQuerySchema({
        sortBy: [...POOL_ADDRESS_SORT],
        defaultSortBy: 'createdAt',
        filters: {
          protocol: { type: 'string', enum: PROTOCOLS },
          status: { type: 'string', enum: POOL_ADDRESS_STATUSES },
        },
      }),
      listOf: 'addresses',
      response: poolAddressSchema,
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listPoolAddresses(deps.db, caller.organizationId, query);
      return reply.list('addresses', items.map(presentAddress), { page: query.page, limit: query.limit, total });
    },
  );
}
