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
];
