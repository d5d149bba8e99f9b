import { expect } from 'chai';
import type postgres from 'postgres';
import type { ChainHistory } from './chain-history';
import { intentOfRef } from './intent';
import { formatRefunds, judgeRefunds, type RefundRecord } from './refund-oracle';
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

describe('simulation refund oracle: what it fails and what it counts apart', () => {
  const approvedAt = 1_000_000;
  const dest = '0x00000000000000000000000000000000000000d1';
  const base = { status: 'approved', amount: '100', amount_paid: '0', destination: dest, approved_at: new Date(approvedAt), tx_hash: null as string | null, currency: 'USDT', chain_id: 'ethereum-local' };
  const row = (over: Record<string, unknown>) => ({
    id: 'trf_1', refund_id: 'rf_1', chain_id: 'ethereum-local', tx_hash: '0xaa', index_in_tx: 0, to_address: dest, currency: 'USDT', amount: '100', status: 'confirmed', counted: true, order_id: null, deposit_binding_id: null,
    mined_after: new Date(approvedAt + 1_000), mined_by: new Date(approvedAt + 2_000), clock_mined_after: null, clock_mined_by: null, ...over,
  });
  const record = (over: Partial<RefundRecord>): RefundRecord => ({
    ref: 'sim-1-r0', behaviour: 'on-time', chainId: 'ethereum-local', currency: 'USDT', orderId: 'ord_1', skipped: null, refundId: 'rf_1', amount: 100n, destination: dest, claimed: true, approvedAnsweredAt: approvedAt + 10,
    payments: [{ ref: 'sim-1-r0', to: 'destination', address: dest, amount: 100n, sentAt: approvedAt + 500, txHash: '0xaa', afterApproval: true }], ...over,
  });
  const judge = (refund: typeof base, transfers: ReturnType<typeof row>[], rec: RefundRecord, events: { type: string; refund_id: string }[] = [{ type: 'refund.claimed', refund_id: 'rf_1' }]) => {
    const sql = ((strings: TemplateStringsArray) => {
      const q = strings.join('?');
      return Promise.resolve(q.includes('from refunds') ? [{ id: 'rf_1', ...refund }] : q.includes('from transfers') ? transfers : q.includes('from events') ? events : []);
    }) as unknown as postgres.Sql;
    const history: ChainHistory = { family: 'evm', chainId: 'ethereum-local', head: async () => 0, transfers: async () => transfers.map((t) => ({ chainId: t.chain_id, identity: `${t.tx_hash}:0`, to: t.to_address, currency: 'USDT', amount: 100n, blockNumber: 1, blockTimeMs: 0 })) };
    return judgeRefunds(sql, 1, [rec], [history], new Map([['ethereum-local', 2]]), [], async () => ({ status: 200, body: { status: refund.status, txHash: refund.tx_hash } }));
  };

  it('passes a refund completed by the payment sent after approval to its destination', async () => {
    const r = await judge({ ...base, status: 'completed', tx_hash: '0xaa' }, [row({})], record({}), [{ type: 'refund.claimed', refund_id: 'rf_1' }, { type: 'refund.completed', refund_id: 'rf_1' }]);
    expect(r.violations).to.deep.equal([]);
    expect(r.outcomes['on-time']).to.deep.equal([1, 1]);
  });

  it('fails a refund completed by a payment sent before its approval', async () => {
    const rec = record({ behaviour: 'early', payments: [{ ref: 'sim-1-r0-early', to: 'destination', address: dest, amount: 100n, sentAt: approvedAt - 5_000, txHash: '0xaa', afterApproval: false }] });
    const r = await judge({ ...base, status: 'completed', tx_hash: '0xaa' }, [row({})], rec, [{ type: 'refund.claimed', refund_id: 'rf_1' }, { type: 'refund.completed', refund_id: 'rf_1' }]);
    expect(r.violations.join('\n')).to.include('was sent before the approval').and.include('which is no payment sent to its destination after its approval');
  });

  it('fails a refund paid in full after approval that stays approved, unless the evidence cannot show the payment came after the approval', async () => {
    const stuck = await judge(base, [row({ counted: false })], record({}));
    expect(stuck.violations.join('\n')).to.include('paid in full after approval');
    const undecidable = await judge(base, [row({ counted: false, mined_after: new Date(approvedAt - 60_000) })], record({}));
    expect(undecidable.violations).to.deep.equal([]);
    expect(undecidable.apart).to.deep.equal({ 'evidence undecidable (mined after the approval not shown)': 1 });
  });

  it('fails a refund payment attributed to an order, and a missing refund.claimed', async () => {
    const r = await judge(base, [row({ counted: false, order_id: 'ord_9', mined_after: new Date(approvedAt - 60_000) })], record({ behaviour: 'partial-only' }), []);
    expect(r.violations.join('\n')).to.include('is attributed to order ord_9').and.include('credited as an incoming payment').and.include('has 0 refund.claimed');
  });
});
