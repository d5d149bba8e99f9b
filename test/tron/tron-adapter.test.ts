import { expect } from 'chai';
import { ChainRegistry } from '../../core/chains/registry';
import { SCANNED_FAMILIES } from '../../core/chains/adapters';
import { TronAdapter } from '../../core/chains/tron/tron-adapter';
import { TronHttp, type TronBlock, type TronTransactionInfo, type TronView } from '../../core/chains/tron/tron-http';
import type { ChainTransfer } from '../../core/chains/adapter-contract';
import { normalizeAddress } from '../../core/chains/addresses';
import { applyTronLocalState, TRON_LOCAL_CHAIN_ID } from '../../core/chains/tron/tron-local-state';
import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { adapterFor } from '../../core/detection/monitor';
import { createLogger } from '../../core/platform/logger';
import { closedPort } from '../helpers/processes';
import { testConfig, testContext } from '../helpers/harness';

/** The adapter's HTTP client, noting each block and infos request in the order the adapter asks. */
class RecordingTronHttp extends TronHttp {
  readonly asked: string[] = [];
  override blocksByRange(view: TronView, startNum: number, endNum: number): Promise<TronBlock[]> {
    this.asked.push(`blocks ${startNum}-${endNum - 1}`);
    return super.blocksByRange(view, startNum, endNum);
  }
  override transactionInfoByBlockNum(view: TronView, num: number): Promise<TronTransactionInfo[]> {
    this.asked.push(`infos ${num}`);
    return super.transactionInfoByBlockNum(view, num);
  }
}

describe('Tron adapter on tron-local', () => {
  let node: TronLocalNode;
  const adapterWith = (overrides: Record<string, string> = {}, decimals?: number) => {
    const registry = ChainRegistry.forNetwork('local', SCANNED_FAMILIES, overrides);
    applyTronLocalState(registry, { rpcUrl: node.url, genesisHash: node.genesisHash, token: node.token, startedAt: '' });
    if (decimals !== undefined) registry.setTokenAddress(TRON_LOCAL_CHAIN_ID, 'USDT', node.token, decimals);
    const chain = registry.get(TRON_LOCAL_CHAIN_ID)!;
    return new TronAdapter(chain, new TronHttp(chain.chainId, chain.rpcUrls));
  };
  afterEach(async () => node?.stop());

  it('verifies decimals with triggerconstantcontract; a mismatch is a named error', async () => {
    node = new TronLocalNode({ blockTimeMs: 0 });
    await node.start();
    expect(await adapterWith().verifyTokens()).to.deep.equal({ ok: true, problems: [] });
    const bad = await adapterWith({}, 18).verifyTokens();
    expect(bad.ok).to.equal(false);
    expect(bad.problems[0]).to.match(/^TokenDecimalsMismatch: USDT at T\w+ reports decimals 6, the registry expects 18$/);
  });

  it('head is the full node head; when solidification falls behind, the head stays the full node head and only the confirming height stays within depth − 1 of the solidified block', async () => {
    node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: 2 });
    await node.start();
    node.mine(10);
    const adapter = adapterWith(); // depth 3 on tron-local
    expect((await adapter.head()).number).to.equal(10);
    expect(await adapter.finalizedBlockNumber()).to.equal(8);
    expect(await adapter.confirmingHead(10)).to.equal(10);
    await node.stop();
    node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: 6 });
    await node.start();
    node.mine(10);
    const lagging = adapterWith();
    const head = await lagging.head();
    expect(head.number).to.equal(10); // wire confirmations count from here
    expect(head.hash).to.equal((await lagging.blockAt(10))!.hash);
    expect(await lagging.confirmingHead(head.number)).to.equal(4 + 3 - 1); // solidified 4, depth 3
  });

  it('reads transfers of a range, one record per Transfer log, T-addresses, block hash and time', async () => {
    node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: 2 });
    await node.start();
    const payee = 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1';
    const tx = node.submit([{ to: payee, amount: 5n }, { to: payee, amount: 6n }]);
    const [block] = node.mine(1);
    node.mine(4);
    const adapter = adapterWith();
    await adapter.finalizedBlockNumber(); // blocks up to the solidified head are read from /walletsolidity
    const found = await adapter.transfersInRange(1, 5);
    expect(found.map((t) => [t.txHash, t.indexInTx, t.toAddress, t.fromAddress, t.amount, t.blockNumber, t.blockHash, t.blockTimestamp])).to.deep.equal([
      [tx.id, 0, payee, node.faucet, 5n, 1, block.hash, Math.floor(block.timestamp / 1000)],
      [tx.id, 1, payee, node.faucet, 6n, 1, block.hash, Math.floor(block.timestamp / 1000)],
    ]);
    expect(normalizeAddress('tron', payee)).to.equal(payee);
    expect(normalizeAddress('tron', '0x' + '11'.repeat(20))).to.equal(null);
  });

  it('reads a range in getblockbylimitnext requests sized by the blocks\' density and asks transaction infos only of blocks with a transaction that runs contract code: a block of TRX transfers holds no Transfer log', async () => {
    node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: 2 });
    await node.start();
    const payee = 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1';
    node.mine(4);
    const usdt = node.submit([{ to: payee, amount: 5n }]);
    const [usdtBlock] = node.mine(1); // 5
    node.mine(9);
    node.submitTrx(payee, 1_000_000n);
    node.submitTrx(payee, 2_000_000n);
    node.mine(1); // 15: TRX transfers only
    node.mine(10);
    node.submitTrx(payee, 3_000_000n);
    const mixed = node.submit([{ to: payee, amount: 7n }]);
    const [mixedBlock] = node.mine(1); // 26: a TRX transfer, then a USDT transfer
    node.mine(21); // head 47, solidified 45
    const adapter = adapterWith();
    await adapter.finalizedBlockNumber();
    const before = adapter.calls;
    const found = await adapter.transfersInRange(1, 45);
    expect(found.map((t) => [t.txHash, t.indexInTx, t.blockLogIndex, t.amount, t.blockNumber, t.blockHash])).to.deep.equal([
      [usdt.id, 0, 0, 5n, 5, usdtBlock.hash],
      [mixed.id, 0, 0, 7n, 26, mixedBlock.hash],
    ]);
    // Blocks 1-20 (20, one request, before any block was read), then 21-45 at the density seen; the infos of blocks 5 and 26 only.
    expect(adapter.calls - before).to.equal(2 + 2);
    // Blocks this light (3 transactions in 45) are then asked for 100 at a time.
    const again = adapter.calls;
    expect(await adapter.transfersInRange(1, 45)).to.deep.equal(found);
    expect(adapter.calls - again).to.equal(1 + 2);
  });

  it('reads a range of dense blocks in rounds of about 6,000 transactions: a round\'s blocks are asked only once the round before has its infos, so a range of mainnet blocks is never in memory whole', async () => {
    node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: 2 });
    await node.start();
    const payee = 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1';
    node.mine(1);
    // Blocks 2-31: 500 transactions each (a mainnet block holds a few hundred), one of them a USDT payment.
    const payments: string[] = [];
    for (let i = 1; i <= 30; i++) {
      payments.push(node.submit([{ to: payee, amount: BigInt(i) }]).id);
      for (let j = 0; j < 499; j++) node.submitTrx(payee, 1n);
      node.mine(1);
    }
    node.mine(2); // solidified 31
    const http = new RecordingTronHttp(TRON_LOCAL_CHAIN_ID, [node.url]);
    const registry = ChainRegistry.forNetwork('local', SCANNED_FAMILIES, {});
    applyTronLocalState(registry, { rpcUrl: node.url, genesisHash: node.genesisHash, token: node.token, startedAt: '' });
    const adapter = new TronAdapter(registry.get(TRON_LOCAL_CHAIN_ID)!, http);
    await adapter.finalizedBlockNumber();
    const paid = (found: ChainTransfer[]) => found.map((t) => [t.txHash, t.amount, t.blockNumber]);
    const expected = payments.map((id, i) => [id, BigInt(i + 1), i + 2]);

    expect(paid(await adapter.transfersInRange(2, 31))).to.deep.equal(expected);
    const infos = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `infos ${from + i}`);
    // Before any block was read: one request of 20 blocks; then 500 a block: 4 blocks a request, 12 a round.
    expect(http.asked).to.deep.equal(['blocks 2-21', ...infos(2, 21), 'blocks 22-25', 'blocks 26-29', 'blocks 30-31', ...infos(22, 31)]);

    http.asked.length = 0;
    expect(paid(await adapter.transfersInRange(2, 31))).to.deep.equal(expected);
    expect(http.asked).to.deep.equal([
      'blocks 2-5', 'blocks 6-9', 'blocks 10-13', ...infos(2, 13),
      'blocks 14-17', 'blocks 18-21', 'blocks 22-25', ...infos(14, 25),
      'blocks 26-29', 'blocks 30-31', ...infos(26, 31),
    ]);
  });

  it("provider lines go to the service context's logger (no module-level logger), without the API key", async () => {
    const lines: string[] = [];
    const ctx = testContext(testConfig({ TRON_PRO_API_KEY_TRON_LOCAL: 'tron-key-not-for-logs', RPC_URLS_TRON_LOCAL: `http://127.0.0.1:${await closedPort()}` }));
    ctx.logger = createLogger('info', { write: (line: string) => void lines.push(line) });
    ctx.registry.setTokenAddress(TRON_LOCAL_CHAIN_ID, 'USDT', 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1', 6);
    const adapter = adapterFor(ctx, ctx.registry.get(TRON_LOCAL_CHAIN_ID)!)!;
    const err = await adapter.head().then(() => null, (e: Error) => e);
    expect(err?.name).to.equal('ProviderUnavailableError');
    const failed = lines.map((l) => JSON.parse(l)).filter((l) => l.msg?.startsWith('Tron provider failed'));
    expect(failed.length).to.be.greaterThan(0);
    expect(failed[0]).to.include({ component: 'tron-http', chainId: TRON_LOCAL_CHAIN_ID });
    expect(lines.join('\n')).to.not.include('tron-key-not-for-logs');
  });
});
