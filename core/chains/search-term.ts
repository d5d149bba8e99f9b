import { validationError } from '../platform/errors';
import { isIdOf } from '../platform/ids';
import { checkAddress } from './addresses';
import { base58Bytes } from './base58';
import { PROTOCOLS, type Protocol } from './chain';

/**
 * What a search box's text is, for the order and transfer lists (GET /orders?search=,
 * GET /transfers?search=, the dashboard's lists): an order id, a transaction hash of any family,
 * an address of any family (the families' own parsers, core/chains/addresses.ts), or else part of a
 * reference. A text shaped like an address whose check fails (an EVM checksum, a Tron
 * base58check) is a 400 with the family's reason, not a reference search that finds nothing.
 */
export type SearchTerm =
  | { kind: 'orderId'; orderId: string }
  /** The stored forms the hash may have: hex lowercase with and without 0x (EVM, Tron), base58 as given (Solana). */
  | { kind: 'txHash'; forms: string[] }
  /** The address in the normalised form of each family that accepts it. */
  | { kind: 'address'; forms: { protocol: Protocol; address: string }[] }
  | { kind: 'reference'; text: string };

export const SEARCH_MAX_LENGTH = 255;

const HEX_HASH = /^(0x)?([0-9a-fA-F]{64})$/;
/** Address shapes whose failed check is an error worth telling (not a reference by chance). */
const ADDRESS_SHAPES: Partial<Record<Protocol, RegExp>> = {
  evm: /^0x[0-9a-fA-F]{40}$/,
  tron: /^T[1-9A-HJ-NP-Za-km-z]{33}$/,
};

export function classifySearch(text: string): SearchTerm {
  const search = text.trim();
  const refuse = (message: string) => validationError(`search ${message}`, [{ field: 'search', message }]);
  if (search === '') throw refuse('must not be empty');
  if (search.length > SEARCH_MAX_LENGTH) throw refuse(`must be at most ${SEARCH_MAX_LENGTH} characters`);
  if (isIdOf('ord', search)) return { kind: 'orderId', orderId: search };
  const hex = HEX_HASH.exec(search);
  if (hex) {
    const lower = hex[2].toLowerCase();
    return { kind: 'txHash', forms: [`0x${lower}`, lower] };
  }
  const forms = PROTOCOLS.flatMap((protocol) => {
    const checked = checkAddress(protocol, search);
    return checked.ok ? [{ protocol, address: checked.address }] : [];
  });
  if (forms.length > 0) return { kind: 'address', forms };
  for (const [protocol, shape] of Object.entries(ADDRESS_SHAPES)) {
    const checked = checkAddress(protocol as Protocol, search);
    if (shape.test(search) && !checked.ok) throw refuse(`is not a valid ${protocol} address: ${checked.error}`);
  }
  // A Solana transaction signature: 64 bytes in base58.
  if (search.length >= 64 && base58Bytes(search)?.length === 64) return { kind: 'txHash', forms: [search] };
  return { kind: 'reference', text: search };
}
