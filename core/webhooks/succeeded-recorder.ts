/**
 * Gathers the succeeded attempts of one delivery batch and records them together: once no other
 * send of the batch is in flight, or `waitMs` after the first one began to wait. If recording them
 * together fails (a conflict with a concurrent record), each is recorded on its own instead, and
 * settles with its own outcome. `succeeded` settles when that attempt is recorded; `otherEnded`
 * says a send of the batch ended otherwise (it is recorded by its own path).
 */
export interface SucceededRecorder<Item> {
  succeeded(item: Item): Promise<void>;
  otherEnded(): void;
}

export function succeededRecorder<Item>(opts: {
  /** Sends of the batch still in flight (each ends with one succeeded or otherEnded call). */
  inFlight: number;
  waitMs: number;
  recordTogether(items: Item[]): Promise<void>;
  recordOne(item: Item): Promise<void>;
  /** Told when recording together failed, before each is recorded on its own. */
  onFallBack?(count: number, err: unknown): void;
}): SucceededRecorder<Item> {
  type Waiting = { item: Item; resolve: () => void; reject: (err: unknown) => void };
  let inFlight = opts.inFlight;
  let waiting: Waiting[] = [];
  let timer: NodeJS.Timeout | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    const batch = waiting;
    waiting = [];
    if (batch.length === 0) return;
    opts.recordTogether(batch.map((w) => w.item)).then(
      () => batch.forEach((w) => w.resolve()),
      (err) => {
        opts.onFallBack?.(batch.length, err);
        for (const w of batch) opts.recordOne(w.item).then(() => w.resolve(), w.reject);
      },
    );
  };
  const ended = () => {
    inFlight--;
    if (inFlight === 0) flush();
  };
  return {
    succeeded(item: Item): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        if (!timer && inFlight > 1) timer = setTimeout(flush, opts.waitMs);
        ended();
      });
    },
    otherEnded: ended,
  };
}
