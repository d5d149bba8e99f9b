import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { Type } from '@sinclair/typebox';
import { listQuerySchema } from '../validation';
import { PROTOCOLS } from '../../core/chains/registry';
import { derivePoolAddresses, importPoolAddresses, MAX_DERIVE_COUNT, MAX_IMPORT_LINES } from '../../core/pool/import';
import { MAX_DERIVATION_INDEX } from '../../core/pool/hd';
import { listPoolAddresses, poolStatus, POOL_ADDRESS_SORT, POOL_ADDRESS_STATUSES } from '../../core/pool/queries';
import { StringEnum } from '../../core/platform/wire-schema';
import { poolAddressSchema, poolStatusSchema, presentPoolAddress } from '../../core/views/pool-address';
import { importAnswer, importAnswerSchemas } from '../presenters/address-pool';

const TAG = 'Address pool';

export function registerAddressPoolRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
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
        "Addresses already in this organization's pool or repeated in the input are skipped; addresses held by another organization are skipped and listed in errors. " +
        'A 400 answer of this route carries success: false in both styles (the spec\'s import section).',
      tag: TAG,
      minRole: 'admin',
      creates: true,
      bodyLimitBytes: deps.config.importBodyLimitBytes,
      failuresCarrySuccess: true,
      body: Type.Object(
        {
          protocol: StringEnum(PROTOCOLS),
          mode: StringEnum(['hd_wallet', 'self_managed']),
          addresses: Type.String({ minLength: 1, description: 'CSV text' }),
        },
        { additionalProperties: false },
      ),
      response: api.format.documented(importAnswerSchemas),
    },
    async ({ caller, body, reply }) => {
      const result = await importPoolAddresses(deps.db, {
        organizationId: caller.organizationId,
        protocol: body.protocol,
        mode: body.mode,
        csv: body.addresses,
        now: deps.clock.now(),
      });
      return reply.raw(200, importAnswer(api.format, result, `Imported ${result.imported} addresses, skipped ${result.skipped}`));
    },
  );

  api.route(
    {
      method: 'post',
      path: '/address-pool/derive',
      summary: 'Add watch-only addresses derived from an extended public key (beyond the spec)',
      description:
        'Derives the EVM or Tron addresses at non-hardened 0/start … 0/(start+count-1) below masterPublicKey (an xpub; never a private key) and adds them to the pool like an hd_wallet import. ' +
        `count is at most ${MAX_DERIVE_COUNT}. Addresses already in the pool are skipped; ones held by another organization are skipped and listed in errors. ` +
        'Solana is not offered: ed25519 keys cannot be derived from a public key.',
      tag: TAG,
      minRole: 'admin',
      creates: true,
      body: Type.Object(
        {
          protocol: StringEnum(['evm', 'tron']),
          masterPublicKey: Type.String({ minLength: 1, maxLength: 200, description: 'BIP32 extended public key (xpub…)' }),
          // Filled by validation when absent.
          start: Type.Integer({ minimum: 0, maximum: MAX_DERIVATION_INDEX, default: 0 }),
          count: Type.Integer({ minimum: 1, maximum: MAX_DERIVE_COUNT }),
        },
        { additionalProperties: false },
      ),
      response: api.format.documented(importAnswerSchemas),
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
      return reply.raw(200, importAnswer(api.format, result, `Derived ${result.imported + result.skipped} addresses, imported ${result.imported}`));
    },
  );

  api.route(
    {
      method: 'get',
      path: '/address-pool/status',
      summary: 'Pool statistics per protocol: total, available, allocated, bound, coolingDown',
      tag: TAG,
      minRole: 'admin',
      response: poolStatusSchema,
    },
    async ({ caller, reply }) => reply.ok(await poolStatus(deps.db, caller.organizationId)),
  );

  api.route(
    {
      method: 'get',
      path: '/address-pool/addresses',
      summary: "List the organization's pool addresses",
      description: 'Filters: protocol, status (available, allocated, bound, cooldown). Never another organization\'s addresses.',
      tag: TAG,
      minRole: 'admin',
      query: listQuerySchema({
        sortBy: POOL_ADDRESS_SORT,
        defaultSortBy: 'createdAt',
        filters: {
          protocol: Type.Optional(StringEnum(PROTOCOLS)),
          status: Type.Optional(StringEnum(POOL_ADDRESS_STATUSES)),
        },
      }),
      listOf: 'addresses',
      response: poolAddressSchema,
    },
    async ({ caller, query, reply }) => {
      const { items, total } = await listPoolAddresses(deps.db, caller.organizationId, query);
      return reply.list('addresses', items.map(presentPoolAddress), { page: query.page, limit: query.limit, total });
    },
  );
}
