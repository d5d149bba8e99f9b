import { Type, type Static } from '@sinclair/typebox';
import type { Chain, ChainRegistry, FinalityRule } from '../chains/registry';
import { CURRENCY_SYMBOL, PROTOCOLS } from '../chains/chain';
import { StringEnum } from '../platform/wire-schema';

/**
 * A token symbol on the wire: USDT, USDC, DAI or one the operator's chains file adds (GET /chains
 * lists what each chain offers), so not a fixed list.
 */
export const currencySymbolSchema = (options: { description?: string } = {}) =>
  Type.String({ pattern: CURRENCY_SYMBOL.source, example: 'USDT', ...options });

/** A chain of this deployment as clients see it (GET /api/v1/chains): built from the registry, never by hand. */
export const chainSchema = Type.Object({
  chainId: Type.String({ example: 'ethereum-sepolia' }),
  name: Type.String({ example: 'Ethereum Sepolia' }),
  family: StringEnum([...PROTOCOLS], { description: 'Protocol family: the address format and the pool an order on this chain takes its address from' }),
  network: StringEnum(['local', 'testnet', 'mainnet']),
  evmChainId: Type.Optional(Type.Integer({ description: 'EVM chains: the numeric chain id wallets use' })),
  blockTimeSeconds: Type.Number({ description: 'Typical time between blocks' }),
  currencies: Type.Array(
    Type.Object({
      currency: currencySymbolSchema(),
      token: Type.String({ description: 'Token contract (EVM, Tron) or mint (Solana) payments must use' }),
      decimals: Type.Integer({ description: 'Token decimals: amounts have at most this many fractional digits' }),
    }),
    { description: 'Currencies offered on this chain (orders in any other answer 400 INVALID_CURRENCY)' },
  ),
  requiredConfirmations: Type.Object(
    {
      orders: Type.Integer({ description: "Confirmations a payment needs before it completes an order (the chain's value raised by the organization's confirmations.orders)" }),
      deposits: Type.Integer({ description: "Confirmations a deposit needs before it is confirmed (raised by confirmations.deposits)" }),
    },
  ),
  finality: Type.Object(
    {
      rule: StringEnum(['depth', 'finalized-tag', 'solidified', 'finalized-commitment']),
      blocks: Type.Optional(Type.Integer({ description: 'depth: blocks on top after which a block is final; solidified / finalized-commitment: how far the final block trails the head' })),
      description: Type.String(),
    },
    { description: 'When a block can no longer be undone (a payment in it is never reversed by a reorganisation)' },
  ),
});
export type ChainView = Static<typeof chainSchema>;

function presentFinality(rule: FinalityRule): ChainView['finality'] {
  switch (rule.kind) {
    case 'depth':
      return { rule: 'depth', blocks: rule.blocks, description: `final ${rule.blocks} blocks below the head` };
    case 'finalized-tag':
      return { rule: 'finalized-tag', description: "final once the chain's finalized block has reached it" };
    case 'solidified':
      return { rule: 'solidified', blocks: rule.depth, description: `final once solidified (about ${rule.depth} blocks below the head)` };
    case 'finalized-commitment':
      return { rule: 'finalized-commitment', blocks: rule.depth, description: `final at the finalized commitment (about ${rule.depth} slots below the confirmed head)` };
  }
}

/** One chain with the caller organization's effective confirmations. */
export function presentChain(registry: ChainRegistry, chain: Chain, confirmations: { orders: number; deposits: number }): ChainView {
  return {
    chainId: chain.chainId,
    name: chain.name,
    family: chain.protocol,
    network: chain.network,
    ...(chain.evmChainId !== undefined ? { evmChainId: chain.evmChainId } : {}),
    blockTimeSeconds: chain.blockTimeMs / 1000,
    currencies: registry.offeredTokens(chain).map((t) => ({ currency: t.currency, token: t.address!, decimals: t.decimals })),
    requiredConfirmations: confirmations,
    finality: presentFinality(chain.finality),
  };
}
