import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { creditsOf, type RpcTransaction } from '../../core/chains/solana/solana-balances';

/**
 * The Solana credit rule against recorded mainnet answers (test/fixtures/solana/, README there):
 * per token account of a successful transaction, post − pre of the token balances, matched by
 * owner, configured mints only, increases only; identity by the account index over static and
 * loaded keys; `from` = the owner whose balance of the mint fell the most.
 */
const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const USDT = 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB';
const MINTS = new Set([USDC, USDT]);
const fixture = <T>(name: string): T => JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/solana', name), 'utf8')) as T;

describe('Solana credits from token balance changes (recorded mainnet answers)', () => {
  const block = fixture<{ transactions: RpcTransaction[] }>('getblock.v0-lookup-table-swap.mainnet-154808473.json');
  const swap = block.transactions[0];

  it('a v0 transaction with a lookup table: recipients indexed over static and loaded keys, only increases of configured mints', () => {
    const credits = creditsOf(swap, MINTS);
    const byIndex = Object.fromEntries(credits.map((c) => [c.accountIndex, { owner: c.owner, mint: c.mint, amount: c.amount }]));
    expect(byIndex).to.deep.equal({
      11: { owner: '5C1k9yV7y4CjMnKv8eGYDgWND8P89Pdfj79Trk2qmfGo', mint: USDC, amount: 11594n },
      15: { owner: '3qgS5KYBTFJ6Lt8GujDEQLcgfLPSnFZ5VFMrxoes7rXs', mint: USDT, amount: 11149n },
      18: { owner: '3qgS5KYBTFJ6Lt8GujDEQLcgfLPSnFZ5VFMrxoes7rXs', mint: USDC, amount: 11143n },
      21: { owner: '9ou4qq7RhycWHGS8XkgQwUS1qyWHrbz7ZoCKdm9o23vy', mint: USDC, amount: 22364264n },
      29: { owner: '9RuqAN42PTUi9ya59k9suGATrkqzvb9gk2QABJtQzGP5', mint: USDC, amount: 53517n },
    });
    // Index 21 lies among the loaded (lookup-table) keys: 6 static keys come first.
    expect(swap.transaction.message.accountKeys).to.have.length(6);
    const loaded = credits.find((c) => c.accountIndex === 21)!;
    expect(loaded.tokenAccount).to.equal('BbwCGgAHEUfu7PUEz8hR877aK2snseqorfLbvtcVbjhj');
    expect(loaded.signature).to.equal(swap.transaction.signatures[0]);
    // from: the owner whose USDC fell the most in the transaction (HaNqp…'s non-associated account, index 27).
    expect(loaded.from).to.equal('HaNqpJUQeH2t6SB3tDJAtKV52fJM9rV1mGZrRrqMRZo1');
  });

  it('a swap touching a watched owner with no net change credits nothing to it; a sending owner is not paid', () => {
    const owners = creditsOf(swap, MINTS).map((c) => c.owner);
    expect(owners).to.not.include('7tpzQQEQFJTi32eo89yFuV4ST41NSC7c6xd9Sny36iXW'); // indexes 13 and 17: pre = post
    expect(owners).to.not.include('JARehRjGUkkEShpjzfuV4ERJS25j8XhamL776FAktNGm'); // index 7 fell, 14 unchanged
    expect(owners).to.not.include('HaNqpJUQeH2t6SB3tDJAtKV52fJM9rV1mGZrRrqMRZo1'); // its USDC account fell
  });

  it('a lookalike mint is never credited; no configured mint, no credit', () => {
    expect(creditsOf(swap, new Set(['DM2Grhnery1Ww2SSmyN6vXzRYrjEFsxzaHwYz1ZCGVCW']))).to.deep.equal([]);
    expect(creditsOf(swap, new Set())).to.deep.equal([]);
  });

  it('a failed transaction (meta.err) is not credited, whatever its balances say', () => {
    const failed = fixture<{ transactions: RpcTransaction[] }>('getblock.failed-transaction.json').transactions[1];
    expect(failed.meta!.err).to.deep.equal({ InstructionError: [0, { Custom: 0 }] });
    expect(creditsOf(failed, MINTS)).to.deep.equal([]);
    const swapMarkedFailed: RpcTransaction = { ...swap, meta: { ...swap.meta!, err: { InstructionError: [2, { Custom: 6001 }] } } };
    expect(creditsOf(swapMarkedFailed, MINTS)).to.deep.equal([]);
  });

  it('getTransaction of a v0 USDC transfer between associated accounts: one credit, from the sender, numbers as kit bigints too', () => {
    const tx = fixture<RpcTransaction & { slot: number }>('gettransaction.v0-usdc.mainnet-328883613.json');
    const [credit, ...rest] = creditsOf(tx, MINTS);
    expect(rest).to.have.length(0);
    expect(credit).to.include({ accountIndex: 3, owner: '8PDYaC2zz9UYN3qVoAyZvAF7qRkmTByBT5TnT2mHGPuZ', from: '8sWsVPJpjcBrmmuAQCk1Tp6BgAmEc8A5UM8RhJn1qzED', amount: 42n, mint: USDC });
    expect(credit.tokenAccount).to.equal('A3EPnkUqt4ueCiJBdnACDnLenyU5xZ57QZsAtnYKA5qx');
    // kit turns JSON numbers into bigints (accountIndex included in some versions): the same answer.
    const asBigints = JSON.parse(JSON.stringify(tx), (k, v) => (k === 'accountIndex' && typeof v === 'number' ? BigInt(v) : v)) as RpcTransaction;
    expect(creditsOf(asBigints, MINTS).map((c) => [c.accountIndex, c.amount])).to.deep.equal([[3, 42n]]);
  });

  it('a Token-2022 account is credited what arrived (a transfer fee withheld is not counted); an unknown token program is not credited', () => {
    const tx = fixture<RpcTransaction>('gettransaction.v0-usdc.mainnet-328883613.json');
    const TOKEN_2022 = 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb';
    // A transfer of 100 with a 1 % fee: the sender's account falls by 100, the recipient's rises by 99.
    const under = (program: string): RpcTransaction => ({
      ...tx,
      meta: {
        ...tx.meta!,
        preTokenBalances: tx.meta!.preTokenBalances!.map((b) => ({ ...b, programId: program, uiTokenAmount: { ...b.uiTokenAmount, amount: Number(b.accountIndex) === 3 ? '1000' : '5000' } })),
        postTokenBalances: tx.meta!.postTokenBalances!.map((b) => ({ ...b, programId: program, uiTokenAmount: { ...b.uiTokenAmount, amount: Number(b.accountIndex) === 3 ? '1099' : '4900' } })),
      },
    });
    expect(creditsOf(under(TOKEN_2022), MINTS).map((c) => [c.accountIndex, c.amount])).to.deep.equal([[3, 99n]]);
    expect(creditsOf(under('11111111111111111111111111111111'), MINTS)).to.deep.equal([]);
  });

  it('a token account created in the transaction (no pre entry) counts from 0; an account re-created under another mint does not carry the old balance', () => {
    const tx = fixture<RpcTransaction>('gettransaction.v0-usdc.mainnet-328883613.json');
    const fresh: RpcTransaction = { ...tx, meta: { ...tx.meta!, preTokenBalances: tx.meta!.preTokenBalances!.filter((b) => Number(b.accountIndex) !== 3) } };
    expect(creditsOf(fresh, MINTS).find((c) => c.accountIndex === 3)!.amount).to.equal(1044n);
    const otherMint: RpcTransaction = {
      ...tx,
      meta: { ...tx.meta!, preTokenBalances: tx.meta!.preTokenBalances!.map((b) => (Number(b.accountIndex) === 3 ? { ...b, mint: USDT, uiTokenAmount: { ...b.uiTokenAmount, amount: '999999' } } : b)) },
    };
    expect(creditsOf(otherMint, MINTS).find((c) => c.accountIndex === 3)!.amount).to.equal(1044n);
  });
});
