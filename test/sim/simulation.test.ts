import { expect } from 'chai';
import { formatReport } from './report';
import { runSimulation } from './simulation';

/**
 * The money simulation at a fixed seed (issue 16): ~200 payments against the real service under
 * reorgs, worker kills, a Redis restart, RPC faults and a flaky webhook receiver, on the three chain
 * families enabled locally (EVM on anvil, Tron on tron-local, Solana on solana-local with skipped slots and forks); every invariant must hold at quiescence. `npm run sim -- --payments 10000` is the long run.
 */
describe('money simulation (fixed seed, real processes, anvil, tron-local and solana-local)', function () {
  this.timeout(420_000);

  it('credits every payment once and tells every merchant, under faults', async () => {
    const report = await runSimulation({ payments: 200, seed: 16_016, workers: 2, spreadMs: 20_000, quiescenceTimeoutMs: 120_000 });
    const summary = formatReport(report);
    if (process.env.SIM_VERBOSE) console.log(summary);
    expect(report.violations, summary).to.deep.equal([]);
    // The intent oracle (issue 25): no payment credited to anything it was not meant for.
    expect(report.intent, summary).to.not.equal(null);
    expect(report.intent!.wrongCredit, summary).to.equal(0);
    expect(report.intent!.unattributed.unexplained ?? 0, summary).to.equal(0);
    expect(report.intent!.creditedAsMeant, summary).to.be.greaterThan(50);
    // The refund oracle (issue 42): refunds were issued, claimed, approved and paid, and some completed.
    expect(report.refunds, summary).to.not.equal(null);
    expect(report.refunds!.approved, summary).to.be.greaterThan(0);
    expect(report.refunds!.completed, summary).to.be.greaterThan(0);
    // Every difference from the reference model (which encodes the attribution rule) fails the run.
    expect(report.mismatches, summary).to.deep.equal([]);
    // The run exercised what it claims to: payments went out, faults happened, webhooks flowed.
    expect(report.paymentsSent, summary).to.be.greaterThan(150);
    expect(report.reorgs, summary).to.be.greaterThan(0);
    // Both families were exercised: orders and payments on each, and each chain reorganised.
    for (const family of ['evm', 'tron', 'solana'] as const) {
      expect(report.families[family].orders, `${family}\n${summary}`).to.be.greaterThan(0);
      expect(report.families[family].payments, `${family}\n${summary}`).to.be.greaterThan(20);
      expect(report.families[family].reorgs, `${family}\n${summary}`).to.be.greaterThan(0);
    }
    // The intent oracle judged payments of every family (a Solana payment is found by signature and owner).
    for (const chainId of ['ethereum-local', 'tron-local', 'solana-local']) expect(report.intent!.judgedPerChain[chainId] ?? 0, `${chainId}\n${summary}`).to.be.greaterThan(10);
    // The payers' transactions went out: a refused one is a harness fault that hides a payment.
    expect(report.sendErrors, summary).to.equal(0);
    expect(report.skippedSlots, summary).to.be.greaterThan(0);
    expect(report.kills, summary).to.be.greaterThan(0);
    expect(report.redisRestarts, summary).to.be.greaterThan(0);
    expect(report.webhooks.delivered, summary).to.be.greaterThan(0);
  });
});
