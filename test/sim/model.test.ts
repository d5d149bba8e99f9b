import { expect } from 'chai';
import { predict } from './model';
import { countsTowardOrder, holderAt, skewLetsNextTake, skewSecondsFor, solidificationBreach, type AttributionFacts, type Holding } from './rules';

/**
 * The reference model's attribution rule (design.md §4, §4b) on a table of hand-made holdings:
 * pure functions, no process, no database.
 */
describe('simulation model: attribution with the clock-skew rule', () => {
  const CHAIN = 'ethereum-local';
  const ADDRESS = '0xaaaa';
  const S = 62; // seconds: block time 1 s × 2 + 60
  const SEC = 1000;
  const T = 1_800_000_000_000; // the block time in the cases below (a whole second)
  const A = { kind: 'order' as const, id: 'ord_A' };
  const B = { kind: 'deposit' as const, id: 'dep_B' };
  const held = (holder: Holding['holder'], startMs: number, endMs: number | null, headsSeen: Record<string, number> = { [CHAIN]: 100 }): Holding => ({
    holder,
    address: ADDRESS,
    startMs,
    endMs,
    headsSeen,
  });
  const transfer = (over: Partial<AttributionFacts> = {}): AttributionFacts => ({ to: ADDRESS, chainId: CHAIN, blockNumber: 101, blockTimeMs: T, ...over });

  const cases: { name: string; holdings: Holding[]; t?: Partial<AttributionFacts>; want: Holding['holder'] | null }[] = [
    { name: 'held at the block time', holdings: [held(A, T - 10 * SEC, T + 10 * SEC)], want: A },
    { name: 'held from exactly the block time (start is inclusive)', holdings: [held(A, T, null)], want: A },
    { name: 'held until exactly the block time is not held then (end is exclusive); nobody next', holdings: [held(A, T - 100 * SEC, T)], want: null },
    { name: 'held at the block time even when the next began within S', holdings: [held(A, T - 10 * SEC, T + 1), held(B, T + 2 * SEC, null, { [CHAIN]: 50 })], want: A },
    { name: 'nobody ever held it', holdings: [], want: null },
    { name: 'another address held at the time does not count', holdings: [{ ...held(A, T - SEC, null), address: '0xbbbb' }], want: null },
    { name: 'gap: B began within S, block above heads_seen, no previous', holdings: [held(B, T + 500, null)], want: B },
    {
      name: 'gap: B began within S, block above heads_seen, previous ended long before',
      holdings: [held(A, T - 500 * SEC, T - 200 * SEC), held(B, T + 5 * SEC, null)],
      want: B,
    },
    { name: 'block at heads_seen: it existed when B began', holdings: [held(B, T + 500, null)], t: { blockNumber: 100 }, want: null },
    { name: 'block below heads_seen', holdings: [held(B, T + 500, null)], t: { blockNumber: 42 }, want: null },
    { name: 'block one above heads_seen', holdings: [held(B, T + 500, null, { [CHAIN]: 100 })], t: { blockNumber: 101 }, want: B },
    { name: 'the chain absent from heads_seen counts as nothing seen', holdings: [held(B, T + 500, null, {})], t: { blockNumber: 1 }, want: B },
    { name: "another chain's head does not matter", holdings: [held(B, T + 500, null, { 'polygon-amoy': 10_000 })], t: { blockNumber: 1 }, want: B },
    { name: 'B began exactly S after the block time', holdings: [held(B, T + S * SEC, null)], want: B },
    { name: 'B began more than S after the block time', holdings: [held(B, T + S * SEC + 1, null)], want: null },
    {
      name: 'previous ended exactly S before B began',
      holdings: [held(A, T - 300 * SEC, T + 2 * SEC - S * SEC), held(B, T + 2 * SEC, null)],
      want: B,
    },
    {
      name: 'previous ended less than S before B began',
      holdings: [held(A, T - 300 * SEC, T + 2 * SEC - S * SEC + 1), held(B, T + 2 * SEC, null)],
      want: null,
    },
    {
      name: 'previous (same kind) ended just before the block time, B right after: nobody',
      holdings: [held(A, T - 300 * SEC, T - 1), held({ kind: 'order', id: 'ord_B' }, T + 1, null)],
      want: null,
    },
    {
      name: 'only the holding just before B is the previous one',
      holdings: [held(A, T - 900 * SEC, T - 800 * SEC), held({ kind: 'order', id: 'ord_C' }, T - 300 * SEC, T - 10 * SEC), held(B, T + SEC, null)],
      want: null,
    },
    {
      name: 'the first holding after the block time is B, not a later one',
      holdings: [held(B, T + SEC, T + 2 * SEC), held({ kind: 'order', id: 'ord_C' }, T + 100 * SEC, null, {})],
      want: B,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(holderAt(c.holdings, transfer(c.t), S)).to.deep.equal(c.want);
      // The holdings' order in the input does not matter.
      expect(holderAt([...c.holdings].reverse(), transfer(c.t), S)).to.deep.equal(c.want);
    });
  }

  it('a previous holding still open keeps B from taking the transfer', () => {
    // The database forbids two open assignments of an address, so through holderAt an open
    // previous one would hold the block time itself; the condition is checked on its own here.
    const next = held(B, T + 2 * SEC, null);
    expect(skewLetsNextTake(held(A, T - 500 * SEC, null), next, transfer(), S)).to.equal(false);
    expect(skewLetsNextTake(held(A, T - 500 * SEC, T - 400 * SEC), next, transfer(), S)).to.equal(true);
    expect(skewLetsNextTake(null, next, transfer(), S)).to.equal(true);
  });

  it('an order counts its token on its chain up to the grace end, with no lower bound', () => {
    const order = { chainId: CHAIN, currency: 'USDT', graceEndsAtMs: T };
    const t = { chainId: CHAIN, currency: 'USDT', blockTimeMs: T };
    expect(countsTowardOrder(order, t)).to.equal(true);
    expect(countsTowardOrder(order, { ...t, blockTimeMs: T - 3_600 * SEC })).to.equal(true);
    expect(countsTowardOrder(order, { ...t, blockTimeMs: T + SEC })).to.equal(false);
    expect(countsTowardOrder(order, { ...t, currency: 'USDC' })).to.equal(false);
    expect(countsTowardOrder(order, { ...t, chainId: 'polygon-amoy' })).to.equal(false);
  });

  it('S is block time × 2 + 60 s unless overridden', () => {
    expect(skewSecondsFor(1000, undefined)).to.equal(62);
    expect(skewSecondsFor(12_000, undefined)).to.equal(84);
    expect(skewSecondsFor(12_000, ' 5 ')).to.equal(5);
  });
  it('a re-mined transaction keeps the holder of the block it was first seen in', () => {
    // First seen in block 101 at T, where B takes it by the skew rule; re-mined in block 90 of a
    // fork (at or below B's heads_seen): decided again it would belong to nobody.
    const base = { identity: '0xabc:0', chainId: CHAIN, to: ADDRESS, currency: 'USDT', amount: 5n, blockNumber: 90, blockTimeMs: T + SEC, canonical: true };
    const input = (firstSeen?: { blockNumber: number; blockTimeMs: number }) => ({
      transfers: [{ ...base, firstSeen }],
      holdings: [held(B, T + 2 * SEC, null)],
      orders: [],
      bindings: new Map([[B.id, 'org_1']]),
      endpoints: [],
      skewSeconds: new Map([[CHAIN, S]]),
    });
    expect(predict(input({ blockNumber: 101, blockTimeMs: T })).attribution.get('0xabc:0')).to.deep.equal(B);
    expect(predict(input()).attribution.get('0xabc:0')).to.equal(null);
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
