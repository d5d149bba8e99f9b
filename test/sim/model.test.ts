import { expect } from 'chai';
import { predict } from './model';
import { countsTowardOrder, headLagSecondsFor, holderAt, skewSecondsFor, solidificationBreach, type AttributionFacts, type Holding } from './rules';

/**
 * The reference model's attribution rule (design.md §4, §4b) on a table of hand-made holdings and
 * evidence of when a block was mined: pure functions, no process, no database.
 */
describe('simulation model: attribution by the evidence of when a block was mined', () => {
  const CHAIN = 'ethereum-local';
  const ADDRESS = '0xaaaa';
  const L = 2; // seconds: HEAD_LAG_SECONDS
  const SEC = 1000;
  const T = 1_800_000_000_000;
  const A = { kind: 'order' as const, id: 'ord_A' };
  const B = { kind: 'deposit' as const, id: 'dep_B' };
  const held = (holder: Holding['holder'], startMs: number, endMs: number | null): Holding => ({ holder, address: ADDRESS, startMs, endMs });
  /** Mined after T + afterS seconds and by T + byS seconds (null: never). */
  const mined = (afterS: number | null, byS: number | null, to = ADDRESS): AttributionFacts => ({
    to,
    minedAfterMs: afterS === null ? null : T + afterS * SEC,
    minedByMs: byS === null ? null : T + byS * SEC,
  });

  const cases: { name: string; holdings: Holding[]; t: AttributionFacts; want: Holding['holder'] | null }[] = [
    { name: 'mined and seen while held', holdings: [held(A, T - 10 * SEC, T + 10 * SEC)], t: mined(0, 1), want: A },
    { name: 'nobody ever held it', holdings: [], t: mined(0, 1), want: null },
    { name: 'another address held at the time does not count', holdings: [{ ...held(A, T - SEC, null), address: '0xbbbb' }], t: mined(0, 1), want: null },
    { name: 'looked for within L before the start, not found, seen after: the holding\'s', holdings: [held(B, T + SEC, null)], t: mined(0, 1.5), want: B },
    { name: 'looked for exactly L before the start', holdings: [held(B, T + L * SEC, null)], t: mined(0, L + 1), want: B },
    { name: 'the last look more than L before the start proves nothing', holdings: [held(B, T + L * SEC + 1, null)], t: mined(0, L + 1), want: null },
    { name: 'seen before the start: existed then', holdings: [held(B, T + SEC, null)], t: mined(0, 0.5), want: null },
    { name: 'seen exactly at the start', holdings: [held(B, T + SEC, null)], t: mined(0, 1), want: null },
    { name: 'never looked below it', holdings: [held(B, T - SEC, null)], t: mined(null, 1), want: null },
    { name: 'seen by the end', holdings: [held(A, T - 100 * SEC, T + SEC)], t: mined(0, 1), want: A },
    { name: 'seen only after the end', holdings: [held(A, T - 100 * SEC, T + SEC)], t: mined(0, 1.2), want: null },
    { name: 'in the cooldown between two holders', holdings: [held(A, T - 100 * SEC, T - 10 * SEC), held(B, T + 52 * SEC, null)], t: mined(0, 1), want: null },
    { name: 'after a cooldown of S, the next holder', holdings: [held(A, T - 100 * SEC, T - 62 * SEC), held(B, T, null)], t: mined(0, 1), want: B },
    { name: 'a minedAfter later than minedBy is cut back', holdings: [held(B, T + SEC, null)], t: mined(5, 0.5), want: null },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(holderAt(c.holdings, c.t, L)).to.deep.equal(c.want);
      expect(holderAt([...c.holdings].reverse(), c.t, L)).to.deep.equal(c.want);
    });
  }

  it('an order counts its token on its chain up to the grace end, with no lower bound', () => {
    const order = { chainId: CHAIN, currency: 'USDT', graceEndsAtMs: T };
    const t = { chainId: CHAIN, currency: 'USDT', blockTimeMs: T };
    expect(countsTowardOrder(order, t)).to.equal(true);
    expect(countsTowardOrder(order, { ...t, blockTimeMs: T - 3_600 * SEC })).to.equal(true);
    expect(countsTowardOrder(order, { ...t, blockTimeMs: T + SEC })).to.equal(false);
    expect(countsTowardOrder(order, { ...t, currency: 'USDC' })).to.equal(false);
    expect(countsTowardOrder(order, { ...t, chainId: 'polygon-amoy' })).to.equal(false);
  });

  it('S is block time × 2 + 60 s unless overridden; L defaults to 2 and stays below S', () => {
    expect(skewSecondsFor(1000, undefined)).to.equal(62);
    expect(skewSecondsFor(12_000, undefined)).to.equal(84);
    expect(skewSecondsFor(12_000, ' 5 ')).to.equal(5);
    expect(headLagSecondsFor(62, undefined, undefined)).to.equal(2);
    expect(headLagSecondsFor(62, '7', '3')).to.equal(7);
    expect(headLagSecondsFor(5, undefined, '30')).to.equal(4);
  });
  it('a transfer the service never recorded gets no prediction (its absence is an invariant violation)', () => {
    const base = { identity: '0xabc:0', chainId: CHAIN, to: ADDRESS, currency: 'USDT', amount: 5n, blockNumber: 90, blockTimeMs: T + SEC, canonical: true };
    const input = (evidence?: { minedAfterMs: number | null; minedByMs: number | null }) => ({
      transfers: [{ ...base, evidence }],
      holdings: [held(B, T, null)],
      orders: [],
      bindings: new Map([[B.id, 'org_1']]),
      endpoints: [],
      lagSeconds: new Map([[CHAIN, L]]),
    });
    expect(predict(input({ minedAfterMs: T + SEC, minedByMs: T + 2 * SEC })).attribution.get('0xabc:0')).to.deep.equal(B);
    expect(predict(input()).attribution.has('0xabc:0')).to.equal(false);
  });

  it('Tron credits at solidification: a confirmation before it, or in a block never solidified, is a breach', () => {
    const solidified = new Map([[7, { hash: 'aa07', atMs: T }]]);
    expect(solidificationBreach({ blockNumber: 7, blockHash: 'AA07', confirmedAtMs: T + 5 }, solidified)).to.equal(null);
    expect(solidificationBreach({ blockNumber: 7, blockHash: 'aa07', confirmedAtMs: T }, solidified)).to.equal(null);
    expect(solidificationBreach({ blockNumber: 7, blockHash: 'aa07', confirmedAtMs: T - 500 }, solidified)).to.match(/500 ms before block 7/);
    expect(solidificationBreach({ blockNumber: 7, blockHash: 'bb07', confirmedAtMs: T + 5 }, solidified)).to.match(/aa07 was solidified/);
    expect(solidificationBreach({ blockNumber: 8, blockHash: 'aa08', confirmedAtMs: T + 5 }, solidified)).to.match(/never solidified/);
  });
});
