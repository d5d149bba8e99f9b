import { expect } from 'chai';
import { clockWindows } from '../../core/detection/clock-witness';
import { recordHeadObservation } from '../../core/detection/head-observations';
import { testDb } from '../helpers/harness';

/**
 * The block-timestamp witness (core/detection/clock-witness.ts) measured from stored looks: a block
 * mined while no look could be taken is placed by its timestamp only when the looks on both sides
 * agree on how the chain's clock sits against the service's.
 */
describe('clock witness: measuring the chain clock from the looks', () => {
  const T = 2;
  const L = 2;
  const base = Date.parse('2026-03-01T10:00:00.000Z');
  let n = 0;

  /**
   * A chain whose blocks h (from `from`) are mined at base + h seconds and stamped `offset(h)`
   * seconds off that; each is looked at 0.3 s after it was mined (a look a second before still saw
   * the one below). Heights in `gap` are mined but never looked at.
   */
  async function chainWith(heights: number[], offset: (h: number) => number): Promise<string> {
    const chainId = `clock-test-${process.pid}-${n++}`;
    for (const h of heights) {
      const minedAt = base + h * 1000;
      // The look before it, a second earlier, saw the height below.
      await recordHeadObservation(testDb(), { chainId, head: h - 1, askedAt: new Date(minedAt - 700), answeredAt: new Date(minedAt - 690), hash: `0x${(h - 1).toString(16)}`, blockTimestamp: Math.floor((minedAt - 1000) / 1000 + offset(h - 1)) });
      await recordHeadObservation(testDb(), { chainId, head: h, askedAt: new Date(minedAt + 300), answeredAt: new Date(minedAt + 310), hash: `0x${h.toString(16)}`, blockTimestamp: Math.floor(minedAt / 1000 + offset(h)) });
    }
    return chainId;
  }
  const heights = [1, 2, 3, 4, 5, 40, 41, 42];
  const stamp = (h: number, offset: number) => Math.floor((base + h * 1000) / 1000 + offset);

  it('a block mined in a gap of the looks gets a window around its mining, on a steady clock however far off', async () => {
    for (const off of [0, -37, 400]) {
      const chainId = await chainWith(heights, () => off);
      const block = { number: 20, timestamp: stamp(20, off) };
      const window = (await clockWindows(testDb(), chainId, [block], T, L)).get(20);
      expect(window, `offset ${off}`).to.not.equal(undefined);
      const minedAt = base + 20_000;
      expect(window!.after.getTime()).to.be.at.most(minedAt);
      expect(window!.by.getTime()).to.be.at.least(minedAt);
      // Tight enough to decide a hand-over some seconds away: within T + L + the look interval.
      expect(minedAt - window!.after.getTime()).to.be.at.most((T + L + 1.5) * 1000);
      expect(window!.by.getTime() - minedAt).to.be.at.most((T + 1.5) * 1000);
    }
  });

  it('no window when the chain clock jumped between the looks on each side, or when one side has no look', async () => {
    const jumped = await chainWith(heights, (h) => (h >= 40 ? 120 : 0));
    expect((await clockWindows(testDb(), jumped, [{ number: 20, timestamp: stamp(20, 0) }], T, L)).size).to.equal(0);
    const noneAbove = await chainWith([1, 2, 3], () => 0);
    expect((await clockWindows(testDb(), noneAbove, [{ number: 20, timestamp: stamp(20, 0) }], T, L)).size).to.equal(0);
  });
});
