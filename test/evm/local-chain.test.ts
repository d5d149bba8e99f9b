import { expect } from 'chai';
import { and, eq } from 'drizzle-orm';
import { HDNodeWallet, JsonRpcProvider, Network } from 'ethers';
import { startAnvil, type RunningAnvil } from '../../scripts/local-chain/anvil';
import { seedLocalDevPool, upgradeLocalDevPools } from '../../scripts/local-chain/dev-pool';
import { tronAddressFromEvm } from '../../core/chains/tron/tron-address';
import { checkSolanaAddress } from '../../core/chains/solana/solana-address';
import { LOCAL_CHAIN_ID, LOCAL_CHAIN_STATE_KEY, loadLocalChainState, type LocalChainState } from '../../core/chains/evm/local-chain-state';
import { prepareLocalChain } from '../../scripts/local-chain/local-chain';
import { getCheckpoint } from '../../core/chains/checkpoints';
import { getServiceState, setServiceState } from '../../core/platform/service-state';
import { poolAddresses, transfers } from '../../db/schema';
import { createTestOrg, testContext } from '../helpers/harness';
import { insertTestTransfer } from '../helpers/transfers';
import { randomEvmAddress } from '../helpers/pool';

describe('local chain preparation (anvil)', function () {
  this.timeout(60_000);
  const nodes: RunningAnvil[] = [];
  after(async () => {
    for (const n of nodes) await n.stop();
  });

  it('deploys the test tokens once per chain, recognised by its deployment block (not block 0); a new chain redeploys, resets the checkpoint and drops what was pending and is not on it', async () => {
    const ctx = testContext();
    const first = await startAnvil({ port: 0 });
    nodes.push(first);
    const a = await prepareLocalChain(ctx, first.url);
    expect(a.deployed).to.equal(true);
    expect(ctx.registry.get(LOCAL_CHAIN_ID)!.tokens.DAI).to.include({ address: a.state.tokens.DAI, decimals: 18 });
    expect(ctx.registry.get(LOCAL_CHAIN_ID)!.rpcUrls).to.deep.equal([first.url]);
    const cp = await getCheckpoint(ctx.db, LOCAL_CHAIN_ID);
    expect(cp!.blockNumber).to.equal(a.state.deployBlock);

    const again = await prepareLocalChain(ctx, first.url);
    expect(again.deployed).to.equal(false);
    expect(again.state.genesisHash).to.equal(a.state.genesisHash);

    // Another process (API, workers) loads the same facts from the database.
    const other = testContext();
    const loaded = await loadLocalChainState(other);
    expect(loaded!.tokens).to.deep.equal(a.state.tokens);
    expect(other.registry.requireToken(other.registry.get(LOCAL_CHAIN_ID)!, 'USDC').address).to.equal(a.state.tokens.USDC);

    // A restart where anvil gave block 0 a new hash (it does when it reloads a short chain's state):
    // the deployment block still has its hash, so it is the same chain: nothing redeployed or dropped.
    const pendingHere = await insertTestTransfer({ chainId: LOCAL_CHAIN_ID, currency: 'USDT', amount: 1n, toAddress: randomEvmAddress(), status: 'pending' });
    await setServiceState(ctx.db, LOCAL_CHAIN_STATE_KEY, { ...a.state, genesisHash: `0x${'ab'.repeat(32)}` });
    const restarted = await prepareLocalChain(ctx, first.url);
    expect(restarted.deployed).to.equal(false);
    expect(restarted.state.tokens).to.deep.equal(a.state.tokens);
    expect((await ctx.db.select().from(transfers).where(eq(transfers.id, pendingHere.id)))[0].status).to.equal('pending');
    await ctx.db.update(transfers).set({ status: 'dropped' }).where(eq(transfers.id, pendingHere.id));

    const stale = await insertTestTransfer({ chainId: LOCAL_CHAIN_ID, currency: 'USDT', amount: 1n, toAddress: randomEvmAddress(), status: 'pending' });
    // Another genesis timestamp, hence another genesis hash: a chain that was reset.
    const second = await startAnvil({ port: 0, genesisTimestamp: Math.floor(Date.now() / 1000) - 3600 });
    nodes.push(second);
    // A pending transfer whose transaction is on the new chain is never dropped.
    const secondProvider = new JsonRpcProvider(second.url, Network.from(31337), { staticNetwork: Network.from(31337), cacheTimeout: -1, batchMaxCount: 1 });
    const [sender, receiver] = await secondProvider.send('eth_accounts', []);
    const onChainTx: string = await secondProvider.send('eth_sendTransaction', [{ from: sender, to: receiver, value: '0x1' }]);
    secondProvider.destroy();
    const kept = await insertTestTransfer({ chainId: LOCAL_CHAIN_ID, currency: 'USDT', amount: 1n, toAddress: randomEvmAddress(), status: 'pending', txHash: onChainTx });
    const b = await prepareLocalChain(ctx, second.url);
    expect(b.deployed).to.equal(true);
    expect(b.state.genesisHash).to.not.equal(a.state.genesisHash);
    const stored = await getServiceState<LocalChainState>(ctx.db, LOCAL_CHAIN_STATE_KEY);
    expect(stored!.genesisHash).to.equal(b.state.genesisHash);
    expect(stored!.rpcUrl).to.equal(second.url);
    const [row] = await ctx.db.select().from(transfers).where(eq(transfers.id, stale.id));
    expect(row.status).to.equal('dropped');
    const [keptRow] = await ctx.db.select().from(transfers).where(eq(transfers.id, kept.id));
    expect(keptRow.status).to.equal('pending');
    await ctx.db.update(transfers).set({ status: 'dropped' }).where(eq(transfers.id, kept.id));
    expect((await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockHash).to.not.equal(cp!.blockHash);
  });

  it('gives the local organization 100 watch-only EVM and 100 Tron addresses derived from a development xpub and 100 Solana addresses, once', async () => {
    const ctx = testContext();
    const { organizationId } = await createTestOrg('local dev org');
    const first = await seedLocalDevPool(ctx.db, organizationId);
    expect(first.added).to.equal(300);
    expect(first.xpub).to.match(/^xpub/);
    const node = HDNodeWallet.fromExtendedKey(first.xpub);
    expect(node).to.not.have.property('privateKey');
    const rows = await ctx.db.select().from(poolAddresses).where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, 'evm')));
    expect(rows).to.have.length(100);
    const byIndex = new Map(rows.map((r) => [r.derivationIndex, r.address]));
    expect(byIndex.get(0)).to.equal(node.deriveChild(0).deriveChild(0).address);
    expect(byIndex.get(99)).to.equal(node.deriveChild(0).deriveChild(99).address);
    const tron = await ctx.db.select().from(poolAddresses).where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, 'tron')));
    expect(tron).to.have.length(100);
    expect(tron.find((r) => r.derivationIndex === 0)!.address).to.equal(tronAddressFromEvm(node.deriveChild(0).deriveChild(0).address));
    const solana = await ctx.db.select().from(poolAddresses).where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, 'solana')));
    expect(solana).to.have.length(100);
    expect(solana.every((r) => checkSolanaAddress(r.address).ok && r.mode === 'self_managed' && r.masterPublicKey === null)).to.equal(true);
    expect((await seedLocalDevPool(ctx.db, organizationId)).added).to.equal(0);

    // A local database seeded before Tron existed gets its Tron addresses on the next start, from the same xpub.
    await ctx.db.delete(poolAddresses).where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, 'tron')));
    expect(await upgradeLocalDevPools(ctx.db)).to.equal(100);
    const tronAgain = await ctx.db.select().from(poolAddresses).where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, 'tron')));
    expect(tronAgain.find((r) => r.derivationIndex === 7)!.address).to.equal(tronAddressFromEvm(node.deriveChild(0).deriveChild(7).address));
    // And one seeded before Solana gets 100 Solana addresses.
    await ctx.db.delete(poolAddresses).where(and(eq(poolAddresses.organizationId, organizationId), eq(poolAddresses.protocol, 'solana')));
    expect(await upgradeLocalDevPools(ctx.db)).to.equal(100);
  });

});
