import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { hex20FromTron, hex41FromTron, tronFromHex41 } from '../../core/chains/tron/tron-address';
import type { TronTransactionInfo } from '../../core/chains/tron/tron-http';
import { TRC20_TRANSFER_TOPIC, parseTronTransfers, type TronToken } from '../../core/chains/tron/tron-transfers';

const fixture = (name: string): TronTransactionInfo[] => {
  const raw = JSON.parse(readFileSync(path.join(__dirname, '../fixtures/tron', name), 'utf8'));
  return Array.isArray(raw) ? raw : [];
};

const NILE_USDT = 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf';
const tokens = new Map<string, TronToken>([[hex20FromTron(NILE_USDT)!, { currency: 'USDT', address: NILE_USDT }]]);
const block = { number: 52953811, hash: '0000000003280053aa', timestamp: 1734772239 };

describe('Tron: TRC-20 transfers from recorded gettransactioninfobyblocknum answers', () => {
  it('knows the Transfer topic as log[] writes it (no 0x)', () => {
    expect(TRC20_TRANSFER_TOPIC).to.equal('ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef');
  });

  it('converts between T…, 41-hex and log-address forms', () => {
    expect(hex41FromTron(NILE_USDT)).to.equal('41eca9bc828a3005b9a3b909f2cc5c2a54794de05f');
    expect(tronFromHex41('41a614f803b6fd780986a42c78ec9c7f77e6ded13c')).to.equal('TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t');
    expect(hex20FromTron('not an address')).to.equal(null);
  });

  it('reads a published Nile USDT transfer: recipient base58check(41 + last 20 bytes of topics[2]), amount the data word', () => {
    const [t, ...rest] = parseTronTransfers(fixture('txinfos.nile-usdt-transfer.json'), tokens, block);
    expect(rest).to.have.length(0);
    expect(t).to.deep.include({
      txHash: 'd6161e2819feaa74ee44113ccb525f79cc2d9fa1f290554804988d1223d2e3b6',
      indexInTx: 0,
      currency: 'USDT',
      tokenAddress: NILE_USDT,
      fromAddress: 'TFWCgEouJUC1bHLMfjdzLQdXPeiCE1byfw',
      toAddress: 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1',
      amount: 1_000_000n,
      blockNumber: block.number,
      blockHash: block.hash,
      blockTimestamp: block.timestamp,
    });
  });

  it('several Transfer logs in one transaction are several transfers, told apart by their index within it', () => {
    const found = parseTronTransfers(fixture('txinfos.nile-usdt-two-transfers.json'), tokens, block);
    expect(found.map((t) => [t.txHash.slice(0, 8), t.indexInTx, t.toAddress, t.amount])).to.deep.equal([
      ['d6161e28', 0, 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1', 1_000_000n],
      ['d6161e28', 1, 'TFWCgEouJUC1bHLMfjdzLQdXPeiCE1byfw', 234_000_000n],
    ]);
  });

  it('a reverted transaction (receipt REVERT, result FAILED, no logs) gives nothing, even if it carried a Transfer log', () => {
    expect(parseTronTransfers(fixture('txinfos.revert.json'), tokens, block)).to.deep.equal([]);
    const reverted = fixture('txinfos.nile-usdt-transfer.json').map((i) => ({ ...i, receipt: { ...i.receipt, result: 'REVERT' }, result: 'FAILED' }));
    expect(parseTronTransfers(reverted, tokens, block)).to.deep.equal([]);
    const failedTopLevel = fixture('txinfos.nile-usdt-transfer.json').map((i) => ({ ...i, result: 'FAILED' }));
    expect(parseTronTransfers(failedTopLevel, tokens, block)).to.deep.equal([]);
  });

  it('a non-token contract call and plain TRX transfers give nothing', () => {
    expect(parseTronTransfers(fixture('txinfos.nile-contract-call.json'), tokens, block)).to.deep.equal([]);
    expect(parseTronTransfers(fixture('txinfos.nile-66987565.json'), tokens, block)).to.deep.equal([]);
  });

  it('a Transfer of a token that is not configured gives nothing', () => {
    expect(parseTronTransfers(fixture('txinfos.nile-usdt-transfer.json'), new Map(), block)).to.deep.equal([]);
  });

  it('an empty block ([] or {}) gives nothing', () => {
    expect(parseTronTransfers(fixture('txinfos.empty-block.json'), tokens, block)).to.deep.equal([]);
    expect(parseTronTransfers(fixture('txinfos.empty-object.json'), tokens, block)).to.deep.equal([]);
  });
});
