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
  'ethereum-mainnet': 'https://etherscan.io/tx/{txHash}',
  'polygon-mainnet': 'https://polygonscan.com/tx/{txHash}',
  'tron-mainnet': 'https://tronscan.org/#/transaction/{txHash}',
  'solana-mainnet': 'https://explorer.solana.com/tx/{txHash}',
};
