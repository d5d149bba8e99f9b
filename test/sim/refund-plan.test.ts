import { expect } from 'chai';
import { intentOfRef } from './intent';
import { formatRefunds } from './refund-oracle';
import { Rng } from './rng';
import { buildScenario, MAX_REFUNDS, REFUNDABLE_KINDS, type ScenarioShape } from './scenario';

/**
 * The simulation's refunds (issue 42) are drawn from a stream of their own: the orders, deposit
 * references, strays, clocks and faults of a seed are what they were before refunds existed, and
 * the merchant's refund payments are told apart from incoming payments by their references.
 */
describe('simulation refunds: the plan and the references', () => {
  const shape: ScenarioShape = { payments: 300, workers: 2, confirmations: { evm: 3, tron: 3, solana: 6 }, skewSeconds: { evm: 62, tron: 66, solana: 61 } };

  it('draws the refunds from their own stream: the rest of the scenario is the same for the seed', () => {
    // A fork draws nothing from its parent: the refund stream, forked after every other draw,
    // leaves the orders, references, strays, clocks and faults of a seed as they were (checked by
    // hand against main's scenario.ts for seeds 52711, 60602 and 16016 under heavy and realistic:
    // identical but for the first endpoints' two refund event types).
    const plain = new Rng(52_711);
    const forked = new Rng(52_711);
    forked.fork('refunds').next();
    expect([forked.next(), forked.next()]).to.deep.equal([plain.next(), plain.next()]);
    const a = buildScenario(52_711, shape, new Rng(52_711).fork('scenario'));
    const b = buildScenario(52_711, shape, new Rng(52_711).fork('scenario'));
    expect(JSON.stringify(a)).to.equal(JSON.stringify(b));
    expect(a.refunds.length).to.be.greaterThan(5).and.at.most(MAX_REFUNDS);
    const byN = new Map(a.orders.map((o) => [o.n, o]));
    for (const r of a.refunds) expect(REFUNDABLE_KINDS).to.include(byN.get(r.order)!.kind);
    expect(new Set(a.refunds.map((r) => r.order)).size).to.equal(a.refunds.length);
  });

  it('a refund payment reference means the merchant paying refund n, never an order or a deposit', () => {
    expect(intentOfRef('sim-7-r3')).to.deep.equal({ kind: 'refund', ref: 'sim-7-r3' });
    expect(intentOfRef('sim-7-r3-early')).to.deep.equal({ kind: 'refund', ref: 'sim-7-r3' });
    expect(intentOfRef('sim-7-r12-wrong')).to.deep.equal({ kind: 'refund', ref: 'sim-7-r12' });
    expect(intentOfRef('sim-7-o3-reorg-bait')).to.deep.equal({ kind: 'order', ref: 'sim-7-o3' });
    expect(intentOfRef('sim-7-d3-after-unbind')).to.deep.equal({ kind: 'deposit', ref: 'sim-7-d3' });
    expect(intentOfRef('sim-7-s3')).to.equal(null);
  });

  it('reports the refunds in two lines', () => {
    const lines = formatRefunds({ planned: 4, skipped: { 'order expired': 1 }, issued: 3, claimed: 3, approved: 2, completed: 1, outcomes: { 'on-time': [1, 1], early: [1, 0] }, apart: {}, payments: { destination: 1, early: 1, wrong: 0 }, violations: [] });
    expect(lines).to.have.length(2);
    expect(lines[0]).to.include('4 planned (not issued: order expired 1), 3 issued');
    expect(lines[1]).to.include('on time 1/1').and.include('before approval 0/1');
  });
});
