import { expect } from 'chai';
import { KeyedBatcher } from '../../core/platform/keyed-batcher';

/** A run whose batches finish when the test says so: what each batch held, in order. */
function controlledRun() {
  const batches: { items: number[]; finish(outcomes?: string[]): void; fail(err: Error): void }[] = [];
  const run = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push({ items, finish: (outcomes) => resolve(outcomes ?? items.map((i) => `done ${i}`)), fail: reject });
    });
  return { batches, run };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('KeyedBatcher', () => {
  it('runs a lone item at once, alone', async () => {
    const batcher = new KeyedBatcher<number, string>({ maxInFlight: 1, maxBatch: 8 });
    const { batches, run } = controlledRun();
    const one = batcher.submit('k', 1, run);
    expect(batches.map((b) => b.items)).to.deep.equal([[1]]);
    batches[0].finish();
    expect(await one).to.equal('done 1');
  });

  it('items that arrive while the lane is busy go together when a run finishes, at most maxBatch per run, in arrival order', async () => {
    const batcher = new KeyedBatcher<number, string>({ maxInFlight: 2, maxBatch: 3 });
    const { batches, run } = controlledRun();
    const all = [1, 2, 3, 4, 5, 6, 7].map((i) => batcher.submit('k', i, run));
    expect(batches.map((b) => b.items)).to.deep.equal([[1], [2]]);
    expect(batcher.waiting()).to.equal(5);
    batches[1].finish();
    await tick();
    expect(batches.map((b) => b.items)).to.deep.equal([[1], [2], [3, 4, 5]]);
    batches[0].finish();
    await tick();
    expect(batches.map((b) => b.items)).to.deep.equal([[1], [2], [3, 4, 5], [6, 7]]);
    batches[2].finish();
    batches[3].finish(['six', 'seven']);
    expect(await Promise.all(all)).to.deep.equal(['done 1', 'done 2', 'done 3', 'done 4', 'done 5', 'six', 'seven']);
    expect(batcher.waiting()).to.equal(0);
  });

  it('keys do not wait for each other', () => {
    const batcher = new KeyedBatcher<number, string>({ maxInFlight: 1, maxBatch: 8 });
    const { batches, run } = controlledRun();
    void batcher.submit('a', 1, run);
    void batcher.submit('b', 2, run);
    void batcher.submit('a', 3, run);
    expect(batches.map((b) => b.items)).to.deep.equal([[1], [2]]);
    expect(batcher.waiting()).to.equal(1);
  });

  it('a failed run fails each of its items with its error; the lane goes on with the next items', async () => {
    const batcher = new KeyedBatcher<number, string>({ maxInFlight: 1, maxBatch: 8 });
    const { batches, run } = controlledRun();
    const first = batcher.submit('k', 1, run);
    const waiting = [2, 3].map((i) => batcher.submit('k', i, run));
    const boom = new Error('boom');
    batches[0].fail(boom);
    expect(await first.catch((e) => e)).to.equal(boom);
    await tick();
    expect(batches[1].items).to.deep.equal([2, 3]);
    batches[1].fail(boom);
    expect(await Promise.all(waiting.map((p) => p.catch((e) => e)))).to.deep.equal([boom, boom]);
    const after = batcher.submit('k', 4, run);
    batches[2].finish();
    expect(await after).to.equal('done 4');
  });

  it('a run that answers a wrong number of outcomes fails its items rather than mismatch them', async () => {
    const batcher = new KeyedBatcher<number, string>({ maxInFlight: 1, maxBatch: 8 });
    const { batches, run } = controlledRun();
    void batcher.submit('k', 1, run);
    const pair = [2, 3].map((i) => batcher.submit('k', i, run));
    batches[0].finish();
    await tick();
    batches[1].finish(['only one']);
    for (const p of pair) expect(((await p.catch((e) => e)) as Error).message).to.match(/A batch of 2 answered 1 outcomes/);
  });
});
