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
    expect(r.list().map((c) => c.chainId).sort()).to.deep.equal(['ethereum-sepolia', 'polygon-amoy', 'solana-devnet', 'tron-nile']);
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
    expect(r.enabledChainsOf('evm').map((c) => c.chainId).sort()).to.deep.equal(['ethereum-sepolia', 'polygon-amoy']);
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
});
