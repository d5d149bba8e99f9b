import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hex20FromTron, hex41FromTron } from '../../core/chains/tron/tron-address';
import { TronHttp } from '../../core/chains/tron/tron-http';
import { parseTronTransfers } from '../../core/chains/tron/tron-transfers';
import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { eventually } from '../helpers/wait';

const PAYEE = 'TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1';
const OTHER = 'TFWCgEouJUC1bHLMfjdzLQdXPeiCE1byfw';

async function dev(node: TronLocalNode, route: string, body: unknown = {}) {
  const res = await fetch(`${node.url}/dev/${route}`, { method: 'POST', body: JSON.stringify(body) });
  return res.json() as Promise<Record<string, unknown>>;
}

describe('tron-local: the local Tron chain', () => {
  let dir: string;
  let node: TronLocalNode;
  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tron-local-'));
    node = new TronLocalNode({ stateFile: path.join(dir, 'state.json'), blockTimeMs: 0, solidificationLag: 3 });
    await node.start();
  });
  afterEach(async () => {
    await node.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers the full-node and solidified views in the documented formats, with TRC-20 transfers the parser reads', async () => {
    const client = new TronHttp('tron-local', [node.url]);
    const sent = await dev(node, 'transfer', { transfers: [{ to: PAYEE, amount: '1500000' }, { to: OTHER, amount: '2' }] });
    await dev(node, 'transfer', { to: PAYEE, amount: '7', fail: true });
    const head = (await client.nowBlock('wallet'))!;
    expect(head.block_header.raw_data.number).to.equal(2);
    expect(head.block_header.raw_data.parentHash).to.equal((await client.blockByNum('wallet', 1))!.blockID);
    // Not solidified yet: the solidified view does not have it.
    expect((await client.nowBlock('walletsolidity'))!.block_header.raw_data.number).to.equal(0);
    expect(await client.blockByNum('walletsolidity', 1)).to.equal(null);
    expect(await client.transactionInfoByBlockNum('walletsolidity', 1)).to.deep.equal([]);

    const infos = await client.transactionInfoByBlockNum('wallet', 1);
    expect(infos[0].log![0].address).to.match(/^[0-9a-f]{40}$/);
    expect(infos[0].contract_address).to.equal(hex41FromTron(node.token));
    const tokens = new Map([[hex20FromTron(node.token)!, { currency: 'USDT' as const, address: node.token }]]);
    const found = parseTronTransfers(infos, tokens, { number: 1, hash: 'h', timestamp: 1 });
    expect(found.map((t) => [t.txHash, t.indexInTx, t.toAddress, t.amount])).to.deep.equal([
      [sent.txID, 0, PAYEE, 1_500_000n],
      [sent.txID, 1, OTHER, 2n],
    ]);
    const reverted = await client.transactionInfoByBlockNum('wallet', 2);
    expect(reverted[0]).to.deep.include({ result: 'FAILED' });
    expect(reverted[0].receipt?.result).to.equal('REVERT');
    expect(reverted[0].log).to.equal(undefined);

    await dev(node, 'mine', { blocks: 3 });
    expect((await client.nowBlock('walletsolidity'))!.block_header.raw_data.number).to.equal(2);
    expect((await client.transactionInfoByBlockNum('walletsolidity', 1)).length).to.equal(1);
    expect(await client.constantCall(hex41FromTron(node.token)!, 'decimals()')).to.equal('6'.padStart(64, '0'));
    expect(node.balanceOf(PAYEE)).to.equal(1_500_000n);
  });

  it('orphans unsolidified blocks: same heights, new hashes, their transactions gone', async () => {
    const client = new TronHttp('tron-local', [node.url]);
    await dev(node, 'mine', { blocks: 5 });
    await dev(node, 'transfer', { to: PAYEE, amount: '5' });
    const before = (await client.blockByNum('wallet', 6))!.blockID;
    const result = await dev(node, 'orphan');
    expect(result).to.deep.equal({ orphaned: 3, from: 4 }); // head 6, solidified 3
    const after = (await client.blockByNum('wallet', 6))!;
    expect(after.blockID).not.to.equal(before);
    expect(await client.transactionInfoByBlockNum('wallet', 6)).to.deep.equal([]);
    expect(node.balanceOf(PAYEE)).to.equal(0n);
  });

  it('orphans only the newest N unsolidified blocks when asked, re-including their transactions', async () => {
    await dev(node, 'mine', { blocks: 5 });
    const sent = await dev(node, 'transfer', { to: PAYEE, amount: '5' }); // block 6
    const five = node.head.number - 1;
    const kept = (await new TronHttp('tron-local', [node.url]).blockByNum('wallet', five))!.blockID;
    expect(await dev(node, 'orphan', { blocks: 1, reinclude: true })).to.deep.equal({ orphaned: 1, from: 6 });
    expect((await new TronHttp('tron-local', [node.url]).blockByNum('wallet', five))!.blockID).to.equal(kept);
    const infos = await new TronHttp('tron-local', [node.url]).transactionInfoByBlockNum('wallet', 6);
    expect(infos.map((i) => i.id)).to.deep.equal([sent.txID]);
    // Never below the solidified block, whatever N.
    expect(await dev(node, 'orphan', { blocks: 50 })).to.deep.equal({ orphaned: 3, from: 4 });
  });

  it('runs its clock behind the machine\'s when asked, and tells as each block is solidified', async () => {
    await node.stop();
    const solidified: { number: number; hash: string }[] = [];
    node = new TronLocalNode({ blockTimeMs: 0, solidificationLag: 1, clockLagMs: 60_000, onSolidified: (b) => solidified.push({ number: b.number, hash: b.hash }) });
    await node.start();
    const [b] = node.mine(1);
    // (A block is at least 1 ms after its parent: within the genesis millisecond it is 59 999 ms behind.)
    expect(Date.now() - b.timestamp).to.be.within(59_000, 65_000);
    expect(solidified.map((x) => x.number)).to.deep.equal([]);
    node.mine(3);
    expect(solidified).to.deep.equal([{ number: 1, hash: b.hash }, { number: 2, hash: solidified[1].hash }, { number: 3, hash: solidified[2].hash }]);
    expect(solidified[2].hash).to.equal((await new TronHttp('tron-local', [node.url]).nowBlock('walletsolidity'))!.blockID);
    // Orphaning the unsolidified blocks tells nothing again (the solidified ones stay).
    await dev(node, 'orphan');
    expect(solidified.map((x) => x.number)).to.deep.equal([1, 2, 3]);
    node.mine(1);
    expect(solidified.map((x) => x.number)).to.deep.equal([1, 2, 3, 4]);
  });

  it('keeps its state across restarts and answers 429 on demand', async () => {
    await dev(node, 'transfer', { to: PAYEE, amount: '9' });
    const hash = node.head.hash;
    await node.stop();
    node = new TronLocalNode({ stateFile: path.join(dir, 'state.json'), blockTimeMs: 0, solidificationLag: 3 });
    await node.start();
    expect(node.head.hash).to.equal(hash);
    expect(node.balanceOf(PAYEE)).to.equal(9n);
    await dev(node, 'rate-limit', { requests: 1 });
    const res = await fetch(`${node.url}/wallet/getnowblock`, { method: 'POST' });
    expect(res.status).to.equal(429);
    expect((await fetch(`${node.url}/wallet/getnowblock`, { method: 'POST' })).status).to.equal(200);
  });

  it('produces blocks on its timer', async () => {
    await node.stop();
    node = new TronLocalNode({ blockTimeMs: 50, solidificationLag: 1 });
    await node.start();
    const startedAt = node.head.number;
    // No block is made by a call here: only the timer can move the head three blocks on.
    await eventually(() => node.head.number >= startedAt + 3, 15_000, 'three blocks from the timer');
  });
});
