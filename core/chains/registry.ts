import { AppError } from '../platform/errors';
import type { Config, NetworkName } from '../platform/config';
import { USD, USD_DECIMALS, type Chain, type ChainDefinition, type Currency, type Protocol, type SolanaScanMode, type TokenInfo } from './chain';
import { CHAIN_DEFINITIONS } from './chains.data';
import { EXPLORER_TX_URLS } from './explorers.data';
import { readChainsFile, type ChainsFile } from './chains-file';

export { CURRENCIES, PROTOCOLS, USD, USD_DECIMALS, isUsdStablecoin, type Chain, type ChainDefinition, type Currency, type FinalityRule, type Protocol, type TokenInfo } from './chain';

/**
 * The chain registry: the one owner of chain facts (design.md §3). Built from the static
 * definitions of the configured network, environment overrides, and token addresses learnt at
 * run time (the local chain's deployed tokens). Which protocol families have a scanner is told by
 * whoever assembles the service (core/service/service.ts passes the families of
 * core/chains/adapters.ts): a chain of another family is listed but not offered.
 */

/** L of attribution (core/detection/attribution.ts) unless HEAD_LAG_SECONDS(_<CHAIN>) says otherwise. */
export const DEFAULT_HEAD_LAG_SECONDS = 2;

export class ChainRegistry {
  private readonly chains = new Map<string, Chain>();

  private readonly scannedFamilies: ReadonlySet<Protocol>;

  /** Every definition this registry was given (all networks, the chains file's included): tokenDecimals' fallback. */
  private readonly definitions: readonly ChainDefinition[];

  /**
   * `chainsFile`: the operator's additions and removals (./chains-file.ts), applied to
   * `definitions` before anything else, so overrides by environment apply to its chains too.
   */
  constructor(
    readonly network: NetworkName,
    definitions: readonly ChainDefinition[],
    scannedFamilies: Iterable<Protocol>,
    private readonly overrides: Record<string, string> = {},
    readonly chainsFile: ChainsFile | null = null,
  ) {
    this.scannedFamilies = new Set(scannedFamilies);
    this.definitions = chainsFile ? withChainsFile(definitions, chainsFile) : definitions;
    const disabled = new Set(chainsFile?.disabledChains ?? []);
    for (const def of this.definitions) {
      if (def.network !== network || disabled.has(def.chainId)) continue;
      const env = envKey(def.chainId);
      const rpcOverride = overrides[`RPC_URLS_${env}`];
      const tokens: Partial<Record<Currency, TokenInfo>> = {};
      for (const [currency, token] of Object.entries(def.tokens) as [Currency, TokenInfo][]) {
        tokens[currency] = { ...token, address: overrides[`TOKEN_${env}_${currency}`] ?? token.address };
      }
      // Overrides may raise confirmations, never lower them below the chain's value.
      const orderConf = this.raised(def.chainId, def.orderConfirmations, 'order');
      const depositConf = this.raised(def.chainId, def.depositConfirmations, 'deposit');
      const skewOverride = overrides[`ATTRIBUTION_SKEW_SECONDS_${env}`];
      const skew = skewOverride !== undefined && /^\d+$/.test(skewOverride.trim()) ? Number(skewOverride) : Math.ceil((def.blockTimeMs * 2) / 1000) + 60;
      const lagOverride = overrides[`HEAD_LAG_SECONDS_${env}`] ?? overrides.HEAD_LAG_SECONDS;
      const requestedLag = lagOverride !== undefined && /^\d+$/.test(lagOverride.trim()) ? Number(lagOverride) : DEFAULT_HEAD_LAG_SECONDS;
      // The margin stays inside the effective cooldown S, or a hand-over could be read both ways.
      const headLag = Math.min(requestedLag, Math.max(0, skew - 1));
      const chain: Chain = {
        ...def,
        attributionSkewSeconds: skew,
        headLagSeconds: headLag,
        rpcUrls: rpcOverride ? rpcOverride.split(',').map((u) => u.trim()).filter(Boolean) : [...def.rpcUrls],
        wsUrls: (overrides[`RPC_WS_URLS_${env}`] ?? '').split(',').map((u) => u.trim()).filter((u) => u && u !== 'off'),
        orderConfirmations: orderConf,
        depositConfirmations: depositConf,
        tokens,
        enabled: this.scannedFamilies.has(def.protocol),
        explorerTxUrl: overrides[`EXPLORER_TX_URL_${env}`] ?? EXPLORER_TX_URLS[def.chainId] ?? null,
      };
      if (def.protocol === 'solana') chain.solanaScanMode = (overrides[`SOLANA_SCAN_MODE_${env}`]?.trim() as SolanaScanMode | undefined) ?? def.solanaScanMode ?? 'blocks';
      const blocksPerRequest = overrides[`SOLANA_BLOCKS_PER_REQUEST_${env}`];
      if (def.protocol === 'solana' && blocksPerRequest !== undefined && /^\d+$/.test(blocksPerRequest.trim())) chain.solanaBlocksPerRequest = Number(blocksPerRequest);
      const rps = overrides[`RPC_REQUESTS_PER_SECOND_${env}`];
      if (rps !== undefined && /^\d+$/.test(rps.trim())) chain.rpcRequestsPerSecond = Number(rps);
      const witness = overrides[`CLOCK_WITNESS_SECONDS_${env}`];
      if (witness !== undefined && /^\d+$/.test(witness.trim())) {
        if (Number(witness) > 0) chain.clockWitnessToleranceSeconds = Number(witness);
        else delete chain.clockWitnessToleranceSeconds;
      }
      const apiKey = overrides[`TRON_PRO_API_KEY_${env}`];
      if (apiKey) Object.defineProperty(chain, 'providerApiKey', { value: apiKey, enumerable: false });
      this.chains.set(def.chainId, chain);
    }
  }

  /** The chains of a network; `scannedFamilies` are offered (the others listed only). */
  static forNetwork(network: NetworkName, scannedFamilies: Iterable<Protocol>, overrides: Record<string, string> = {}, chainsFile: ChainsFile | null = null): ChainRegistry {
    return new ChainRegistry(network, CHAIN_DEFINITIONS, scannedFamilies, overrides, chainsFile);
  }

  /**
   * The registry of a deployment: its network, the environment's overrides and its chains file
   * (CHAINS_FILE), read and checked here (a ConfigError naming the file's lines if it is wrong).
   */
  static forConfig(config: Pick<Config, 'network' | 'chainOverrides' | 'chainsFile'>, scannedFamilies: Iterable<Protocol>): ChainRegistry {
    const file = config.chainsFile ? readChainsFile(config.chainsFile, CHAIN_DEFINITIONS) : null;
    return ChainRegistry.forNetwork(config.network, scannedFamilies, config.chainOverrides, file);
  }

  list(): Chain[] {
    return [...this.chains.values()];
  }

  get(chainId: string): Chain | undefined {
    return this.chains.get(chainId);
  }

  /**
   * The effective minimum cooldown of an address of a protocol family, in seconds: the largest S
   * (attributionSkewSeconds) of the family's chains. A released address is never handed out again
   * sooner, whatever the organization configured (core/pool/allocation.ts).
   */
  minimumCooldownSeconds(protocol: Protocol): number {
    return Math.max(0, ...this.list().filter((c) => c.protocol === protocol).map((c) => c.attributionSkewSeconds));
  }

  /** Enabled chains of one protocol family (a deposit reference is monitored on all of them). */
  enabledChainsOf(protocol: Protocol): Chain[] {
    return this.list().filter((c) => c.enabled && c.protocol === protocol);
  }

  /** Currencies a chain offers: those whose token address is known. */
  offeredTokens(chain: Chain): TokenInfo[] {
    return Object.values(chain.tokens).filter((t): t is TokenInfo => !!t && !!t.address);
  }

  /**
   * Every token symbol an enabled chain offers (built-in or from the chains file), once each, sorted:
   * what a list of orders can be filtered by.
   */
  offeredCurrencies(): Currency[] {
    const symbols = new Set(this.list().filter((c) => c.enabled).flatMap((c) => this.offeredTokens(c).map((t) => t.currency)));
    return [...symbols].sort();
  }

  /** The chain for a merchant request: unknown or not enabled is INVALID_CHAIN. */
  requireOfferedChain(chainId: string): Chain {
    const chain = this.chains.get(chainId);
    if (!chain) {
      const known = this.list().filter((c) => c.enabled).map((c) => c.chainId);
      throw new AppError('INVALID_CHAIN', `Unknown chainId "${chainId}". Supported: ${known.join(', ') || 'none'}`);
    }
    if (!chain.enabled) {
      throw new AppError('INVALID_CHAIN', `Chain "${chainId}" is not enabled on this deployment yet`);
    }
    return chain;
  }

  /** Token of a currency on a chain: not configured is INVALID_CURRENCY. */
  requireToken(chain: Chain, currency: string): TokenInfo {
    const token = chain.tokens[currency as Currency];
    if (!token || !token.address) {
      const offered = this.offeredTokens(chain).map((t) => t.currency);
      throw new AppError(
        'INVALID_CURRENCY',
        `Currency "${currency}" is not available on ${chain.chainId}. Available: ${offered.join(', ') || 'none'}`,
      );
    }
    return token;
  }

  /**
   * The one authority for a token's decimals: this deployment's registry, else the static
   * definition of the chain on another network (rows written under another NETWORK). Unknown is a
   * programming error.
   */
  tokenDecimals(chainId: string | null, currency: string): number {
    // A USD order's amounts (whatever its current route): USD base units.
    if (currency === USD) return USD_DECIMALS;
    if (chainId === null) throw new Error(`No decimals known for ${currency} without a chain`);
    const decimals =
      this.chains.get(chainId)?.tokens[currency]?.decimals ??
      this.definitions.find((d) => d.chainId === chainId)?.tokens[currency]?.decimals ??
      CHAIN_DEFINITIONS.find((d) => d.chainId === chainId)?.tokens[currency]?.decimals;
    if (decimals === undefined) throw new Error(`No decimals known for ${currency} on ${chainId}: the token is not in the chain registry`);
    return decimals;
  }

  /**
   * Every (chain, currency) whose decimals tokenDecimals knows, with those decimals (asked of
   * tokenDecimals, so a list built from this never disagrees with it).
   */
  knownTokens(): { chainId: string; currency: Currency; decimals: number }[] {
    const keys = new Map<string, { chainId: string; currency: Currency }>();
    for (const def of [...CHAIN_DEFINITIONS, ...this.definitions]) {
      for (const t of Object.values(def.tokens)) if (t) keys.set(`${def.chainId}|${t.currency}`, { chainId: def.chainId, currency: t.currency });
    }
    for (const chain of this.chains.values()) {
      for (const t of Object.values(chain.tokens)) if (t) keys.set(`${chain.chainId}|${t.currency}`, { chainId: chain.chainId, currency: t.currency });
    }
    return [...keys.values()].map((k) => ({ ...k, decimals: this.tokenDecimals(k.chainId, k.currency) }));
  }

  /**
   * Records a token address learnt at run time (the local chain's deployed tokens). Without
   * `decimals` the chain's definition must know them: a token of unknown decimals is refused here,
   * never guessed (a guess of 18 for a 6-decimal token misstates every amount by 10^12).
   */
  setTokenAddress(chainId: string, currency: Currency, address: string, decimals?: number): void {
    const chain = this.chains.get(chainId);
    if (!chain) throw new Error(`Unknown chain ${chainId}`);
    chain.tokens[currency] = { currency, address, decimals: decimals ?? this.tokenDecimals(chainId, currency) };
  }

  /** A chain's confirmations for a kind, raised by CONFIRMATIONS_<CHAIN> / DEPOSIT_CONFIRMATIONS_<CHAIN>, never lowered. */
  private raised(chainId: string, value: number, kind: 'order' | 'deposit'): number {
    const name = `${kind === 'order' ? '' : 'DEPOSIT_'}CONFIRMATIONS_${envKey(chainId)}`;
    return Math.max(value, Number(this.overrides[name]) || 0);
  }

  /**
   * Sets the solidification depth of a solidifying chain learnt at run time (tron-local's configured
   * lag + 1; solana-local's blocks between its confirmed and finalized heads + 1): the chain's required confirmations become that depth, still raised by the deployment's
   * CONFIRMATIONS_<CHAIN> / DEPOSIT_CONFIRMATIONS_<CHAIN>.
   */
  setSolidificationDepth(chainId: string, depth: number): void {
    const chain = this.chains.get(chainId);
    if (!chain || (chain.finality.kind !== 'solidified' && chain.finality.kind !== 'finalized-commitment')) throw new Error(`${chainId} is not a solidifying chain`);
    chain.finality = { kind: chain.finality.kind, depth };
    chain.orderConfirmations = this.raised(chainId, depth, 'order');
    chain.depositConfirmations = this.raised(chainId, depth, 'deposit');
  }

  /** Replaces a chain's RPC URLs (the local chain's port is known only once it runs). */
  setRpcUrls(chainId: string, urls: string[]): void {
    const chain = this.chains.get(chainId);
    if (!chain) throw new Error(`Unknown chain ${chainId}`);
    chain.rpcUrls = [...urls];
  }

  /** Replaces a chain's new-head push endpoints (the local chain's ws:// form, tests). */
  setWsUrls(chainId: string, urls: string[]): void {
    const chain = this.chains.get(chainId);
    if (!chain) throw new Error(`Unknown chain ${chainId}`);
    chain.wsUrls = [...urls];
  }
}

/**
 * The definitions with the chains file applied: its chains added, its tokens added to their chains
 * and its disabled tokens taken out (disabled chains stay: the registry skips them, tokenDecimals
 * still knows their tokens for rows written before).
 */
function withChainsFile(definitions: readonly ChainDefinition[], file: ChainsFile): ChainDefinition[] {
  return [...definitions, ...file.chains].map((def) => {
    const added = file.tokens.filter((t) => t.chainId === def.chainId);
    const removed = new Set(file.disabledTokens.filter((t) => t.chainId === def.chainId).map((t) => t.currency));
    if (added.length === 0 && removed.size === 0) return def;
    const tokens: ChainDefinition['tokens'] = { ...def.tokens };
    for (const t of added) tokens[t.token.currency] = t.token;
    for (const currency of removed) delete tokens[currency];
    return { ...def, tokens };
  });
}

/** A transaction's page on the chain's explorer, or null when the chain has none configured. */
export function explorerTxLink(chain: Pick<Chain, 'explorerTxUrl'>, txHash: string): string | null {
  return chain.explorerTxUrl ? chain.explorerTxUrl.replaceAll('{txHash}', encodeURIComponent(txHash)) : null;
}

/** `ethereum-sepolia` → `ETHEREUM_SEPOLIA`, the form used in environment variable names. */
export function envKey(chainId: string): string {
  return chainId.toUpperCase().replace(/[^A-Z0-9]+/g, '_');
}
