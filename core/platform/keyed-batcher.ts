/**
 * Group commit for a hot statement: per key, at most `maxInFlight` runs at a time; work that
 * arrives while they are busy waits and goes out together (up to `maxBatch` items) as soon as one
 * of them finishes. A lone item goes out at once, so nothing waits when there is no contention;
 * under load one statement (one round trip, one commit) serves several items.
 *
 * The batcher only coordinates: `run` decides what a batch does and answers one outcome per item,
 * in order. A batch that fails fails every item of it with the same error.
 */
export class KeyedBatcher<Item, Outcome> {
  private readonly lanes = new Map<string, Lane<Item, Outcome>>();

  constructor(private readonly limits: { maxInFlight: number; maxBatch: number }) {
    if (!(limits.maxInFlight >= 1 && limits.maxBatch >= 1)) throw new Error('KeyedBatcher needs maxInFlight and maxBatch of at least 1');
  }

  /** `run` runs this item's batch (the first waiting item's `run` serves the whole batch). */
  submit(key: string, item: Item, run: (items: Item[]) => Promise<Outcome[]>): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      let lane = this.lanes.get(key);
      if (!lane) {
        lane = { inFlight: 0, waiting: [] };
        this.lanes.set(key, lane);
      }
      lane.waiting.push({ item, run, resolve, reject });
      if (lane.inFlight < this.limits.maxInFlight) this.dispatch(key, lane);
    });
  }

  /** Items waiting behind busy runs, all keys (for tests and metrics). */
  waiting(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.waiting.length;
    return n;
  }

  private dispatch(key: string, lane: Lane<Item, Outcome>): void {
    const batch = lane.waiting.splice(0, this.limits.maxBatch);
    lane.inFlight += 1;
    const settle = async () => {
      try {
        const outcomes = await batch[0].run(batch.map((w) => w.item));
        if (outcomes.length !== batch.length) throw new Error(`A batch of ${batch.length} answered ${outcomes.length} outcomes`);
        batch.forEach((w, i) => w.resolve(outcomes[i]));
      } catch (err) {
        for (const w of batch) w.reject(err);
      } finally {
        lane.inFlight -= 1;
        if (lane.waiting.length > 0) this.dispatch(key, lane);
        else if (lane.inFlight === 0) this.lanes.delete(key);
      }
    };
    void settle();
  }
}

interface Waiting<Item, Outcome> {
  item: Item;
  run: (items: Item[]) => Promise<Outcome[]>;
  resolve(outcome: Outcome): void;
  reject(err: unknown): void;
}

interface Lane<Item, Outcome> {
  inFlight: number;
  waiting: Waiting<Item, Outcome>[];
}
