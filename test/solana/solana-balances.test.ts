import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { creditsOf, type RpcTransaction } from '../../core/chains/solana/solana-balances';

/**
 * The Solana credit rule against answers recorded from solana-local (test/fixtures/solana/,
 * README there: the real SPL Token program under litesvm, recorded by record-fixtures.ts):
 * per token account of a successful transaction, post − pre of the token balances, matched by
 * owner, configured mints only, increases only; identity by the account index over static and
 * loaded keys; `from` = the owner whose balance of the mint fell the most.
 */
// The recording's mints (solana-local makes its own on each start) and owners.
const USDC = '9LAy1u5RE9YAcKthvWdVmK5EWbeHPQSTcph8JcdWYwwT';
const USDT = 'BBK5UJU5uJR3D6885o74vD7rNMU66CYaDzUXMejF9BHv';
const LOOKALIKE = '9v9scgz47z2BPwDZKqaSoVXCvUBWoubKBNKPaswCWdSj';
const MINTS = new Set([USDC, USDT]);
const PAYER = 'E8Qc4oF1BcxPJcGEZRRzELP8JEmuV9gsz9UYE91bUjUv';
const A = 'Cd4RNZ5LYvkcTmmB2nWgu5q3GnWQUfMmA1qWFfcw7Yxy'; // paid 11,594 USDC by the payer
const B = '8e5ee365KWq4ejVGFiCHjptuArdzBzJsq1kHfzfNa8E'; // sends 7,000 USDC and gets them back
const C = 'DwtJ5KpNYPxw2TrRH3GyzUvEuEbkpDSGNmnhu3kPGri'; // its non-associated USDC account sends 22,363,909 to D
const D = 'Gd6au5iJ7KRpbWqWPfqBASDbMcfdxnzn1uVbt3czC6XU';
const E = 'HqGvXKoUWm2GvgPnHjWLUrfbWpL5C1MLs1gxhDgphuCL'; // its USDT account is created in the transaction
const fixture = <T>(name: string): T => JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/solana', name), 'utf8')) as T;

describe('Solana credits from token balance changes (answers recorded from solana-local)', () => {
  const block = fixture<{ transactions: RpcTransaction[] }>('getblock.v0-lookup-table-transfers.solana-local.json');
  const multi = block.transactions[0];

  it('a v0 transaction with a lookup table: recipients indexed over static and loaded keys, only increases of configured mints', () => {
    const credits = creditsOf(multi, MINTS);
    const byIndex = Object.fromEntries(credits.map((c) => [c.accountIndex, { owner: c.owner, mint: c.mint, amount: c.amount, from: c.from }]));
    expect(byIndex).to.deep.equal({
      11: { owner: D, mint: USDC, amount: 22_363_909n, from: C },
      13: { owner: E, mint: USDT, amount: 53_517n, from: PAYER },
      14: { owner: A, mint: USDC, amount: 11_594n, from: C },
    });
    // 10 static keys come first; the token balances span both (C's account is static key 3, the recipients are loaded).
    expect(multi.transaction.message.accountKeys).to.have.length(10);
    const indexes = multi.meta!.postTokenBalances!.map((b) => Number(b.accountIndex));
    expect(indexes.some((i) => i < 10) && indexes.some((i) => i >= 10)).to.equal(true);
    const loaded = credits.find((c) => c.accountIndex === 11)!;
    expect(loaded.tokenAccount).to.equal('6VSsWeXgxudSvVb4ecGvVFAs87zRDmmgx4FmQ7mRp72s'); // meta.loadedAddresses.writable[1]
    expect(loaded.signature).to.equal(multi.transaction.signatures[0]);
    const eAccount = credits.find((c) => c.accountIndex === 13)!;
    expect(eAccount.tokenAccount).to.equal('BWyivFHsQMfgmuKeH3sazKGec6SueHR7a2CwajZ7Yr4s'); // no pre entry: counted from 0
  });

  it('an owner touched with no net change is credited nothing; a sending owner is not paid; a lookalike mint is never credited', () => {
    const owners = creditsOf(multi, MINTS).map((c) => c.owner);
    expect(owners).to.not.include(B); // index 12: pre = post
    expect(owners).to.not.include(C); // its non-associated account (index 3) fell
    expect(owners).to.not.include(PAYER);
    // A's lookalike account (index 10) rose by 999: credited only if the lookalike were configured.
    expect(creditsOf(multi, new Set([LOOKALIKE])).map((c) => [c.accountIndex, c.owner, c.amount])).to.deep.equal([[10, A, 999n]]);
    expect(creditsOf(multi, new Set(['DM2Grhnery1Ww2SSmyN6vXzRYrjEFsxzaHwYz1ZCGVCW']))).to.deep.equal([]);
    expect(creditsOf(multi, new Set())).to.deep.equal([]);
  });

  it('a failed transaction (meta.err) is not credited, whatever its balances say', () => {
    const [ok, failed] = fixture<{ transactions: RpcTransaction[] }>('getblock.failed-transaction.solana-local.json').transactions;
    expect(failed.meta!.err).to.deep.equal({ InstructionError: [0, { Custom: 1 }] }); // spl-token InsufficientFunds
    expect(creditsOf(failed, MINTS)).to.deep.equal([]);
    expect(creditsOf(ok, MINTS).map((c) => [c.owner, c.amount])).to.deep.equal([[A, 5n]]);
    // The same failed transaction with a balance that rose: still nothing.
    const risen: RpcTransaction = {
      ...failed,
      meta: { ...failed.meta!, postTokenBalances: failed.meta!.postTokenBalances!.map((b) => ({ ...b, uiTokenAmount: { ...b.uiTokenAmount, amount: String(BigInt(b.uiTokenAmount.amount) + 100n) } })) },
    };
    expect(creditsOf({ ...risen, meta: { ...risen.meta!, err: null } }, MINTS)).to.have.length(2);
    expect(creditsOf(risen, MINTS)).to.deep.equal([]);
    const multiMarkedFailed: RpcTransaction = { ...multi, meta: { ...multi.meta!, err: { InstructionError: [2, { Custom: 6001 }] } } };
    expect(creditsOf(multiMarkedFailed, MINTS)).to.deep.equal([]);
  });

  it('getTransaction of a v0 USDC transfer between associated accounts: one credit, from the sender, numbers as kit bigints too', () => {
    const tx = fixture<RpcTransaction & { slot: number }>('gettransaction.v0-usdc.solana-local.json');
    const [credit, ...rest] = creditsOf(tx, MINTS);
    expect(rest).to.have.length(0);
    expect(credit).to.include({ accountIndex: 3, owner: D, from: PAYER, amount: 42n, mint: USDC });
    expect(credit.tokenAccount).to.equal('6VSsWeXgxudSvVb4ecGvVFAs87zRDmmgx4FmQ7mRp72s'); // loaded from the table
    // kit turns JSON numbers into bigints (accountIndex included in some versions): the same answer.
    const asBigints = JSON.parse(JSON.stringify(tx), (k, v) => (k === 'accountIndex' && typeof v === 'number' ? BigInt(v) : v)) as RpcTransaction;
    expect(creditsOf(asBigints, MINTS).map((c) => [c.accountIndex, c.amount])).to.deep.equal([[3, 42n]]);
  });

  it('a Token-2022 account is credited what arrived (a transfer fee withheld is not counted); an unknown token program is not credited', () => {
    const tx = fixture<RpcTransaction>('gettransaction.v0-usdc.solana-local.json');
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
    const tx = fixture<RpcTransaction>('gettransaction.v0-usdc.solana-local.json');
    const fresh: RpcTransaction = { ...tx, meta: { ...tx.meta!, preTokenBalances: tx.meta!.preTokenBalances!.filter((b) => Number(b.accountIndex) !== 3) } };
    expect(creditsOf(fresh, MINTS).find((c) => c.accountIndex === 3)!.amount).to.equal(23_363_951n);
    const otherMint: RpcTransaction = {
      ...tx,
      meta: { ...tx.meta!, preTokenBalances: tx.meta!.preTokenBalances!.map((b) => (Number(b.accountIndex) === 3 ? { ...b, mint: USDT, uiTokenAmount: { ...b.uiTokenAmount, amount: '999999' } } : b)) },
    };
    expect(creditsOf(otherMint, MINTS).find((c) => c.accountIndex === 3)!.amount).to.equal(23_363_951n);
  });
});
