import { expect } from 'chai';
import { and, eq, inArray, sql } from 'drizzle-orm';
import { runChainScan } from '../../core/detection/monitor';
import { currentRangeSize } from '../../core/detection/scan';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { getCheckpoint, setCheckpoint } from '../../core/chains/checkpoints';
import { chainCheckpoints, scannedBlocks, transfers } from '../../db/schema';
import { createTestOrg, testContext } from '../helpers/harness';
import { resetCheckpointToHead, startTestChain, useTestChain, type TestChain } from '../helpers/anvil';
import { randomEvmAddress, seedPoolAddresses } from '../helpers/pool';
import type { ServiceContext } from '../../core/service/context';
import { eventually } from '../helpers/wait';

describe('evm scanner on a local chain', function () {
  this.timeout(60_000);
  let chain: TestChain;
  let ctx: ServiceContext;
  let orgId: string;
  let pool: string[];

  before(async () => {
    chain = await startTestChain();
    ctx = testContext();
    useTestChain(ctx.registry, chain);
    orgId = (await createTestOrg('scanner org')).organizationId;
    pool = await seedPoolAddresses(orgId, 'evm', 5);
    await resetCheckpointToHead(ctx, chain);
  });
  after(async () => chain?.stop());

  const transfersTo = (address: string) => ctx.db.select().from(transfers).where(eq(transfers.toAddress, address));

  it('records a transfer into a pool address nobody holds, unattributed, and ignores other addresses', async () => {
    const outsider = randomEvmAddress();
    await chain.sendMint(outsider, 'USDC', 5_000_000n);
    const paid = await chain.pay(pool[0], 'USDT', 12_500_000n);
    const run = await runChainScan(ctx, LOCAL_CHAIN_ID);
    expect(run).to.include({ lastStatus: 'idle' });
    const rows = await transfersTo(pool[0]);
    expect(rows).to.have.length(1);
    const [t] = rows;
    expect(t).to.include({ chainId: LOCAL_CHAIN_ID, protocol: 'evm', currency: 'USDT', txHash: paid.txHash, blockNumber: paid.blockNumber, blockHash: paid.blockHash, status: 'pending', organizationId: orgId, orderId: null, depositBindingId: null, counted: false, credited: false });
    expect(t.amount).to.equal(12_500_000n);
    expect(t.tokenAddress).to.equal(chain.tokens.USDT);
    expect(await transfersTo(outsider)).to.have.length(0);
    const cp = await getCheckpoint(ctx.db, LOCAL_CHAIN_ID);
    expect(cp!.blockNumber).to.equal(await chain.head());
    const [remembered] = await ctx.db.select().from(scannedBlocks).where(and(eq(scannedBlocks.chainId, LOCAL_CHAIN_ID), eq(scannedBlocks.blockNumber, paid.blockNumber)));
    expect(remembered.blockHash).to.equal(paid.blockHash);
  });

  it('rescanning the same blocks records nothing twice', async () => {
    const paid = await chain.pay(pool[1], 'DAI', 10n ** 18n + 5n);
    await runChainScan(ctx, LOCAL_CHAIN_ID);
    // Move the checkpoint back below the payment and scan again.
    const before = await chain.provider.send('eth_getBlockByNumber', [`0x${(paid.blockNumber - 1).toString(16)}`, false]);
    await setCheckpoint(ctx.db, { chainId: LOCAL_CHAIN_ID, blockNumber: paid.blockNumber - 1, blockHash: before.hash, blockTimestamp: new Date(Number(before.timestamp) * 1000) });
    await runChainScan(ctx, LOCAL_CHAIN_ID);
    const rows = await transfersTo(pool[1]);
    expect(rows).to.have.length(1);
    expect(rows[0].amount).to.equal(10n ** 18n + 5n);
  });

  it('catches up over many blocks in adaptive ranges, skipping none', async () => {
    const start = await chain.head();
    await chain.mine(700);
    const mid = await chain.pay(pool[2], 'USDC', 1n);
    await chain.mine(900);
    const late = await chain.pay(pool[2], 'USDC', 2n);
    const run = await runChainScan(ctx, LOCAL_CHAIN_ID);
    expect(run).to.have.property('ranges').at.least(1);
    const rows = await transfersTo(pool[2]);
    expect(rows.map((r) => r.txHash).sort()).to.deep.equal([mid.txHash, late.txHash].sort());
    expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber).to.equal(await chain.head());
    expect(await chain.head()).to.be.greaterThan(start + 1600);
    expect(currentRangeSize(ctx, LOCAL_CHAIN_ID)).to.be.greaterThan(500);
  });

  it('a reorg that removes a pending transfer drops it', async () => {
    const paid = await chain.pay(pool[3], 'USDT', 7_000_000n);
    await chain.mine(1);
    await runChainScan(ctx, LOCAL_CHAIN_ID);
    expect(await transfersTo(pool[3])).to.have.length(1);
    // Replace the last 2 blocks (the payment's and the one above) with empty ones, same height.
    await chain.reorg(2);
    const step = await runChainScan(ctx, LOCAL_CHAIN_ID);
    expect(step).to.have.property('lastStatus', 'idle');
    const rows = await transfersTo(pool[3]);
    expect(rows).to.have.length(1);
    expect(rows[0]).to.include({ status: 'dropped', txHash: paid.txHash, credited: false });
    expect(rows[0].droppedAt).to.be.instanceOf(Date);
    expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockHash).to.equal((await chain.provider.send('eth_getBlockByNumber', ['latest', false])).hash);
  });

  it('a reorg that moves a pending transfer to another block keeps its one row, pending in its new block', async () => {
    const target = (await seedPoolAddresses(orgId, 'evm', 1))[0];
    const paid = await chain.pay(target, 'USDC', 3_000_000n);
    const raw = await chain.rpc<string>('eth_getRawTransactionByHash', [paid.txHash]);
    await chain.mine(2);
    await runChainScan(ctx, LOCAL_CHAIN_ID);
    // Replace the last 3 blocks; the payment (its mint is lost, so re-include both) lands one block later.
    const rawMint = await chain.rpc<string>('eth_getRawTransactionByHash', [(await chain.provider.getBlock(paid.blockNumber, true))!.transactions[0]]);
    await chain.reorg(3, [[rawMint, 1], [raw, 1]]);
    await runChainScan(ctx, LOCAL_CHAIN_ID);
    const rows = await transfersTo(target);
    // One row per transfer identity: dropped by the reorg, then pending again in its new block.
    const live = rows.filter((r) => r.status !== 'dropped');
    expect(rows).to.have.length(1);
    expect(live).to.have.length(1);
    const receipt = await chain.provider.getTransactionReceipt(paid.txHash);
    expect(receipt!.blockNumber).to.equal(paid.blockNumber + 1);
    expect(live[0]).to.include({ txHash: paid.txHash, blockNumber: receipt!.blockNumber, blockHash: receipt!.blockHash, status: 'pending' });
  });

  it('a chain that went back below the checkpoint (node behind, restarted from older state) is waited for, then reconciled', async () => {
    const target = (await seedPoolAddresses(orgId, 'evm', 1))[0];
    const paid = await chain.pay(target, 'USDT', 5_000_000n);
    await chain.mine(2);
    await runChainScan(ctx, LOCAL_CHAIN_ID);
    const cp = (await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!;
    // The node loses its last 4 blocks (the payment's among them).
    await chain.rpc('anvil_rollback', [4]);
    await chain.rpc('evm_setTime', [Math.floor(Date.now() / 1000)]);
    expect(await chain.head()).to.equal(cp.blockNumber - 4);
    expect(await runChainScan(ctx, LOCAL_CHAIN_ID)).to.include({ lastStatus: 'behind' });
    expect((await transfersTo(target))[0].status).to.equal('pending');
    expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber).to.equal(cp.blockNumber);
    // The chain grows past the old checkpoint on another branch: the lost payment is dropped.
    await chain.mine(6);
    await runChainScan(ctx, LOCAL_CHAIN_ID);
    const rows = await transfersTo(target);
    const onChain = await chain.provider.getTransactionReceipt(paid.txHash);
    if (onChain) {
      // anvil put the transaction back in its pool and mined it again: recorded once, in its new block.
      expect(rows.filter((r) => r.status !== 'dropped').map((r) => r.blockHash)).to.deep.equal([onChain.blockHash]);
    } else {
      expect(rows.map((r) => r.status)).to.deep.equal(['dropped']);
    }
    expect(rows.filter((r) => r.status === 'dropped')).to.have.length(1);
    expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber).to.equal(await chain.head());
  });

  it('two scanners racing on the same chain record every transfer once', async () => {
    const other = testContext();
    useTestChain(other.registry, chain);
    const hashes: string[] = [];
    for (let i = 0; i < 5; i++) hashes.push(await chain.sendMint(pool[4], 'USDT', BigInt(i + 1)));
    await chain.mine(1);
    await chain.mine(3);
    await Promise.all([runChainScan(ctx, LOCAL_CHAIN_ID), runChainScan(other, LOCAL_CHAIN_ID), runChainScan(ctx, LOCAL_CHAIN_ID), runChainScan(other, LOCAL_CHAIN_ID)]);
    const rows = await ctx.db.select().from(transfers).where(inArray(transfers.txHash, hashes));
    expect(rows).to.have.length(5);
    expect(new Set(rows.map((r) => r.txHash)).size).to.equal(5);
  });

  it('a scan whose checkpoint moved while it read the chain writes nothing (compare-and-set, no scan lock)', async () => {
    const paid = await chain.pay(pool[2], 'USDC', 3_000_000n);
    const head = await chain.provider.send('eth_getBlockByNumber', ['latest', false]);
    // Another worker's short write transaction: it holds the checkpoint row and moves it past the payment.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let locked!: (pid: number) => void;
    const isLocked = new Promise<number>((r) => (locked = r));
    const other = ctx.db.transaction(async (tx) => {
      await tx.select().from(chainCheckpoints).where(eq(chainCheckpoints.chainId, LOCAL_CHAIN_ID)).for('update');
      await tx
        .update(chainCheckpoints)
        .set({ blockNumber: Number(head.number), blockHash: head.hash, blockTimestamp: new Date(Number(head.timestamp) * 1000) })
        .where(eq(chainCheckpoints.chainId, LOCAL_CHAIN_ID));
      const [{ pid }] = (await tx.execute(sql`select pg_backend_pid() as pid`)) as unknown as { pid: number }[];
      locked(pid);
      await held;
    });
    const holder = await isLocked;
    const scanning = runChainScan(ctx, LOCAL_CHAIN_ID);
    // The scan has read the old checkpoint once one of its statements waits for the held row
    // (recording the head seen, or claiming the checkpoint): only then does the holder commit.
    await eventually(
      async () => ((await ctx.db.execute(sql`select pid from pg_stat_activity where ${holder}::int = any(pg_blocking_pids(pid))`)) as unknown as unknown[]).length > 0,
      15_000,
      'the scan to wait for the checkpoint row held by the other transaction',
    );
    release();
    await other;
    expect(await scanning).to.include({ lastStatus: 'conflict', ranges: 0 });
    expect(await ctx.db.select().from(transfers).where(eq(transfers.txHash, paid.txHash))).to.have.length(0);
    expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber).to.equal(Number(head.number));
  });

  it('refuses to scan a chain whose token decimals do not match the registry', async () => {
    const wrong = testContext();
    useTestChain(wrong.registry, chain);
    wrong.registry.setTokenAddress(LOCAL_CHAIN_ID, 'DAI', chain.tokens.USDC, 18); // USDC has 6 decimals
    const result = await runChainScan(wrong, LOCAL_CHAIN_ID);
    expect(result).to.deep.equal({ skipped: 'token decimals mismatch' });
  });
});
