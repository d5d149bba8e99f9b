import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import type { ServiceContext } from '../../core/service/context';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID } from '../../core/chains/solana/solana-local-state';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { createOrder } from '../../core/orders/orders';
import { chainCheckpoints, chainHeadObservations, scannedBlocks } from '../../db/schema';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { solanaLocalStateOf } from '../../scripts/local-chain/solana/solana-local-chain';
import { createTestOrg, testConfig, testContext } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, orderTransfers } from '../helpers/evm';

const FINALIZATION_LAG = 4;

/**
 * Simulation 70001 (heavy faults) missed a solana-local payment: a fork dropped the newest blocks
 * (not the payment's) between the scan's head call and its getBlocks call. getBlocks lists slots up
 * to the provider's confirmed slot only, which the fork had moved back below the range's end (the
 * head the scan had just read): the list stopped before the payment's slot. A block came next, the
 * confirmed slot was back on the range's end with the same hash, so every later check passed and
 * the checkpoint moved past a slot whose block was never read. A provider behind a load balancer
 * lagging by a few slots gives the same short list on a real cluster.
 *
 * Here, deterministically: the payment is in the confirmed slot the scan reads as its head; on the
 * scan's first getBlocks the proxy forks away the one (empty) block above it before forwarding, and
 * produces a new block once the answer is back.
 */
describe('solana blocks mode: a getBlocks list that stops short of the range end (solana-local)', function () {
  this.timeout(120_000);
  let chain: RunningSolanaLocal;
  let client: SolanaLocalClient;
  let ctx: ServiceContext;
  let orgId: string;
  let server: http.Server;
  let armed = false;
  const shortLists: { asked: [number, number]; listed: number[] }[] = [];

  const settle = async () => {
    const scan = await runChainScan(ctx, SOLANA_LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, SOLANA_LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  };
  const produce = (count: number) => client.dev('solanaLocal_produceSlot', { count });

  before(async () => {
    chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0, confirmationLag: 1, finalizationLag: FINALIZATION_LAG });
    server = http.createServer(async (req, res) => {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const body = JSON.parse(raw) as { method?: string; params?: unknown[] };
      const hook = !Array.isArray(body) && body.method === 'getBlocks' && armed;
      if (hook) {
        armed = false;
        // The cluster settles on another fork: the newest block (empty, above the scan's head) is dropped.
        await client.dev('solanaLocal_fork', { blocks: 1, reinclude: false });
      }
      const upstream = await fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw });
      const text = await upstream.text();
      if (hook) {
        const listed = ((JSON.parse(text) as { result?: number[] }).result ?? []).map(Number);
        shortLists.push({ asked: [Number(body.params![0]), Number(body.params![1])], listed });
        // The next leader's block: the confirmed slot is back where the scan's head was.
        await produce(1);
      }
      res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(text);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    ctx = testContext(testConfig({ SOLANA_SCAN_MODE_SOLANA_LOCAL: 'blocks' }));
    applySolanaLocalState(ctx.registry, { ...solanaLocalStateOf(chain), rpcUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    await ctx.db.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, SOLANA_LOCAL_CHAIN_ID));
    orgId = (await createTestOrg('solana getBlocks behind org')).organizationId;
    await seedPoolAddresses(orgId, 'solana', 5);
    await produce(3);
    await settle(); // the checkpoint starts at the head
    await settle();
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await chain?.stop();
  });

  it('reads the range again instead of moving the checkpoint past slots the list left out', async () => {
    const order = await createOrder(ctx, orgId, { orderReference: `sol-getblocks-behind-${Date.now()}`, amount: '3.5', currency: 'USDT', chainId: SOLANA_LOCAL_CHAIN_ID, metadata: {} });
    // Confirmed: the payment's slot is the confirmed head, one (empty) block above it.
    const paid = await client.pay(order.address, 3_500_000n, 'USDT');
    const slot = Number(paid.slot);
    armed = true;
    await settle();
    expect(shortLists, 'the fork happened inside the scan, under its getBlocks').to.have.length(1);
    expect(shortLists[0].asked[1]).to.equal(slot);
    expect(shortLists[0].listed, 'getBlocks answered a list that stops before the range end').to.not.include(slot);
    // The payment's block is canonical: later scans and confirmations must credit it.
    await produce(FINALIZATION_LAG + 2);
    await settle();
    await settle();
    expect(chain.node.blockAt(slot)?.txs.map((t) => t.signature)).to.include(paid.signature);
    const rows = await orderTransfers(ctx, order.id);
    expect(rows.map((r) => ({ txHash: r.txHash, blockNumber: r.blockNumber })), 'the payment is recorded at its slot').to.deep.equal([{ txHash: paid.signature, blockNumber: slot }]);
    expect(await orderRow(ctx, order.id)).to.include({ status: 'completed', amountReceived: 3_500_000n });
  });
});
