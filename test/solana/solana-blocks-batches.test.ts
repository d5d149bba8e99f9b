import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { and, eq, sql } from 'drizzle-orm';
import type { ManualClock } from '../../core/platform/clock';
import type { ServiceContext } from '../../core/service/context';
import { applySolanaLocalState, SOLANA_LOCAL_CHAIN_ID } from '../../core/chains/solana/solana-local-state';
import { bindDepositReference } from '../../core/deposits/bindings';
import { runChainConfirmations, runChainScan } from '../../core/detection/monitor';
import { createOrder } from '../../core/orders/orders';
import { chainCheckpoints, chainHeadObservations, events, scannedBlocks, transfers } from '../../db/schema';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { solanaLocalStateOf } from '../../scripts/local-chain/solana/solana-local-chain';
import { startFaultyRpcProxy, type FaultyRpcProxy } from '../sim/rpc-proxy';
import { Rng } from '../sim/rng';
import { createTestOrg, testConfig, testContext } from '../helpers/harness';
import { seedPoolAddresses } from '../helpers/pool';
import { orderRow, orderTransfers } from '../helpers/evm';

const FINALIZATION_LAG = 4;

/**
 * `blocks` mode reads a range's blocks in JSON-RPC batches of getBlock. Between the service and
 * solana-local sits a provider that answers every batch's elements in reverse order (JSON-RPC lets
 * it answer in any order): a block must still be read as its own slot's, with its own hash and
 * time, so every payment of the range lands on the order or deposit reference its payer paid, at
 * the slot and signature of its transaction. Skipped slots sit between the payments, so the batches
 * hold slots that are not consecutive.
 */
describe('solana blocks mode: getBlock batches answered out of order (solana-local)', function () {
  this.timeout(120_000);
  let chain: RunningSolanaLocal;
  let proxy: FaultyRpcProxy;
  let client: SolanaLocalClient;
  let ctx: ServiceContext;
  let orgId: string;

  const settle = async () => {
    const scan = await runChainScan(ctx, SOLANA_LOCAL_CHAIN_ID);
    if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
    const conf = await runChainConfirmations(ctx, SOLANA_LOCAL_CHAIN_ID);
    if ('skipped' in conf) throw new Error(`confirmations skipped: ${conf.skipped}`);
  };
  const produce = (count: number) => client.dev('solanaLocal_produceSlot', { count });

  before(async () => {
    chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0, confirmationLag: 1, finalizationLag: FINALIZATION_LAG });
    // Only reordering: every batch of more than one request is answered back to front.
    proxy = await startFaultyRpcProxy(chain.url, new Rng(7), { delay: 0, error: 0, httpError: 0, timeout: 0, duplicate: 0, reorder: 1, stale: 0 });
    client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    ctx = testContext(testConfig({ SOLANA_SCAN_MODE_SOLANA_LOCAL: 'blocks' }));
    applySolanaLocalState(ctx.registry, { ...solanaLocalStateOf(chain), rpcUrl: proxy.url });
    await ctx.db.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, SOLANA_LOCAL_CHAIN_ID));
    orgId = (await createTestOrg('solana blocks batches org')).organizationId;
    await seedPoolAddresses(orgId, 'solana', 30);
    await produce(3);
    await settle(); // the checkpoint starts at the head
  });
  after(async () => {
    await proxy?.close();
    await chain?.stop();
  });

  it('credits each payment of a range to the order or deposit reference it was paid to, at its own slot', async () => {
    const stamp = Date.now();
    const orders = await Promise.all(
      Array.from({ length: 14 }, (_, i) =>
        createOrder(ctx, orgId, { orderReference: `sol-batch-${stamp}-${i}`, amount: `${i + 1}.25`, currency: i % 2 ? 'USDT' : 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID, metadata: {} }),
      ),
    );
    const bindings = await Promise.all(
      [0, 1, 2].map(async (i) => (await bindDepositReference(ctx, orgId, { depositReference: `sol-batch-user-${stamp}-${i}`, protocol: 'solana' })).binding),
    );
    const paidOrders: { id: string; signature: string; slot: number; amount: bigint }[] = [];
    const paidDeposits: { id: string; signature: string; slot: number; amount: bigint }[] = [];
    for (const [i, o] of orders.entries()) {
      const amount = BigInt(i + 1) * 1_000_000n + 250_000n;
      const paid = await client.pay(o.address, amount, o.currency as 'USDC' | 'USDT');
      paidOrders.push({ id: o.id, signature: paid.signature, slot: Number(paid.slot), amount });
      if (i % 3 === 0) await client.dev('solanaLocal_skipSlots', { count: 1 + (i % 4) });
      if (i % 5 === 0) {
        const b = bindings[i / 5];
        const deposit = 7_000_000n + BigInt(i);
        const dep = await client.pay(b.address, deposit, 'USDT');
        paidDeposits.push({ id: b.bindingId, signature: dep.signature, slot: Number(dep.slot), amount: deposit });
      }
      await produce(1 + (i % 2));
    }
    await produce(FINALIZATION_LAG);
    await settle();
    await settle();
    await produce(FINALIZATION_LAG);
    await settle();

    // The proxy did reverse multi-block batches: the range was read in batches, out of order.
    expect(proxy.counts.reorder).to.be.greaterThan(0);
    for (const p of paidOrders) {
      const rows = await orderTransfers(ctx, p.id);
      expect(rows.map((r) => ({ txHash: r.txHash, blockNumber: r.blockNumber, amount: r.amount })), `order ${p.id}`).to.deep.equal([{ txHash: p.signature, blockNumber: p.slot, amount: p.amount }]);
      expect(await orderRow(ctx, p.id)).to.include({ status: 'completed', amountReceived: p.amount });
    }
    for (const d of paidDeposits) {
      const rows = await ctx.db.select().from(transfers).where(eq(transfers.txHash, d.signature));
      expect(rows.map((r) => ({ depositBindingId: r.depositBindingId, orderId: r.orderId, blockNumber: r.blockNumber, amount: r.amount })), `deposit ${d.id}`).to.deep.equal([
        { depositBindingId: d.id, orderId: null, blockNumber: d.slot, amount: d.amount },
      ]);
      const confirmed = await ctx.db.select().from(events).where(and(eq(events.type, 'deposit.confirmed'), sql`${events.data}->>'txHash' = ${d.signature}`));
      expect(confirmed, `deposit ${d.id}`).to.have.length(1);
    }
    // Each transfer carries the block time and hash of its own slot, as the node answers them one by one.
    const all = [...paidOrders, ...paidDeposits];
    const stored = await ctx.db.select().from(transfers).where(sql`${transfers.txHash} in ${all.map((p) => p.signature)}`);
    for (const row of stored) {
      const block = (await client.rpc.getBlock(BigInt(row.blockNumber), { commitment: 'finalized', transactionDetails: 'none', rewards: false }).send())!;
      expect({ hash: row.blockHash, time: row.blockTimestamp.getTime() / 1000 }, `slot ${row.blockNumber}`).to.deep.equal({ hash: block.blockhash, time: Number(block.blockTime) });
    }
  });
});

/**
 * A provider that answers one element of a getBlock batch with an error for a slot that has a
 * block: once "skipped" (-32007, what a node behind on that slot may say) and once an internal error
 * (-32603, a provider fault). Neither may read as "no block here": the payment in that slot must
 * still be credited, on a later read of the range.
 */
describe('solana blocks mode: an error for one block of a getBlock batch (solana-local)', function () {
  this.timeout(120_000);
  let chain: RunningSolanaLocal;
  let client: SolanaLocalClient;
  let ctx: ServiceContext;
  let orgId: string;
  let server: http.Server;
  /** Slots whose next batched getBlock is answered with this error, once each. */
  const failOnce = new Map<number, { code: number; message: string }>();
  const injected: number[] = [];

  const settle = async () => {
    // A provider fault fails the run and backs the provider off for 0.5 s (on the context's clock):
    // the next run reads again.
    await runChainScan(ctx, SOLANA_LOCAL_CHAIN_ID).catch(() => null);
    await runChainConfirmations(ctx, SOLANA_LOCAL_CHAIN_ID).catch(() => null);
    (ctx.clock as ManualClock).advance(700);
  };
  const produce = (count: number) => client.dev('solanaLocal_produceSlot', { count });

  before(async () => {
    chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0, confirmationLag: 1, finalizationLag: FINALIZATION_LAG });
    server = http.createServer(async (req, res) => {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const upstream = await fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw });
      let text = await upstream.text();
      const body = JSON.parse(raw) as { id: unknown; method: string; params: unknown[] } | { id: unknown; method: string; params: unknown[] }[];
      if (Array.isArray(body)) {
        const answers = JSON.parse(text) as { id: unknown; result?: unknown; error?: unknown }[];
        for (const r of body) {
          const slot = Number(r.params[0]);
          const error = r.method === 'getBlock' ? failOnce.get(slot) : undefined;
          if (!error) continue;
          failOnce.delete(slot);
          injected.push(slot);
          const i = answers.findIndex((a) => a.id === r.id);
          answers[i] = { jsonrpc: '2.0', id: r.id, error } as (typeof answers)[number];
        }
        text = JSON.stringify(answers);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(text);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    ctx = testContext(testConfig({ SOLANA_SCAN_MODE_SOLANA_LOCAL: 'blocks' }));
    applySolanaLocalState(ctx.registry, { ...solanaLocalStateOf(chain), rpcUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
    await ctx.db.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, SOLANA_LOCAL_CHAIN_ID));
    orgId = (await createTestOrg('solana batch element errors org')).organizationId;
    await seedPoolAddresses(orgId, 'solana', 10);
    await produce(3);
    await settle();
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await chain?.stop();
  });

  it('a block answered as skipped or with an internal error inside a batch is read again, its payment credited', async () => {
    const stamp = Date.now();
    const orders = await Promise.all(
      [0, 1, 2].map((i) => createOrder(ctx, orgId, { orderReference: `sol-batch-err-${stamp}-${i}`, amount: '2', currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID, metadata: {} })),
    );
    const paid: { id: string; slot: number; signature: string }[] = [];
    for (const o of orders) {
      const p = await client.pay(o.address, 2_000_000n, 'USDC');
      paid.push({ id: o.id, slot: Number(p.slot), signature: p.signature });
      await produce(12); // each payment in another batch of 10
    }
    failOnce.set(paid[0].slot, { code: -32007, message: `Slot ${paid[0].slot} was skipped, or missing due to ledger jump to recent snapshot` });
    failOnce.set(paid[2].slot, { code: -32603, message: 'Internal error' });
    await produce(FINALIZATION_LAG);
    for (let i = 0; i < 4; i++) await settle();
    await produce(FINALIZATION_LAG);
    for (let i = 0; i < 2; i++) await settle();

    expect(injected.sort()).to.deep.equal([paid[0].slot, paid[2].slot].sort());
    for (const p of paid) {
      const rows = await orderTransfers(ctx, p.id);
      expect(rows.map((r) => ({ txHash: r.txHash, blockNumber: r.blockNumber })), `order ${p.id}`).to.deep.equal([{ txHash: p.signature, blockNumber: p.slot }]);
      expect(await orderRow(ctx, p.id)).to.include({ status: 'completed', amountReceived: 2_000_000n });
    }
  });
});

/**
 * A provider that refuses JSON-RPC batches (some plans of hosted providers do) answers a batch
 * with one error object. The scan then fails with a message naming the setting, and with
 * SOLANA_BLOCKS_PER_REQUEST_<CHAIN>=1 blocks mode reads one block per plain request and credits
 * the payment as it does with batches.
 */
describe('solana blocks mode: a provider that refuses JSON-RPC batches (solana-local)', function () {
  this.timeout(120_000);
  let chain: RunningSolanaLocal;
  let refusing: http.Server;
  let refusingUrl: string;
  let client: SolanaLocalClient;
  let orgId: string;
  let batchesRefused = 0;

  const contextThrough = async (env: Record<string, string>) => {
    const ctx = testContext(testConfig({ SOLANA_SCAN_MODE_SOLANA_LOCAL: 'blocks', ...env }));
    applySolanaLocalState(ctx.registry, { ...solanaLocalStateOf(chain), rpcUrl: refusingUrl });
    return ctx;
  };

  before(async () => {
    chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: 0, confirmationLag: 1, finalizationLag: FINALIZATION_LAG });
    refusing = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const body = Buffer.concat(chunks).toString();
        res.setHeader('content-type', 'application/json');
        if (body.trimStart().startsWith('[')) {
          batchesRefused++;
          res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Batch requests are not supported on this plan' } }));
          return;
        }
        const upstream = await fetch(chain.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        res.statusCode = upstream.status;
        res.end(await upstream.text());
      });
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    refusingUrl = `http://127.0.0.1:${(refusing.address() as AddressInfo).port}`;
    client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    const ctx = await contextThrough({});
    await ctx.db.delete(chainCheckpoints).where(eq(chainCheckpoints.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(scannedBlocks).where(eq(scannedBlocks.chainId, SOLANA_LOCAL_CHAIN_ID));
    await ctx.db.delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, SOLANA_LOCAL_CHAIN_ID));
    orgId = (await createTestOrg('solana refused batches org')).organizationId;
    await seedPoolAddresses(orgId, 'solana', 5);
    await client.dev('solanaLocal_produceSlot', { count: 3 });
    await runChainScan(ctx, SOLANA_LOCAL_CHAIN_ID); // the checkpoint starts at the head
  });
  after(async () => {
    await new Promise<void>((resolve) => (refusing ? refusing.close(() => resolve()) : resolve()));
    await chain?.stop();
  });

  it('fails the range naming SOLANA_BLOCKS_PER_REQUEST_<CHAIN>, then with it set to 1 credits the payment', async () => {
    const ctx = await contextThrough({});
    const order = await createOrder(ctx, orgId, { orderReference: `sol-refused-${Date.now()}`, amount: '2.5', currency: 'USDC', chainId: SOLANA_LOCAL_CHAIN_ID, metadata: {} });
    const paid = await client.pay(order.address, 2_500_000n, 'USDC');
    await client.dev('solanaLocal_produceSlot', { count: FINALIZATION_LAG + 1 });

    let failure: unknown = null;
    try {
      await runChainScan(ctx, SOLANA_LOCAL_CHAIN_ID);
    } catch (err) {
      failure = err;
    }
    expect(batchesRefused).to.be.greaterThan(0);
    expect(failure, 'the scan through a provider that refuses batches').to.be.instanceOf(Error);
    expect((failure as Error).message).to.match(/SOLANA_BLOCKS_PER_REQUEST_<CHAIN>=1/);
    expect(await orderTransfers(ctx, order.id)).to.have.length(0);

    const single = await contextThrough({ SOLANA_BLOCKS_PER_REQUEST_SOLANA_LOCAL: '1' });
    const refusedBefore = batchesRefused;
    for (let i = 0; i < 3; i++) {
      const scan = await runChainScan(single, SOLANA_LOCAL_CHAIN_ID);
      if ('skipped' in scan) throw new Error(`scan skipped: ${scan.skipped}`);
      await runChainConfirmations(single, SOLANA_LOCAL_CHAIN_ID);
      await client.dev('solanaLocal_produceSlot', { count: FINALIZATION_LAG });
    }
    expect(batchesRefused).to.equal(refusedBefore);
    const rows = await orderTransfers(single, order.id);
    expect(rows.map((r) => ({ txHash: r.txHash, blockNumber: r.blockNumber, amount: r.amount }))).to.deep.equal([{ txHash: paid.signature, blockNumber: Number(paid.slot), amount: 2_500_000n }]);
    expect(await orderRow(single, order.id)).to.include({ status: 'completed', amountReceived: 2_500_000n });
  });

  it('refuses a setting outside 1-100 at start-up with a clear message', () => {
    for (const bad of ['0', '101', 'ten']) {
      expect(() => testConfig({ SOLANA_BLOCKS_PER_REQUEST_SOLANA_LOCAL: bad }), bad).to.throw(/SOLANA_BLOCKS_PER_REQUEST_SOLANA_LOCAL must be a whole number from 1 to 100/);
    }
  });
});
