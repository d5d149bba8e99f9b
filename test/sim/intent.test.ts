import { expect } from 'chai';
import { generateKeyPairSigner } from '@solana/kit';
import { creditsOf, TOKEN_PROGRAMS, type RpcTransaction } from '../../core/chains/solana/solana-balances';
import { paymentKey, paymentsOfTrace } from './intent';
import { Rng } from './rng';
import { startSimSolana, type SimSolana } from './solana-chain';
import type { TraceEntry } from './trace';

/**
 * The intent oracle finds each recorded Solana credit's payment (what its payer meant) by signature,
 * recipient owner and currency. A Solana transfer's identity index is its token account's place in
 * the compiled transaction's account list (kit orders accounts by role and address), not the
 * payment's place in the payer's batch: an oracle keyed by (signature, place in the batch), as the
 * scanbench branch's was, judged the credit at account index 1 as the batch's second payment. On
 * seed 16016 that read a credit to sim-16016-d14, paid in one transaction with sim-16016-d11, as
 * "meant for d11, credited to d14" — the wrong credit that took getBlock batching out. Here, on
 * solana-local, a two-reference transaction whose account order makes the batch position and the
 * account index disagree (the case that fooled it), and every credit must be found as meant.
 */
describe('simulation intent oracle: a Solana transaction paying several references', function () {
  this.timeout(60_000);
  let sol: SimSolana;

  before(async () => {
    sol = await startSimSolana({ slotMs: 50, finalizationLag: 4, rng: new Rng(3) });
  });
  after(async () => {
    await sol?.stop();
  });

  const transactionOf = async (signature: string): Promise<RpcTransaction> => {
    for (let i = 0; i < 100; i++) {
      const res = await fetch(sol.chain.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'getTransaction', params: [signature, { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 }] }),
      });
      const { result } = (await res.json()) as { result: RpcTransaction | null };
      if (result) return result;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`transaction ${signature} not confirmed`);
  };

  it('finds each credit of a batched transaction by signature and owner, not by its place in the batch', async () => {
    const mints = new Set(Object.values(sol.mints));
    // Pairs until the credit at account index 1 is the batch's first payment: what seed 16016 met
    // (the old keying read it as the second payment's, a wrong credit; kit's address order decides).
    // That order also depends on the payer's own token accounts, which may sort below every
    // recipient's (CI met 40 pairs without it): then the last pair is judged. Either way the
    // first payment's credit is not at index 0 (the fee payer's), so an oracle keyed by the place
    // in the batch never finds it as meant.
    let tried: { batch: { ref: string; to: string; currency: string; amount: string }[]; hashes: string[]; credits: ReturnType<typeof creditsOf> } | null = null;
    for (let attempt = 0; attempt < 40; attempt++) {
      const d14 = (await generateKeyPairSigner()).address;
      const d11 = (await generateKeyPairSigner()).address;
      const batch = [
        { ref: 'sim-16016-d14', to: d14, currency: 'USDC', amount: '322800000' },
        { ref: 'sim-16016-d11', to: d11, currency: 'USDT', amount: '72960000' },
      ];
      const hashes = await sol.pay(batch.map((b) => ({ to: b.to, currency: b.currency, amount: BigInt(b.amount) })));
      const credits = creditsOf(await transactionOf(hashes[0]), mints, TOKEN_PROGRAMS);
      expect(credits.map((c) => c.owner).sort()).to.deep.equal([d14, d11].sort());
      tried = { batch, hashes, credits };
      if (credits.find((c) => c.accountIndex === 1)?.owner === d14) break;
    }
    const { batch, hashes, credits } = tried!;
    const [d14, d11] = batch.map((b) => b.to);
    expect(credits.find((c) => c.owner === d14)!.accountIndex).to.be.above(0);

    const entries: TraceEntry[] = [{ kind: 'tx', at: 100, chainId: 'solana-local', hash: hashes[hashes.length - 1], hashes, batch }];
    const payments = paymentsOfTrace(entries, 0);
    // As the service records them: identity (signature, account index), recipient owner, currency.
    const judged = credits.map((c) => ({
      owner: c.owner,
      meant: payments.get(paymentKey({ chainId: 'solana-local', txHash: c.signature, indexInTx: c.accountIndex, to: c.owner, currency: c.mint === sol.mints.USDC ? 'USDC' : 'USDT' }))?.ref,
    }));
    expect(judged.sort((a, b) => a.owner.localeCompare(b.owner))).to.deep.equal(
      [
        { owner: d14, meant: 'sim-16016-d14' },
        { owner: d11, meant: 'sim-16016-d11' },
      ].sort((a, b) => a.owner.localeCompare(b.owner)),
    );
  });
});
