import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { address, createSolanaRpc, generateKeyPairSigner, getBase58Decoder, getBase64Encoder, getTransactionDecoder, type Signature } from '@solana/kit';
import { getTransferCheckedInstruction } from '@solana-program/token';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { isSolanaAddress, paySolana, SolanaPayError } from '../../scripts/local-chain/solana/pay-solana';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { readSolanaLocalInfo, signedWire } from '../../scripts/local-chain/solana/wallet';
import { eventually } from '../helpers/wait';

const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
const bigintFree = (v: unknown) => JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x)));

/** The JSON-RPC error code of a failed kit call. */
async function rpcErrorOf(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
  } catch (err) {
    const e = err as { context?: { __code?: number; __serverMessage?: string }; message: string };
    return { code: e.context?.__code ?? NaN, message: e.context?.__serverMessage ?? e.message };
  }
  throw new Error('expected the call to fail');
}

/** A JSON-RPC call with the answer as sent (error data included). */
async function rawRpc(url: string, method: string, params: unknown[]): Promise<{ result?: unknown; error: { code: number; message: string; data: { err: unknown } } }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return res.json() as never;
}

const bs58 = (bytes: Uint8Array): string => getBase58Decoder().decode(bytes);

async function newOwner(): Promise<string> {
  return (await generateKeyPairSigner()).address;
}

describe('solana-local: the local Solana chain', function () {
  this.timeout(60_000);
  const running: RunningSolanaLocal[] = [];
  const dirs: string[] = [];
  async function start(options: Partial<Parameters<typeof startSolanaLocal>[0]> = {}) {
    const chain = await startSolanaLocal({ dataDir: null, slotMs: 0, finalizationLag: 3, ...options });
    running.push(chain);
    return { chain, client: new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: (options.slotMs ?? 0) === 0 }) };
  }
  function tempDir() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'solana-local-'));
    dirs.push(dir);
    return dir;
  }
  afterEach(async () => {
    for (const c of running.splice(0)) await c.stop();
  });
  after(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('produces a slot every slotMs and answers heads by commitment (processed, confirmed one block behind, finalized the lag behind)', async () => {
    const { chain } = await start({ slotMs: 40, finalizationLag: 4 });
    const rpc = createSolanaRpc(chain.url);
    const first = await rpc.getSlot({ commitment: 'processed' }).send();
    // Only the timer can move the slot on: nothing here produces one.
    await eventually(async () => (await rpc.getSlot({ commitment: 'processed' }).send()) >= first + 6n, 15_000, 'six slots from the timer');
    chain.node.setSlotMs(0);
    const processed = await rpc.getSlot({ commitment: 'processed' }).send();
    expect(await rpc.getSlot({ commitment: 'confirmed' }).send()).to.equal(processed - 1n);
    expect(await rpc.getSlot({ commitment: 'finalized' }).send()).to.equal(processed - 4n);
    expect(await rpc.getSlot().send()).to.equal(processed - 1n); // kit asks for confirmed by default
    const height = await rpc.getBlockHeight({ commitment: 'processed' }).send();
    expect(height).to.equal(processed); // no slot skipped yet: one block per slot since slot 0
    const { context, value } = await rpc.getLatestBlockhash({ commitment: 'processed' }).send();
    expect(context.slot).to.equal(processed);
    expect(value.lastValidBlockHeight).to.equal(height + 150n);
    expect((await rpc.isBlockhashValid(value.blockhash, { commitment: 'processed' }).send()).value).to.equal(true);
    expect((await rpc.isBlockhashValid('11111111111111111111111111111111' as never, { commitment: 'processed' }).send()).value).to.equal(false);
    expect(await rpc.getGenesisHash().send()).to.equal(chain.info.genesisHash);
    expect(await rpc.getHealth().send()).to.equal('ok');
    expect(Object.keys(await rpc.getVersion().send()).sort()).to.deep.equal(['feature-set', 'solana-core']);
    expect(await rpc.getFirstAvailableBlock().send()).to.equal(0n);
    expect(await rpc.getMinimumBalanceForRentExemption(165n).send()).to.equal(2_039_280n);
    const block = await rpc.getBlock(processed - 1n, { commitment: 'confirmed', transactionDetails: 'none', rewards: false }).send();
    expect(block!.parentSlot).to.equal(processed - 2n);
    expect(block!.blockHeight).to.equal(processed - 1n);
  });

  it('records a payment as a validator does: pre/post token balances by owner, mint and program, the associated account created in the same transaction, in getSignaturesForAddress of the token account', async () => {
    const { chain, client } = await start();
    const rpc = client.rpc;
    const owner = await newOwner();
    const paid = await client.pay(owner, 1_500_000n, 'USDC');
    expect(paid.createdTokenAccount).to.equal(true);
    expect(paid.err).to.equal(null);
    const block = bigintFree(await rpc.getBlock(BigInt(paid.slot!), { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }).send());
    const entry = block.transactions.find((t: { transaction: { signatures: string[] } }) => t.transaction.signatures[0] === paid.signature);
    expect(entry.version).to.equal(0);
    expect(entry.meta.err).to.equal(null);
    expect(entry.meta.status).to.deep.equal({ Ok: null });
    const keys: string[] = entry.transaction.message.accountKeys;
    const ataIndex = keys.indexOf(paid.tokenAccount);
    expect(ataIndex).to.be.greaterThan(0);
    // Created in this transaction: no pre entry, a post entry with the owner's balance.
    expect(entry.meta.preTokenBalances.find((b: { accountIndex: number }) => b.accountIndex === ataIndex)).to.equal(undefined);
    expect(entry.meta.postTokenBalances.find((b: { accountIndex: number }) => b.accountIndex === ataIndex)).to.deep.equal({
      accountIndex: ataIndex,
      mint: chain.info.mints.USDC,
      owner,
      programId: TOKEN_PROGRAM,
      uiTokenAmount: { amount: '1500000', decimals: 6, uiAmount: 1.5, uiAmountString: '1.5' },
    });
    // The payer's account: pre and post both present, down by the amount.
    const payerAta = await client.ata(chain.info.payer, chain.info.mints.USDC);
    const payerIndex = keys.indexOf(payerAta);
    const pre = entry.meta.preTokenBalances.find((b: { accountIndex: number }) => b.accountIndex === payerIndex);
    const post = entry.meta.postTokenBalances.find((b: { accountIndex: number }) => b.accountIndex === payerIndex);
    expect(BigInt(pre.uiTokenAmount.amount) - BigInt(post.uiTokenAmount.amount)).to.equal(1_500_000n);
    expect(pre.owner).to.equal(chain.info.payer);
    // The ATA program created the account through the system program (an inner instruction).
    const inner = entry.meta.innerInstructions[0].instructions.map((i: { programIdIndex: number }) => keys[i.programIdIndex]);
    expect(inner).to.include('11111111111111111111111111111111');
    expect(entry.meta.fee).to.equal(5000);
    expect(entry.meta.preBalances).to.have.length(keys.length);

    const sigs = bigintFree(await rpc.getSignaturesForAddress(address(paid.tokenAccount)).send());
    expect(sigs).to.deep.equal([{ blockTime: block.blockTime, confirmationStatus: 'confirmed', err: null, memo: null, signature: paid.signature, slot: paid.slot }]);
    // Without maxSupportedTransactionVersion a v0 transaction is refused as the validator refuses it.
    expect(await rpcErrorOf(rpc.getBlock(BigInt(paid.slot!), { commitment: 'confirmed', encoding: 'json' }).send())).to.deep.include({ code: -32015 });
    expect(await rpcErrorOf(rpc.getTransaction(paid.signature as Signature, { commitment: 'confirmed', encoding: 'json' }).send())).to.deep.include({ code: -32015 });
    // Not final yet: the default (finalized) getTransaction has nothing, a confirmed one has it.
    expect(await rpc.getTransaction(paid.signature as Signature, { commitment: 'finalized', maxSupportedTransactionVersion: 0, encoding: 'json' }).send()).to.equal(null);
    const tx = await rpc.getTransaction(paid.signature as Signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0, encoding: 'base64' }).send();
    const wire = getTransactionDecoder().decode(getBase64Encoder().encode(tx!.transaction[0]));
    expect(Object.keys(wire.signatures)[0]).to.equal(chain.info.payer);
    await client.dev('solanaLocal_produceSlot', { count: 3 });
    const status = (await rpc.getSignatureStatuses([paid.signature as Signature]).send()).value[0]!;
    expect(status.confirmationStatus).to.equal('finalized');
    expect(status.confirmations).to.equal(null);
    expect(await client.tokenBalance(paid.tokenAccount, 'finalized')).to.equal(1_500_000n);
    const parsed = bigintFree((await rpc.getAccountInfo(address(paid.tokenAccount), { encoding: 'jsonParsed' }).send()).value);
    expect(parsed.data.parsed).to.deep.equal({
      info: { isNative: false, mint: chain.info.mints.USDC, owner, state: 'initialized', tokenAmount: { amount: '1500000', decimals: 6, uiAmount: 1.5, uiAmountString: '1.5' } },
      type: 'account',
    });
    // Without an encoding the validator answers in base58, which it refuses for data over 128 bytes.
    const tooBig = await rawRpc(chain.url, 'getAccountInfo', [paid.tokenAccount]);
    expect(tooBig.error).to.deep.equal({ code: -32602, message: 'Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.' });
    const byOwner = bigintFree((await rpc.getTokenAccountsByOwner(address(owner), { mint: address(chain.info.mints.USDC) }, { encoding: 'jsonParsed' }).send()).value);
    expect(byOwner.map((a: { pubkey: string }) => a.pubkey)).to.deep.equal([paid.tokenAccount]);
  });

  it('reads accounts as of the asked commitment: a payment not yet confirmed is visible only to processed', async () => {
    const { client } = await start();
    const owner = await newOwner();
    const first = await client.pay(owner, 10n, 'USDT');
    const second = await client.pay(owner, 5n, 'USDT', { waitFor: 'none' });
    expect(second.tokenAccount).to.equal(first.tokenAccount);
    await client.dev('solanaLocal_produceSlot', { count: 1 });
    expect(await client.tokenBalance(first.tokenAccount, 'processed')).to.equal(15n);
    expect(await client.tokenBalance(first.tokenAccount, 'confirmed')).to.equal(10n);
    await client.dev('solanaLocal_produceSlot', { count: 1 });
    expect(await client.tokenBalance(first.tokenAccount, 'confirmed')).to.equal(15n);
  });

  it('records a failed transaction in its block with meta.err, the fee paid and no token balance changed', async () => {
    const { client } = await start();
    const rpc = client.rpc;
    const owner = await newOwner();
    const failed = await client.payFailing(owner, 'USDT');
    expect(failed.err).to.deep.equal({ InstructionError: [1n, { Custom: 1n }] });
    const tx = bigintFree(await rpc.getTransaction(failed.signature as Signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0, encoding: 'json' }).send());
    expect(tx.slot).to.equal(failed.slot);
    expect(tx.meta.err).to.deep.equal({ InstructionError: [1, { Custom: 1 }] });
    expect(tx.meta.status).to.deep.equal({ Err: { InstructionError: [1, { Custom: 1 }] } });
    expect(tx.meta.fee).to.equal(5000);
    expect(tx.meta.preBalances[0] - tx.meta.postBalances[0]).to.equal(5000);
    expect(tx.meta.postTokenBalances).to.deep.equal(tx.meta.preTokenBalances);
    expect(tx.meta.logMessages.join('\n')).to.match(/insufficient funds/i);
    // The associated account the transaction would have created does not exist.
    expect(await client.exists(failed.tokenAccount)).to.equal(false);
    const sigs = bigintFree(await rpc.getSignaturesForAddress(address(owner)).send());
    expect(sigs.map((s: { err: unknown }) => s.err)).to.deep.equal([{ InstructionError: [1, { Custom: 1 }] }]);
  });

  it('makes the awkward payments: a lookalike mint, another token account of the owner, a v0 transaction with a lookup table', async () => {
    const { chain, client } = await start();
    const rpc = client.rpc;
    const owner = await newOwner();
    const get = async (sig: string) => bigintFree(await rpc.getTransaction(sig as Signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0, encoding: 'json' }).send());

    const lookalike = await client.payLookalike(owner, 9n);
    expect(lookalike.mint).to.not.be.oneOf(Object.values(chain.info.mints));
    const lt = await get(lookalike.signature);
    const lb = lt.meta.postTokenBalances.find((b: { owner: string }) => b.owner === owner);
    expect(lb).to.deep.include({ mint: lookalike.mint, programId: TOKEN_PROGRAM });
    expect(lb.uiTokenAmount.decimals).to.equal(6);

    const other = await client.payToOtherTokenAccount(owner, 7n, 'USDC');
    expect(other.tokenAccount).to.not.equal(await client.ata(owner, chain.info.mints.USDC));
    const ot = await get(other.signature);
    const oi = ot.transaction.message.accountKeys.indexOf(other.tokenAccount);
    expect(ot.meta.preTokenBalances.find((b: { accountIndex: number }) => b.accountIndex === oi)).to.equal(undefined);
    expect(ot.meta.postTokenBalances.find((b: { accountIndex: number }) => b.accountIndex === oi)).to.deep.include({ owner, mint: chain.info.mints.USDC });

    const viaTable = await client.payWithLookupTable(owner, 11n, 'USDC');
    expect(viaTable.createdTokenAccount).to.equal(true);
    const vt = await get(viaTable.signature);
    expect(vt.version).to.equal(0);
    const [lookup] = vt.transaction.message.addressTableLookups;
    expect(lookup).to.deep.include({ accountKey: viaTable.lookupTable, writableIndexes: [0] });
    expect([...lookup.readonlyIndexes].sort()).to.deep.equal([1, 2]);
    // The loaded addresses are the table's entries at those indexes, in that order.
    const table = [viaTable.tokenAccount, chain.info.mints.USDC, owner];
    expect(vt.meta.loadedAddresses).to.deep.equal({ writable: [viaTable.tokenAccount], readonly: lookup.readonlyIndexes.map((i: number) => table[i]) });
    const statics: string[] = vt.transaction.message.accountKeys;
    expect(statics).to.not.include(viaTable.tokenAccount);
    // Account indexes span the static keys, then the loaded writable, then the loaded readonly ones.
    const recipient = vt.meta.postTokenBalances.find((b: { owner: string }) => b.owner === owner);
    expect(recipient.accountIndex).to.equal(statics.length);
    expect(recipient.uiTokenAmount.amount).to.equal('11');
    // Created in the same transaction (by the ATA program, from a loaded address): no pre entry.
    expect(vt.meta.preTokenBalances.find((b: { owner: string }) => b.owner === owner)).to.equal(undefined);
    // Found by the token account that only the table names.
    const sigs = await rpc.getSignaturesForAddress(address(viaTable.tokenAccount)).send();
    expect(sigs[0].signature).to.equal(viaTable.signature);
  });

  it('skips slots: a skipped slot is absent from getBlocks, answers -32004 until finalized and -32007 after, and the next block links across it', async () => {
    const { client } = await start({ finalizationLag: 2 });
    const rpc = client.rpc;
    const before = (await client.dev<{ slot: number }>('solanaLocal_produceSlot')).slot;
    const { through } = await client.dev<{ through: number }>('solanaLocal_skipSlots', { count: 2 });
    expect(through).to.equal(before + 2);
    const after = (await client.dev<{ slot: number }>('solanaLocal_produceSlot', { count: 2 })).slot;
    expect(after).to.equal(before + 4);
    // Slot before+1 is below the confirmed head but above the finalized one: not available yet.
    expect(await rpcErrorOf(rpc.getBlock(BigInt(before + 1), { commitment: 'confirmed' }).send())).to.deep.equal({ code: -32004, message: `Block not available for slot ${before + 1}` });
    await client.dev('solanaLocal_produceSlot', { count: 3 });
    expect(await rpcErrorOf(rpc.getBlock(BigInt(before + 1)).send())).to.deep.equal({
      code: -32007,
      message: `Slot ${before + 1} was skipped, or missing due to ledger jump to recent snapshot`,
    });
    expect(await rpcErrorOf(rpc.getBlockTime(BigInt(before + 2)).send())).to.deep.include({ code: -32007 });
    const blocks = (await rpc.getBlocks(BigInt(before), BigInt(before + 3), { commitment: 'finalized' }).send()).map(Number);
    expect(blocks).to.deep.equal([before, before + 3]);
    expect((await rpc.getBlocksWithLimit(BigInt(before), 2, { commitment: 'finalized' }).send()).map(Number)).to.deep.equal([before, before + 3]);
    const linked = await rpc.getBlock(BigInt(before + 3), { transactionDetails: 'none', rewards: false }).send();
    const parent = await rpc.getBlock(BigInt(before), { transactionDetails: 'none', rewards: false }).send();
    expect(linked!.parentSlot).to.equal(BigInt(before));
    expect(linked!.previousBlockhash).to.equal(parent!.blockhash);
    expect(linked!.blockHeight).to.equal(parent!.blockHeight! + 1n);
    // A slot not produced yet, and a commitment below confirmed, answer as the validator does.
    expect(await rpcErrorOf(rpc.getBlock(10_000n, { commitment: 'confirmed' }).send())).to.deep.include({ code: -32004 });
    expect(await rpcErrorOf(rpc.getBlock(BigInt(before), { commitment: 'processed' } as never).send())).to.deep.equal({
      code: -32602,
      message: 'Method does not support commitment below `confirmed`',
    });
  });

  it('forks: dropped blocks become skipped slots and their payment is really undone; re-included, it lands once at a new slot; finalized blocks never change', async () => {
    const { client } = await start({ finalizationLag: 4 });
    const rpc = client.rpc;
    const owner = await newOwner();
    const finalizedBefore = await rpc.getSlot({ commitment: 'finalized' }).send();
    const finalBlock = await rpc.getBlock(finalizedBefore, { transactionDetails: 'signatures', rewards: false }).send();

    const paid = await client.pay(owner, 42n, 'USDT'); // processed + 1 confirmation
    const head = (await client.dev<{ processed: number }>('solanaLocal_info')).processed;
    const dropped = await client.dev<{ dropped: number[]; reincluded: string[] }>('solanaLocal_fork', { blocks: head - paid.slot! + 1, reinclude: false });
    expect(dropped.dropped).to.include(paid.slot);
    expect(dropped.reincluded).to.deep.equal([]);
    expect(await rpc.getTransaction(paid.signature as Signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0, encoding: 'json' }).send()).to.equal(null);
    expect((await rpc.getSignatureStatuses([paid.signature as Signature]).send()).value[0]).to.equal(null);
    expect(await client.exists(paid.tokenAccount)).to.equal(false); // the account it created is gone
    expect(await rpc.getSignaturesForAddress(address(paid.tokenAccount)).send()).to.deep.equal([]);
    const payerAta = await client.ata(client.wallet.payer.address, client.info.mints.USDT);
    expect(await client.tokenBalance(payerAta)).to.equal(1_000_000_000_000_000n);
    expect(await rpcErrorOf(rpc.getBlock(BigInt(paid.slot!), { commitment: 'confirmed' }).send())).to.deep.include({ code: -32004 });
    await client.dev('solanaLocal_produceSlot', { count: 6 });
    expect(await rpcErrorOf(rpc.getBlock(BigInt(paid.slot!)).send())).to.deep.include({ code: -32007 });
    expect((await rpc.getBlocks(BigInt(paid.slot!), BigInt(paid.slot!)).send()).length).to.equal(0);

    // Re-included: the same signature in a block at a later slot, credited once.
    const again = await client.pay(owner, 42n, 'USDT');
    const forked = await client.dev<{ dropped: number[]; reincluded: string[] }>('solanaLocal_fork', { blocks: 2, reinclude: true });
    expect(forked.reincluded).to.deep.equal([again.signature]);
    const status = await client.waitFor(again.signature, 'confirmed');
    expect(status.slot).to.be.greaterThan(Math.max(...forked.dropped));
    expect(await client.tokenBalance(again.tokenAccount, 'confirmed')).to.equal(42n);
    const sigs = await rpc.getSignaturesForAddress(address(again.tokenAccount)).send();
    expect(sigs.map((s) => [s.signature, Number(s.slot)])).to.deep.equal([[again.signature, status.slot]]);

    // However deep the fork, the finalized blocks stay.
    const finalNow = await rpc.getSlot({ commitment: 'finalized' }).send();
    const deep = await client.dev<{ dropped: number[] }>('solanaLocal_fork', { blocks: 1000, reinclude: false });
    expect(Math.min(...deep.dropped)).to.be.greaterThan(Number(finalNow));
    expect(await rpc.getBlock(finalizedBefore, { transactionDetails: 'signatures', rewards: false }).send()).to.deep.equal(finalBlock);
    expect(await rpc.getSlot({ commitment: 'finalized' }).send()).to.equal(finalNow);
  });

  it('refuses what a validator refuses at submission (a duplicate, an unknown blockhash, a failing preflight), takes base58, and airdrops', async () => {
    const { client } = await start();
    const rpc = client.rpc;
    const owner = await newOwner();
    const paid = await client.pay(owner, 1n, 'USDT');
    const tx = await rpc.getTransaction(paid.signature as Signature, { commitment: 'confirmed', maxSupportedTransactionVersion: 0, encoding: 'base64' }).send();
    const wire = Buffer.from(tx!.transaction[0], 'base64');
    const duplicate = await rawRpc(client.url, 'sendTransaction', [bs58(wire)]); // base58: the method's default encoding
    expect(duplicate.error).to.deep.include({ code: -32002, message: 'Transaction simulation failed: This transaction has already been processed' });
    expect(duplicate.error.data.err).to.equal('AlreadyProcessed');

    // A transaction whose blockhash is 151 blocks old: refused by preflight, dropped without it.
    const old = await rpc.getLatestBlockhash({ commitment: 'processed' }).send();
    await client.dev('solanaLocal_produceSlot', { count: 151 });
    const payerUsdt = await client.ata(client.wallet.payer.address, client.info.mints.USDT);
    const transfer = getTransferCheckedInstruction({ source: payerUsdt, mint: client.mint('USDT'), destination: address(paid.tokenAccount), authority: client.wallet.payer, amount: 1n, decimals: 6 });
    const stale = await signedWire(client.wallet.payer, [transfer], old.value.blockhash, old.value.lastValidBlockHeight);
    const refused = await rawRpc(client.url, 'sendTransaction', [Buffer.from(stale).toString('base64'), { encoding: 'base64' }]);
    expect(refused.error).to.deep.include({ code: -32002, message: 'Transaction simulation failed: Blockhash not found' });
    const skipped = await rawRpc(client.url, 'sendTransaction', [Buffer.from(stale).toString('base64'), { encoding: 'base64', skipPreflight: true }]);
    await client.dev('solanaLocal_produceSlot', { count: 2 });
    expect((await rpc.getSignatureStatuses([skipped.result as Signature], { searchTransactionHistory: true }).send()).value[0]).to.equal(null);

    // A transfer beyond the payer's balance fails its preflight with spl-token's error 1.
    const balance = await client.tokenBalance(payerUsdt);
    const over = getTransferCheckedInstruction({ source: payerUsdt, mint: client.mint('USDT'), destination: address(paid.tokenAccount), authority: client.wallet.payer, amount: balance + 1n, decimals: 6 });
    const latest = await rpc.getLatestBlockhash({ commitment: 'processed' }).send();
    const overWire = await signedWire(client.wallet.payer, [over], latest.value.blockhash, latest.value.lastValidBlockHeight);
    const failedPreflight = await rawRpc(client.url, 'sendTransaction', [Buffer.from(overWire).toString('base64'), { encoding: 'base64' }]);
    expect(failedPreflight.error).to.deep.include({ code: -32002, message: 'Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1' });
    expect(failedPreflight.error.data.err).to.deep.equal({ InstructionError: [0, { Custom: 1 }] });
    expect(await client.tokenBalance(payerUsdt)).to.equal(balance);

    const lamports = 3_000_000_000n;
    const target = await newOwner();
    const sig = await client.airdrop(target, lamports);
    await client.waitFor(sig, 'confirmed');
    expect((await rpc.getBalance(address(target)).send()).value).to.equal(lamports);
    expect((await rawRpc(client.url, 'noSuchMethod', [])).error).to.deep.equal({ code: -32601, message: 'Method not found' });
  });
});

describe('npm run pay on solana-local', function () {
  this.timeout(60_000);
  it('pays an owner address from the funded payer, found through DATA_DIR, creating its associated account; says clearly what it cannot do', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'solana-local-pay-'));
    const chain = await startSolanaLocal({ dataDir: dir, slotMs: 30, finalizationLag: 3 });
    try {
      const owner = await newOwner();
      expect(isSolanaAddress(owner)).to.equal(true);
      expect(isSolanaAddress('TWgezbnYkrQrWJY4tv2vbftyvUwaM9r7s1')).to.equal(false); // Tron: base58 too, but 25 bytes
      expect(isSolanaAddress('0x' + 'ab'.repeat(20))).to.equal(false);
      const paid = await paySolana({ dataDir: dir, to: owner, units: 2_500_000n, currency: 'usdc' });
      expect(paid).to.deep.include({ to: owner, currency: 'USDC', from: chain.info.payer, createdTokenAccount: true });
      const client = new SolanaLocalClient(chain.url, chain.wallet, chain.info);
      expect(paid.tokenAccount).to.equal(await client.ata(owner, chain.info.mints.USDC));
      expect(await client.tokenBalance(paid.tokenAccount, 'confirmed')).to.equal(2_500_000n);
      const again = await paySolana({ dataDir: dir, to: owner, units: 1n, currency: 'USDC' });
      expect(again.createdTokenAccount).to.equal(false);
      let refused = await paySolana({ dataDir: dir, to: owner, units: 1n, currency: 'DAI' }).catch((e: Error) => e);
      expect(refused).to.be.instanceOf(SolanaPayError);
      expect((refused as Error).message).to.equal('solana-local has test USDC and USDT only, not DAI');
      await chain.stop();
      refused = await paySolana({ dataDir: dir, to: owner, units: 1n, currency: 'USDT' }).catch((e: Error) => e);
      expect((refused as Error).message).to.match(/^solana-local does not answer at http:\/\/127\.0\.0\.1:\d+: start it first$/);
      refused = await paySolana({ dataDir: path.join(dir, 'elsewhere'), to: owner, units: 1n, currency: 'USDT' }).catch((e: Error) => e);
      expect((refused as Error).message).to.match(/has never run with DATA_DIR/);
    } finally {
      await chain.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('solana-local across restarts', function () {
  this.timeout(60_000);
  let dir: string;
  let chain: RunningSolanaLocal | null = null;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'solana-local-restart-'));
  });
  afterEach(async () => {
    await chain?.stop();
    chain = null;
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps accounts, blocks, transactions and finality, continues its slots, and can still fork what was unfinalized before the restart', async () => {
    chain = await startSolanaLocal({ dataDir: dir, slotMs: 0, finalizationLag: 3 });
    expect(chain.created).to.equal(true);
    let client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    const owner = await newOwner();
    const first = await client.pay(owner, 100n, 'USDC');
    await client.dev('solanaLocal_produceSlot', { count: 4 }); // final now
    const { through } = await client.dev<{ through: number }>('solanaLocal_skipSlots', { count: 3 });
    const second = await client.pay(owner, 20n, 'USDC', { waitFor: 'processed' }); // not final
    const info = chain.info;
    const before = bigintFree(await client.rpc.getBlock(BigInt(first.slot!), { maxSupportedTransactionVersion: 0 }).send());
    const headBefore = (await client.dev<{ processed: number; finalized: number }>('solanaLocal_info'));
    await chain.stop();

    chain = await startSolanaLocal({ dataDir: dir, slotMs: 0, finalizationLag: 3 });
    expect(chain.created).to.equal(false);
    const withoutUrl = ({ rpcUrl, ...rest }: typeof info) => (void rpcUrl, rest);
    expect(withoutUrl(chain.info)).to.deep.equal(withoutUrl(info));
    expect(readSolanaLocalInfo(dir)).to.deep.equal({ ...info, rpcUrl: chain.url }); // where it listens now
    client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    const rpc = client.rpc;
    expect(await rpc.getGenesisHash().send()).to.equal(info.genesisHash);
    const headAfter = await client.dev<{ processed: number; finalized: number }>('solanaLocal_info');
    expect(headAfter.processed).to.equal(headBefore.processed);
    expect(headAfter.finalized).to.equal(headBefore.finalized);
    expect(bigintFree(await rpc.getBlock(BigInt(first.slot!), { maxSupportedTransactionVersion: 0 }).send())).to.deep.equal(before);
    expect(await client.tokenBalance(first.tokenAccount, 'processed')).to.equal(120n);
    // The skipped slots stay skipped.
    expect((await rpc.getBlocks(BigInt(through - 2), BigInt(through), { commitment: 'confirmed' }).send()).length).to.equal(0);
    // New slots continue after the old ones.
    const next = (await client.dev<{ slot: number }>('solanaLocal_produceSlot')).slot;
    expect(next).to.equal(headBefore.processed + 1);
    // The block made before the restart is not final yet: a fork still undoes it.
    const forked = await client.dev<{ dropped: number[] }>('solanaLocal_fork', { blocks: 2, reinclude: false });
    expect(forked.dropped).to.include(second.slot);
    expect(await client.tokenBalance(first.tokenAccount, 'processed')).to.equal(100n);
    const third = await client.pay(owner, 1n, 'USDC');
    expect(third.err).to.equal(null);
    await chain.stop();

    // A hard kill can tear the last ledger line: the next start cuts it off and goes on.
    const ledger = path.join(dir, 'solana-local', 'ledger.jsonl');
    fs.appendFileSync(ledger, '{"k":"block","block":{"slot":99');
    chain = await startSolanaLocal({ dataDir: dir, slotMs: 0, finalizationLag: 3 });
    client = new SolanaLocalClient(chain.url, chain.wallet, chain.info, { produceSlots: true });
    expect(await client.tokenBalance(first.tokenAccount, 'processed')).to.equal(101n);
    expect((await client.pay(owner, 1n, 'USDC')).err).to.equal(null);
    await client.dev('solanaLocal_produceSlot', { count: 4 });
    expect(await rpcErrorOf(client.rpc.getBlock(BigInt(through)).send())).to.deep.include({ code: -32007 });
  });
});
