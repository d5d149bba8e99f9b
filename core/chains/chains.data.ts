import type { ChainDefinition, Currency, TokenInfo } from './chain';

/**
 * Static chain facts per network. RPC URLs and token addresses can be overridden by environment
 * (RPC_URLS_<CHAIN>, TOKEN_<CHAIN>_<CURRENCY>); the local chain's tokens are set at run time.
 * Decimals here are what we expect; scanners read decimals() on start and refuse a mismatch.
 */
const token = (currency: Currency, address: string | null, decimals: number): TokenInfo => ({ currency, address, decimals });

export const CHAIN_DEFINITIONS: readonly ChainDefinition[] = [
  // --- local: anvil started by `npm start` / the test harness; tokens deployed on first start.
  {
    chainId: 'ethereum-local',
    protocol: 'evm',
    network: 'local',
    name: 'Local EVM (anvil)',
    evmChainId: 31337,
    rpcUrls: ['http://127.0.0.1:8545'],
    blockTimeMs: 1000,
    orderConfirmations: 3,
    depositConfirmations: 3,
    finality: { kind: 'depth', blocks: 10 },
    tokens: { USDT: token('USDT', null, 6), USDC: token('USDC', null, 6), DAI: token('DAI', null, 18) },
  },

  // --- local: tron-local (scripts/local-chain/tron/) started by `npm start`; its test USDT is set at run time.
  // Confirmed at solidification: the local node solidifies 2 blocks behind its head by default, so a
  // block is solidified at 3 confirmations; the running node's TRON_LOCAL_SOLIDIFICATION_LAG + 1
  // replaces that depth (tron-local-state.ts).
  {
    chainId: 'tron-local',
    protocol: 'tron',
    network: 'local',
    name: 'Local Tron (tron-local)',
    rpcUrls: ['http://127.0.0.1:8090'],
    blockTimeMs: 3_000,
    orderConfirmations: 3,
    depositConfirmations: 3,
    finality: { kind: 'solidified', depth: 3 },
    tokens: { USDT: token('USDT', null, 6) },
  },

  // --- local: solana-local (scripts/local-chain/solana/) started by `npm start`; its test mints are
  // set at run time, and its finalization depth from the running node (solana-local-state.ts).
  {
    chainId: 'solana-local',
    protocol: 'solana',
    network: 'local',
    name: 'Local Solana (solana-local)',
    rpcUrls: ['http://127.0.0.1:8899'],
    blockTimeMs: 400,
    orderConfirmations: 32,
    depositConfirmations: 32,
    finality: { kind: 'finalized-commitment', depth: 32 },
    solanaScanMode: 'blocks',
    tokens: { USDC: token('USDC', null, 6), USDT: token('USDT', null, 6) },
  },

  // --- testnet
  {
    chainId: 'ethereum-sepolia',
    protocol: 'evm',
    network: 'testnet',
    name: 'Ethereum Sepolia',
    evmChainId: 11155111,
    rpcUrls: ['https://ethereum-sepolia-rpc.publicnode.com', 'https://rpc.sepolia.org'],
    blockTimeMs: 12_000,
    orderConfirmations: 3,
    depositConfirmations: 6,
    finality: { kind: 'finalized-tag' },
    clockWitnessToleranceSeconds: 12,
    // Circle's official test USDC. Sepolia has no official USDT or DAI: supply TOKEN_ETHEREUM_SEPOLIA_USDT/DAI to offer them.
    tokens: { USDC: token('USDC', '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238', 6), USDT: token('USDT', null, 6), DAI: token('DAI', null, 18) },
  },
  {
    chainId: 'polygon-amoy',
    protocol: 'evm',
    network: 'testnet',
    name: 'Polygon Amoy',
    evmChainId: 80002,
    rpcUrls: ['https://rpc-amoy.polygon.technology', 'https://polygon-amoy-bor-rpc.publicnode.com'],
    blockTimeMs: 2_000,
    orderConfirmations: 3,
    depositConfirmations: 10,
    finality: { kind: 'finalized-tag' },
    tokens: { USDC: token('USDC', '0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582', 6), USDT: token('USDT', null, 6), DAI: token('DAI', null, 18) },
  },
  {
    chainId: 'tron-nile',
    protocol: 'tron',
    network: 'testnet',
    name: 'Tron Nile',
    rpcUrls: ['https://nile.trongrid.io'],
    blockTimeMs: 3_000,
    // A Tron block is final once solidified, about 19 blocks (2/3 of the 27 super representatives) behind the head.
    orderConfirmations: 19,
    depositConfirmations: 19,
    finality: { kind: 'solidified', depth: 19 },
    clockWitnessToleranceSeconds: 3,
    // USDC on Tron is retired by its issuer: listed without an address (offered only with TOKEN_TRON_NILE_USDC).
    tokens: { USDT: token('USDT', 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', 6), USDC: token('USDC', null, 6) },
  },
  {
    chainId: 'solana-devnet',
    protocol: 'solana',
    network: 'testnet',
    name: 'Solana Devnet',
    rpcUrls: ['https://api.devnet.solana.com'],
    blockTimeMs: 400,
    // Confirmed once finalized: about 32 slots behind the confirmed head (finality below).
    orderConfirmations: 32,
    depositConfirmations: 32,
    finality: { kind: 'finalized-commitment', depth: 32 },
    clockWitnessToleranceSeconds: 3,
    // The public endpoint's per-IP limits (about 100 requests per 10 s) cannot carry a whole-chain scan.
    solanaScanMode: 'addresses',
    rpcRequestsPerSecond: 8,
    tokens: { USDC: token('USDC', '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU', 6) },
  },

  // --- testnet: the public testnets of the chains below (docs/chains.md cites each figure's source).
  // Confirmation counts and finality as on each chain's mainnet entry. Circle's test USDC where
  // Circle deploys one (Circle, "USDC Contract Addresses",
  // https://developers.circle.com/stablecoins/usdc-contract-addresses); Tether has no testnet
  // deployment on any of them: USDT is listed without an address (TOKEN_<CHAIN>_USDT offers one).
  {
    chainId: 'bsc-testnet',
    protocol: 'evm',
    network: 'testnet',
    name: 'BNB Smart Chain Testnet',
    evmChainId: 97,
    rpcUrls: ['https://bsc-testnet-rpc.publicnode.com', 'https://data-seed-prebsc-1-s1.bnbchain.org:8545'],
    // 0.45 s since the Fermi upgrade (testnet 2025-11-10; BNB Chain, "Fermi Upgrade of BSC").
    blockTimeMs: 450,
    orderConfirmations: 15,
    depositConfirmations: 30,
    finality: { kind: 'finalized-tag' },
    // Neither Circle nor Tether deploys on BSC Testnet. 18 decimals, as the mainnet tokens a test
    // there stands in for: a test token of other decimals is refused at start-up.
    tokens: { USDT: token('USDT', null, 18), USDC: token('USDC', null, 18) },
  },
  {
    chainId: 'base-sepolia',
    protocol: 'evm',
    network: 'testnet',
    name: 'Base Sepolia',
    evmChainId: 84532,
    rpcUrls: ['https://sepolia.base.org', 'https://base-sepolia-rpc.publicnode.com'],
    blockTimeMs: 2_000,
    orderConfirmations: 10,
    depositConfirmations: 30,
    finality: { kind: 'finalized-tag' },
    tokens: { USDC: token('USDC', '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 6), USDT: token('USDT', null, 6) },
  },
  {
    chainId: 'arbitrum-sepolia',
    protocol: 'evm',
    network: 'testnet',
    name: 'Arbitrum Sepolia',
    evmChainId: 421614,
    rpcUrls: ['https://sepolia-rollup.arbitrum.io/rpc', 'https://arbitrum-sepolia-rpc.publicnode.com'],
    blockTimeMs: 250,
    orderConfirmations: 80,
    depositConfirmations: 240,
    finality: { kind: 'finalized-tag' },
    tokens: { USDC: token('USDC', '0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d', 6), USDT: token('USDT', null, 6) },
  },
  {
    chainId: 'optimism-sepolia',
    protocol: 'evm',
    network: 'testnet',
    name: 'OP Sepolia',
    evmChainId: 11155420,
    rpcUrls: ['https://sepolia.optimism.io', 'https://optimism-sepolia-rpc.publicnode.com'],
    blockTimeMs: 2_000,
    orderConfirmations: 10,
    depositConfirmations: 30,
    finality: { kind: 'finalized-tag' },
    tokens: { USDC: token('USDC', '0x5fd84259d66Cd46123540766Be93DFE6D43130D7', 6), USDT: token('USDT', null, 6) },
  },
  {
    chainId: 'avalanche-fuji',
    protocol: 'evm',
    network: 'testnet',
    name: 'Avalanche Fuji C-Chain',
    evmChainId: 43113,
    rpcUrls: ['https://api.avax-test.network/ext/bc/C/rpc', 'https://avalanche-fuji-c-chain-rpc.publicnode.com'],
    blockTimeMs: 2_000,
    orderConfirmations: 3,
    depositConfirmations: 3,
    finality: { kind: 'finalized-tag' },
    tokens: { USDC: token('USDC', '0x5425890298aed601595a70AB815c96711a31Bc65', 6), USDT: token('USDT', null, 6) },
  },

  // --- mainnet
  {
    chainId: 'ethereum-mainnet',
    protocol: 'evm',
    network: 'mainnet',
    name: 'Ethereum',
    evmChainId: 1,
    rpcUrls: ['https://ethereum-rpc.publicnode.com', 'https://eth.drpc.org'],
    blockTimeMs: 12_000,
    orderConfirmations: 3,
    depositConfirmations: 6,
    finality: { kind: 'finalized-tag' },
    clockWitnessToleranceSeconds: 12,
    tokens: {
      USDT: token('USDT', '0xdAC17F958D2ee523a2206206994597C13D831ec7', 6),
      USDC: token('USDC', '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', 6),
      DAI: token('DAI', '0x6B175474E89094C44Da98b954EedeAC495271d0F', 18),
    },
  },
  {
    chainId: 'polygon-mainnet',
    protocol: 'evm',
    network: 'mainnet',
    name: 'Polygon PoS',
    evmChainId: 137,
    rpcUrls: ['https://polygon-bor-rpc.publicnode.com', 'https://polygon.drpc.org'],
    blockTimeMs: 2_000,
    orderConfirmations: 3,
    depositConfirmations: 10,
    finality: { kind: 'finalized-tag' },
    tokens: {
      USDT: token('USDT', '0xc2132D05D31c914a87C6611C10748AEb04B58e8F', 6),
      USDC: token('USDC', '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', 6),
      DAI: token('DAI', '0x8f3Cf7ad23Cd3CaDbD9735AFf958023239c6A063', 18),
    },
  },
  {
    chainId: 'tron-mainnet',
    protocol: 'tron',
    network: 'mainnet',
    name: 'Tron',
    rpcUrls: ['https://api.trongrid.io'],
    blockTimeMs: 3_000,
    orderConfirmations: 19,
    depositConfirmations: 19,
    finality: { kind: 'solidified', depth: 19 },
    clockWitnessToleranceSeconds: 3,
    tokens: { USDT: token('USDT', 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t', 6), USDC: token('USDC', null, 6) },
  },
  {
    chainId: 'solana-mainnet',
    protocol: 'solana',
    network: 'mainnet',
    name: 'Solana',
    rpcUrls: ['https://api.mainnet-beta.solana.com'],
    blockTimeMs: 400,
    orderConfirmations: 32,
    depositConfirmations: 32,
    finality: { kind: 'finalized-commitment', depth: 32 },
    clockWitnessToleranceSeconds: 3,
    // With a dedicated provider (RPC_URLS_SOLANA_MAINNET), SOLANA_SCAN_MODE_SOLANA_MAINNET=blocks.
    solanaScanMode: 'addresses',
    rpcRequestsPerSecond: 8,
    tokens: {
      USDT: token('USDT', 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB', 6),
      USDC: token('USDC', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', 6),
    },
  },
  // --- mainnet: the EVM chains where most USDT and USDC payments travel besides Ethereum (issue 41).
  // Every number's source is cited in docs/chains.md. None sets clockWitnessToleranceSeconds: their
  // timestamps are not tied to wall-clock slots the way Ethereum's and Tron's are (BSC validators and
  // the L2 sequencers set them, an OP Stack chain's run n × 2 s from genesis and lag after a
  // sequencer outage, Avalanche proposers choose them within a bound), so the witness stays off.
  {
    chainId: 'bsc-mainnet',
    protocol: 'evm',
    network: 'mainnet',
    name: 'BNB Smart Chain',
    evmChainId: 56,
    rpcUrls: ['https://bsc-rpc.publicnode.com', 'https://bsc-dataseed.bnbchain.org'],
    // 0.45 s since the Fermi upgrade, BEP-619 (mainnet 2026-01-14; BNB Chain, "Fermi Upgrade of BSC",
    // https://docs.bnbchain.org/announce/fermi-bsc).
    blockTimeMs: 450,
    // Fast finality (BEP-126) finalizes block n by n+2 (BNB Chain, "BSC API list: Finality API",
    // https://docs.bnbchain.org/bnb-smart-chain/developers/json_rpc/bsc-api-list/). 15 blocks (~7 s)
    // leave a margin of 13 blocks over that; deposits wait 30 and complete at the `finalized` tag,
    // which answers max(fast-finalized, probabilistically final) on BSC nodes.
    orderConfirmations: 15,
    depositConfirmations: 30,
    finality: { kind: 'finalized-tag' },
    // Binance-Peg BSC-USD and USD Coin: the tokens BSC wallets and exchanges call USDT and USDC,
    // issued by Binance against Tether's and Circle's reserves (neither issuer lists BSC). 18 decimals.
    tokens: {
      USDT: token('USDT', '0x55d398326f99059fF775485246999027B3197955', 18),
      USDC: token('USDC', '0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d', 18),
    },
  },
  {
    chainId: 'base-mainnet',
    protocol: 'evm',
    network: 'mainnet',
    name: 'Base',
    evmChainId: 8453,
    rpcUrls: ['https://mainnet.base.org', 'https://base-rpc.publicnode.com'],
    // 2 s blocks of 10 Flashblocks (Base, "Flashblocks", https://docs.base.org/base-chain/flashblocks/overview).
    blockTimeMs: 2_000,
    // An OP Stack chain: the sequencer's (unsafe) blocks are reorged only if the sequencer
    // equivocates or its batch never reaches L1; `finalized` is an L2 block whose batch is in a
    // finalized Ethereum block, ~20-30 min later (Base, "Transaction Finality",
    // https://docs.base.org/base-chain/network-information/transaction-finality; OP, "Transaction
    // finality", https://docs.optimism.io/stack/transactions/transaction-finality). Orders after 10
    // blocks (20 s), deposits after 30 (60 s), completed at `finalized`.
    orderConfirmations: 10,
    depositConfirmations: 30,
    finality: { kind: 'finalized-tag' },
    // Circle's native USDC. Tether issues no USDT on Base (Tether, "Supported Protocols"; USDT0 has
    // no Base deployment): listed without an address, offered only with TOKEN_BASE_MAINNET_USDT.
    tokens: { USDC: token('USDC', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 6), USDT: token('USDT', null, 6) },
  },
  {
    chainId: 'arbitrum-mainnet',
    protocol: 'evm',
    network: 'mainnet',
    name: 'Arbitrum One',
    evmChainId: 42161,
    rpcUrls: ['https://arb1.arbitrum.io/rpc', 'https://arbitrum-one-rpc.publicnode.com'],
    // 250 ms: the Nitro sequencer's default block time (Arbitrum, "Sequencer timing adjustments",
    // https://docs.arbitrum.io/launch-arbitrum-chain/features/advanced/sequencer-timing-adjustments).
    blockTimeMs: 250,
    // `latest` is the sequencer's word until its batch is posted; `safe`/`finalized` are L2 blocks
    // whose batch is in a safe/finalized Ethereum block (Arbitrum, "Finality and chain
    // reorganizations", https://docs.arbitrum.io/how-arbitrum-works/reference/finality-and-reorgs).
    // The same wait in time as the OP Stack chains: orders 80 blocks (20 s), deposits 240 (60 s),
    // completed at `finalized`.
    orderConfirmations: 80,
    depositConfirmations: 240,
    finality: { kind: 'finalized-tag' },
    // USDT0, Tether's omnichain USDT on Arbitrum (USDT0, "Developer: Deployments",
    // https://docs.usdt0.to/technical-documentation/developer); Circle's native USDC.
    tokens: {
      USDT: token('USDT', '0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9', 6),
      USDC: token('USDC', '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', 6),
    },
  },
  {
    chainId: 'optimism-mainnet',
    protocol: 'evm',
    network: 'mainnet',
    name: 'OP Mainnet',
    evmChainId: 10,
    rpcUrls: ['https://mainnet.optimism.io', 'https://optimism-rpc.publicnode.com'],
    blockTimeMs: 2_000,
    // The OP Stack's rule, as Base above (OP, "Transaction finality").
    orderConfirmations: 10,
    depositConfirmations: 30,
    finality: { kind: 'finalized-tag' },
    // USDT0 (not the legacy bridged 0x94b0…8e58) and Circle's native USDC.
    tokens: {
      USDT: token('USDT', '0x01bFF41798a0BcF287b996046Ca68b395DbC1071', 6),
      USDC: token('USDC', '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', 6),
    },
  },
  {
    chainId: 'avalanche-mainnet',
    protocol: 'evm',
    network: 'mainnet',
    name: 'Avalanche C-Chain',
    evmChainId: 43114,
    rpcUrls: ['https://api.avax.network/ext/bc/C/rpc', 'https://avalanche-c-chain-rpc.publicnode.com'],
    // Target block rate 2 s (Avalanche, "Transaction Fee Configuration": the C-Chain's
    // targetBlockRate; ACP-226 lets validators lower the minimum delay, so blocks may come faster).
    blockTimeMs: 2_000,
    // Snowman consensus: a block is final once accepted, sub-second, and a node serves only
    // accepted blocks by default (Avalanche, "Consensus Protocols",
    // https://build.avax.network/docs/nodes/architecture/consensus). No reorgs to wait out: 3
    // confirmations cover providers behind one another, the `finalized` tag is the last accepted block.
    orderConfirmations: 3,
    depositConfirmations: 3,
    finality: { kind: 'finalized-tag' },
    // Tether's own USDt on Avalanche (Tether, "Supported Protocols") and Circle's native USDC.
    tokens: {
      USDT: token('USDT', '0x9702230A8Ea53601f5cD2dc00fDBc13d4dF4A8c7', 6),
      USDC: token('USDC', '0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E', 6),
    },
  },
];
