import type { NetworkName } from '../platform/config';

/**
 * What a chain is: the types of the chain registry (./registry.ts), apart from it so the static
 * definitions (./chains.data.ts), the families (./evm, ./tron, ./solana) and the detection core can
 * name a chain without importing the registry that builds chains from them.
 */

export type Protocol = 'evm' | 'tron' | 'solana';
export const PROTOCOLS: readonly Protocol[] = ['evm', 'tron', 'solana'];
/**
 * A token's symbol on a chain (USDT, USDC, DAI, or one an operator adds in the chains file: EURC,
 * PYUSD, USDT0): 2 to 12 uppercase letters or digits. Which symbols a chain offers is the registry's.
 */
export type Currency = string;
export const CURRENCY_SYMBOL = /^[A-Z0-9]{2,12}$/;
/** The symbols of the built-in test tokens and definitions (the local chain deploys these). */
export type BuiltInCurrency = 'USDT' | 'USDC' | 'DAI';
export const CURRENCIES: readonly BuiltInCurrency[] = ['USDT', 'USDC', 'DAI'];

export interface TokenInfo {
  currency: Currency;
  /** Contract (EVM, Tron) or mint (Solana). Null until known: the currency is then not offered. */
  address: string | null;
  decimals: number;
  /**
   * The fiat currency the token is a stablecoin of (ISO 4217, e.g. USD, EUR), as the chains file
   * states it; absent: USD for the built-in symbols (USDT, USDC, DAI), none otherwise. A USD-priced
   * order offers only USD stablecoins as routes (core/orders/routes.ts).
   */
  peg?: string;
}

/**
 * The pricing currency of an order priced in dollars whose payer picks the route (issue 41). Not a
 * token: its amounts are base units of USD_DECIMALS, enough for any route token's (at most 18), so a
 * payment in any of them is counted exactly. A chains file may not name a token USD.
 */
export const USD = 'USD';
export const USD_DECIMALS = 18;

/** Whether a token is a USD stablecoin (a USD order may offer it as a route). */
export function isUsdStablecoin(token: Pick<TokenInfo, 'currency' | 'peg'>): boolean {
  return (token.peg ?? ((CURRENCIES as readonly string[]).includes(token.currency) ? 'USD' : null)) === 'USD';
}

export type FinalityRule =
  | { kind: 'depth'; blocks: number }
  | { kind: 'finalized-tag' }
  /** Tron: final once solidified, `depth` blocks from the head (the confirmations a block then has). */
  | { kind: 'solidified'; depth: number }
  /**
   * Solana: final at the `finalized` commitment, about `depth` slots behind the `confirmed` head
   * (the confirmations a block then has); a transfer is confirmed only once its slot is finalized.
   */
  | { kind: 'finalized-commitment'; depth: number };

/** How a Solana chain is scanned (SOLANA_SCAN_MODE_<CHAIN>; docs/payment-detection.md). */
export type SolanaScanMode = 'blocks' | 'addresses';
export const SOLANA_SCAN_MODES: readonly SolanaScanMode[] = ['blocks', 'addresses'];

/**
 * A chain's facts. The static table (chains.data.ts) states the first group; the registry fills in
 * the rest for this deployment (environment overrides, run-time facts of the local chains).
 */
export interface ChainDefinition {
  chainId: string;
  protocol: Protocol;
  network: NetworkName;
  name: string;
  /** EVM numeric chain id, where there is one. */
  evmChainId?: number;
  rpcUrls: string[];
  blockTimeMs: number;
  orderConfirmations: number;
  depositConfirmations: number;
  finality: FinalityRule;
  tokens: Partial<Record<Currency, TokenInfo>>;
  /** Solana: the scan mode unless SOLANA_SCAN_MODE_<CHAIN> says otherwise (blocks when absent). */
  solanaScanMode?: SolanaScanMode;
  /** Solana `blocks` mode: getBlock calls per JSON-RPC batch when SOLANA_BLOCKS_PER_REQUEST_<CHAIN> says (absent: the adapter's 10; 1: no batches). */
  solanaBlocksPerRequest?: number;
  /** Requests per second per provider unless RPC_REQUESTS_PER_SECOND_<CHAIN> says otherwise (absent: the family's default). */
  rpcRequestsPerSecond?: number;
  /**
   * The block-timestamp witness of attribution (core/detection/clock-witness.ts): how far, in
   * seconds, a block's timestamp may sit from the chain's clock as the service measures it from its
   * own looks. Set only where the chain's consensus ties timestamps to wall-clock time (Ethereum
   * proof of stake: one 12 s slot; Tron: one 3 s slot; Solana: the stake-weighted median of the
   * validators' vote timestamps, bounded by proof of history, whole seconds: 3 s); absent: off.
   * CLOCK_WITNESS_SECONDS_<CHAIN> overrides it (0: off).
   */
  clockWitnessToleranceSeconds?: number;
}

/**
 * A chain of this deployment: its definition (overrides applied) and what the registry resolves
 * here, which the static table leaves out.
 */
export interface Chain extends ChainDefinition {
  /** Offered to merchants: its protocol family has a scanner (the families the service was assembled with). */
  enabled: boolean;
  /** Push endpoints for new heads (RPC_WS_URLS_<CHAIN>; the local chain's ws:// form); empty: polling only. */
  wsUrls: string[];
  /**
   * S: the effective minimum cooldown of an address on this chain (core/pool/allocation.ts), the
   * gap between two holders that keeps a hand-over decidable. Block time × 2 + 60 s unless
   * ATTRIBUTION_SKEW_SECONDS_<CHAIN> says otherwise.
   */
  attributionSkewSeconds: number;
  /**
   * L of attribution (core/detection/attribution.ts): how long before an address was handed out
   * the service's last look at the head may be and still count as proof that a block above it
   * did not exist yet (also a margin for a provider behind the chain). HEAD_LAG_SECONDS(_<CHAIN>),
   * default 2; below S.
   */
  headLagSeconds: number;
  /** Explorer page of a transaction, `{txHash}` replaced (explorers.data.ts, EXPLORER_TX_URL_<CHAIN>); null: none. */
  explorerTxUrl: string | null;
  /**
   * The provider API key (TRON_PRO_API_KEY_<CHAIN> for Tron). A secret: set as a non-enumerable
   * property, so serialising or logging a chain never writes it.
   */
  readonly providerApiKey?: string;
}

/** An address checked against its family's format: the normalised form, or a reason a person can act on. */
export type AddressCheck = { ok: true; address: string } | { ok: false; error: string };
