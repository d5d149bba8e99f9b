import { expect } from 'chai';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { AppError } from '../../core/platform/errors';

function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    return err as AppError;
  }
  throw new Error('expected an error');
}

describe('chain registry', () => {
  it('NETWORK=local has ethereum-local with USDT, USDC and DAI (addresses learnt at run time)', () => {
    const r = ChainRegistry.forNetwork('local', SCANNED_FAMILIES);
    expect(r.list().map((c) => c.chainId)).to.deep.equal(['ethereum-local', 'tron-local', 'solana-local']);
    const chain = r.requireOfferedChain('ethereum-local');
    expect(Object.keys(chain.tokens).sort()).to.deep.equal(['DAI', 'USDC', 'USDT']);
    expect(chain.tokens.DAI!.decimals).to.equal(18);
    expect(errorOf(() => r.requireToken(chain, 'USDT')).code).to.equal('INVALID_CURRENCY');
    r.setTokenAddress('ethereum-local', 'USDT', '0x5FbDB2315678afecb367f032d93F642f64180aa3');
    expect(r.requireToken(chain, 'USDT').decimals).to.equal(6);
  });

  it('Tron chains: USDT only by default (DAI is INVALID_CURRENCY, USDC retired), Nile USDT overridable, solidification depth as confirmations, the API key kept out of serialisation', () => {
    const r = ChainRegistry.forNetwork('testnet', SCANNED_FAMILIES, { TRON_PRO_API_KEY_TRON_NILE: 'trongrid-secret' });
    const nile = r.get('tron-nile')!;
    expect(r.offeredTokens(nile).map((t) => [t.currency, t.address, t.decimals])).to.deep.equal([['USDT', 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', 6]]);
    expect(errorOf(() => r.requireToken(nile, 'DAI')).code).to.equal('INVALID_CURRENCY');
    expect(errorOf(() => r.requireToken(nile, 'USDC')).code).to.equal('INVALID_CURRENCY');
    expect(nile.orderConfirmations).to.equal(19);
    expect(nile.providerApiKey).to.equal('trongrid-secret');
    expect(JSON.stringify(nile)).not.to.contain('trongrid-secret');
    const overridden = ChainRegistry.forNetwork('testnet', SCANNED_FAMILIES, { TOKEN_TRON_NILE_USDT: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t' });
    expect(overridden.get('tron-nile')!.tokens.USDT!.address).to.equal('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t');
    const mainnet = ChainRegistry.forNetwork('mainnet', SCANNED_FAMILIES).get('tron-mainnet')!;
    expect(mainnet.tokens.USDT!.address).to.equal('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t');
  });

  it('NETWORK=testnet offers tron-nile and solana-devnet (both families have an adapter); Solana scans by address on public endpoints unless told otherwise', () => {
    const r = ChainRegistry.forNetwork('testnet', SCANNED_FAMILIES);
    expect(r.list().map((c) => c.chainId).sort()).to.deep.equal([
      'arbitrum-sepolia',
      'avalanche-fuji',
      'base-sepolia',
      'bsc-testnet',
      'ethereum-sepolia',
      'optimism-sepolia',
      'polygon-amoy',
      'solana-devnet',
      'tron-nile',
    ]);
    expect(r.requireOfferedChain('tron-nile').protocol).to.equal('tron');
    const devnet = r.requireOfferedChain('solana-devnet');
    expect(devnet).to.include({ protocol: 'solana', solanaScanMode: 'addresses' });
    expect(devnet.finality).to.deep.equal({ kind: 'finalized-commitment', depth: 32 });
    expect(r.requireToken(devnet, 'USDC').address).to.equal('4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU');
    const told = ChainRegistry.forNetwork('testnet', SCANNED_FAMILIES, { SOLANA_SCAN_MODE_SOLANA_DEVNET: 'blocks', RPC_REQUESTS_PER_SECOND_SOLANA_DEVNET: '50' }).get('solana-devnet')!;
    expect(told).to.include({ solanaScanMode: 'blocks', rpcRequestsPerSecond: 50 });
    const mainnet = ChainRegistry.forNetwork('mainnet', SCANNED_FAMILIES).get('solana-mainnet')!;
    expect(mainnet.tokens.USDC!.address).to.equal('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
    expect(mainnet.tokens.USDT!.address).to.equal('Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB');
    expect(mainnet.enabled).to.equal(true);
    expect(errorOf(() => r.requireOfferedChain('bitcoin-testnet')).code).to.equal('INVALID_CHAIN');
    const sepolia = r.requireOfferedChain('ethereum-sepolia');
    expect(r.requireToken(sepolia, 'USDC').decimals).to.equal(6);
    // No official test USDT on Sepolia: not offered unless an address is supplied.
    expect(errorOf(() => r.requireToken(sepolia, 'USDT')).code).to.equal('INVALID_CURRENCY');
    expect(r.enabledChainsOf('evm').map((c) => c.chainId).sort()).to.deep.equal([
      'arbitrum-sepolia',
      'avalanche-fuji',
      'base-sepolia',
      'bsc-testnet',
      'ethereum-sepolia',
      'optimism-sepolia',
      'polygon-amoy',
    ]);
    expect(r.enabledChainsOf('tron').map((c) => c.chainId)).to.deep.equal(['tron-nile']);
  });

  it('takes RPC URLs and token addresses from the environment, and confirmations may only be raised', () => {
    const r = ChainRegistry.forNetwork('testnet', SCANNED_FAMILIES, {
      RPC_URLS_ETHEREUM_SEPOLIA: 'https://a.example, https://b.example',
      TOKEN_ETHEREUM_SEPOLIA_USDT: '0x7169D38820dfd117C3FA1f22a697dBA58d90BA06',
      CONFIRMATIONS_ETHEREUM_SEPOLIA: '12',
      CONFIRMATIONS_POLYGON_AMOY: '1',
    });
    const sepolia = r.get('ethereum-sepolia')!;
    expect(sepolia.rpcUrls).to.deep.equal(['https://a.example', 'https://b.example']);
    expect(r.requireToken(sepolia, 'USDT').address).to.equal('0x7169D38820dfd117C3FA1f22a697dBA58d90BA06');
    expect(sepolia.orderConfirmations).to.equal(12);
    expect(r.get('polygon-amoy')!.orderConfirmations).to.equal(3);
  });

  it('the EVM chains of issue 41: official contracts and decimals (18 on BSC), finality by tag, an explorer each, per-chain variables by chain id', () => {
    const mainnet = ChainRegistry.forNetwork('mainnet', SCANNED_FAMILIES);
    const tokens = (chainId: string) => mainnet.offeredTokens(mainnet.requireOfferedChain(chainId)).map((t) => [t.currency, t.address, t.decimals]);
    expect(tokens('bsc-mainnet')).to.deep.equal([
      ['USDT', '0x55d398326f99059fF775485246999027B3197955', 18],
      ['USDC', '0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d', 18],
    ]);
    // No USDT issued on Base: not offered unless TOKEN_BASE_MAINNET_USDT says where.
    expect(tokens('base-mainnet')).to.deep.equal([['USDC', '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', 6]]);
    expect(errorOf(() => mainnet.requireToken(mainnet.get('base-mainnet')!, 'USDT')).code).to.equal('INVALID_CURRENCY');
    expect(tokens('arbitrum-mainnet')).to.deep.equal([
      ['USDT', '0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9', 6],
      ['USDC', '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', 6],
    ]);
    expect(tokens('optimism-mainnet')).to.deep.equal([
      ['USDT', '0x01bFF41798a0BcF287b996046Ca68b395DbC1071', 6],
      ['USDC', '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', 6],
    ]);
    expect(tokens('avalanche-mainnet')).to.deep.equal([
      ['USDT', '0x9702230A8Ea53601f5cD2dc00fDBc13d4dF4A8c7', 6],
      ['USDC', '0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E', 6],
    ]);
    const ids = { 'bsc-mainnet': 56, 'base-mainnet': 8453, 'arbitrum-mainnet': 42161, 'optimism-mainnet': 10, 'avalanche-mainnet': 43114 };
    for (const [chainId, evmChainId] of Object.entries(ids)) {
      const chain = mainnet.requireOfferedChain(chainId);
      expect(chain, chainId).to.include({ protocol: 'evm', network: 'mainnet', evmChainId });
      expect(chain.finality, chainId).to.deep.equal({ kind: 'finalized-tag' });
      expect(chain.explorerTxUrl, chainId).to.match(/^https:\/\/.+\{txHash\}$/);
      // Slot-tied timestamps only: none of these chains has the clock witness on by default.
      expect(chain.clockWitnessToleranceSeconds, chainId).to.equal(undefined);
    }
    const testnet = ChainRegistry.forNetwork('testnet', SCANNED_FAMILIES, { RPC_URLS_BSC_TESTNET: 'https://bsc.example', TOKEN_BSC_TESTNET_USDT: '0x337610d27c682E347C9cD60BD4b3b107C9d34dDd' });
    const bscTestnet = testnet.requireOfferedChain('bsc-testnet');
    expect(bscTestnet.rpcUrls).to.deep.equal(['https://bsc.example']);
    expect(testnet.offeredTokens(bscTestnet).map((t) => [t.currency, t.decimals])).to.deep.equal([['USDT', 18]]);
    const circleTest = { 'base-sepolia': '0x036CbD53842c5426634e7929541eC2318f3dCF7e', 'arbitrum-sepolia': '0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d', 'optimism-sepolia': '0x5fd84259d66Cd46123540766Be93DFE6D43130D7', 'avalanche-fuji': '0x5425890298aed601595a70AB815c96711a31Bc65' };
    for (const [chainId, usdc] of Object.entries(circleTest)) {
      expect(testnet.offeredTokens(testnet.requireOfferedChain(chainId)).map((t) => [t.currency, t.address, t.decimals]), chainId).to.deep.equal([['USDC', usdc, 6]]);
    }
  });
});
