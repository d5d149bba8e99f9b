import { getBase58Decoder, getBase58Encoder } from '@solana/kit';

/**
 * Wire helpers of solana-local: the JSON-RPC error forms of the Agave validator
 * (rpc-client-api/src/custom_error.rs and jsonrpc-core), base58/base64, and JSON with u64 values
 * written as plain numbers (e.g. rentEpoch 18446744073709551615), as the validator writes them.
 */

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** The validator's custom server errors (codes and messages as Agave writes them). */
export const rpcErrors = {
  invalidParams: (message: string) => new RpcError(-32602, message),
  methodNotFound: () => new RpcError(-32601, 'Method not found'),
  invalidRequest: () => new RpcError(-32600, 'Invalid request'),
  parseError: () => new RpcError(-32700, 'Parse error'),
  blockCleanedUp: (slot: number, firstAvailable: number) =>
    new RpcError(-32001, `Block ${slot} cleaned up, does not exist on node. First available block: ${firstAvailable}`),
  preflightFailure: (message: string, data: unknown) => new RpcError(-32002, message, data),
  signatureVerificationFailure: () => new RpcError(-32003, 'Transaction signature verification failure'),
  blockNotAvailable: (slot: number) => new RpcError(-32004, `Block not available for slot ${slot}`),
  slotSkipped: (slot: number) => new RpcError(-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`),
  unsupportedTransactionVersion: (version: number) =>
    new RpcError(
      -32015,
      `Transaction version (${version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${version}`,
    ),
  minContextSlotNotReached: (contextSlot: number) => new RpcError(-32016, 'Minimum context slot has not been reached', { contextSlot }),
  belowConfirmed: () => new RpcError(-32602, 'Method does not support commitment below `confirmed`'),
};

const base58Encoder = getBase58Encoder();
const base58Decoder = getBase58Decoder();

export const toBase58 = (bytes: Uint8Array): string => base58Decoder.decode(bytes);
export const fromBase58 = (text: string): Uint8Array => new Uint8Array(base58Encoder.encode(text));
export const toBase64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
export const fromBase64 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'base64'));

/** A value written as a JSON number without going through a double (u64 amounts, rentEpoch). */
export class RawNumber {
  constructor(readonly digits: string) {}
}

const RAW_MARK = '\u0000raw:';

/** JSON.stringify, with bigint and RawNumber written as plain JSON numbers. */
export function stringifyJson(value: unknown): string {
  const text = JSON.stringify(value, (_key, v) => {
    if (typeof v === 'bigint') return `${RAW_MARK}${v.toString()}`;
    if (v instanceof RawNumber) return `${RAW_MARK}${v.digits}`;
    return v;
  });
  return text.replace(/"\\u0000raw:(-?\d+)"/g, '$1');
}
