/**
 * Block explorers' transaction pages per chain (`{txHash}` is replaced), shown on the payment
 * page. Kept apart from chains.data.ts so the chain definitions stay about detection.
 * EXPLORER_TX_URL_<CHAIN> overrides or adds one (e.g. for the local chain, which has none).
 */
export const EXPLORER_TX_URLS: Record<string, string> = {
  'ethereum-sepolia': 'https://sepolia.etherscan.io/tx/{txHash}',
  'polygon-amoy': 'https://amoy.polygonscan.com/tx/{txHash}',
  'tron-nile': 'https://nile.tronscan.org/#/transaction/{txHash}',
  'solana-devnet': 'https://explorer.solana.com/tx/{txHash}?cluster=devnet',
  'bsc-testnet': 'https://testnet.bscscan.com/tx/{txHash}',
  'base-sepolia': 'https://sepolia.basescan.org/tx/{txHash}',
  'arbitrum-sepolia': 'https://sepolia.arbiscan.io/tx/{txHash}',
  'optimism-sepolia': 'https://sepolia-optimism.etherscan.io/tx/{txHash}',
  'avalanche-fuji': 'https://testnet.snowtrace.io/tx/{txHash}',
  'ethereum-mainnet': 'https://etherscan.io/tx/{txHash}',
  'polygon-mainnet': 'https://polygonscan.com/tx/{txHash}',
  'tron-mainnet': 'https://tronscan.org/#/transaction/{txHash}',
  'solana-mainnet': 'https://explorer.solana.com/tx/{txHash}',
  'bsc-mainnet': 'https://bscscan.com/tx/{txHash}',
  'base-mainnet': 'https://basescan.org/tx/{txHash}',
  'arbitrum-mainnet': 'https://arbiscan.io/tx/{txHash}',
  'optimism-mainnet': 'https://optimistic.etherscan.io/tx/{txHash}',
  'avalanche-mainnet': 'https://snowtrace.io/tx/{txHash}',
};
