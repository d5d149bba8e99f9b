import { expect } from 'chai';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { tokenAmount } from '../../core/platform/money-log';

/** registry.tokenDecimals is the one authority on decimals: every other reader goes through it. */
describe('token decimals: one authority', () => {
  it('an unknown token is a clear error, never a guessed 18', () => {
    const r = ChainRegistry.forNetwork('local', SCANNED_FAMILIES);
    expect(() => r.tokenDecimals('ethereum-local', 'EURC')).to.throw(/No decimals known for EURC on ethereum-local/);
    expect(() => r.tokenDecimals('bitcoin-local', 'USDT')).to.throw(/No decimals known for USDT on bitcoin-local/);
    // tron-local defines USDT only: an address learnt for DAI without its decimals is refused.
    expect(() => r.setTokenAddress('tron-local', 'DAI', 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf')).to.throw(/No decimals known for DAI on tron-local/);
    expect(r.get('tron-local')!.tokens.DAI).to.equal(undefined);
    // With the chain definition's decimals, or explicit ones, it is recorded.
    r.setTokenAddress('ethereum-local', 'USDC', '0x5FbDB2315678afecb367f032d93F642f64180aa3');
    expect(r.tokenDecimals('ethereum-local', 'USDC')).to.equal(6);
    r.setTokenAddress('tron-local', 'DAI', 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', 18);
    expect(r.tokenDecimals('tron-local', 'DAI')).to.equal(18);
  });

  it('money log amounts use it: a row of another network formats, an unknown token throws', () => {
    const r = ChainRegistry.forNetwork('local', SCANNED_FAMILIES);
    expect(tokenAmount(r, 'ethereum-local', 'USDT', 12_500_000n)).to.equal('12.5');
    // A row written under NETWORK=testnet, read by a local deployment (the registry's fallback).
    expect(tokenAmount(r, 'ethereum-sepolia', 'USDC', '1500000')).to.equal('1.5');
    expect(() => tokenAmount(r, 'ethereum-local', 'EURC', 1n)).to.throw(/No decimals known for EURC/);
  });

  it('knownTokens lists the decimals tokenDecimals gives, this network and the others', () => {
    const r = ChainRegistry.forNetwork('local', SCANNED_FAMILIES);
    r.setTokenAddress('tron-local', 'DAI', 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf', 18);
    const known = r.knownTokens();
    expect(known.map((t) => `${t.chainId}|${t.currency}`)).to.include.members(['ethereum-local|DAI', 'tron-local|DAI', 'ethereum-sepolia|USDC', 'tron-mainnet|USDT']);
    for (const t of known) expect(t.decimals, `${t.chainId} ${t.currency}`).to.equal(r.tokenDecimals(t.chainId, t.currency));
  });
});
