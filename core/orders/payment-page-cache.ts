import type { Database } from '../../db/client';
import { listenToChannel } from '../platform/listener';
import type { Logger } from '../platform/logger';
import type { PaymentPageFacts } from './payment-page';

/** Where migration 0007's triggers announce a committed change to an order or its transfers (payload: the order id). */
export const PAYMENT_PAGE_CHANNEL = 'stablegate_payment_pages';

/** Open orders whose facts one process keeps at most; past that the oldest kept is dropped. */
const MAX_ENTRIES = 20_000;
/** Invalidations remembered for reads in flight; past that they are all forgotten at once (see `forget`). */
const MAX_RECENT = 10_000;

/**
 * The facts of open orders' payment pages (findPaymentPage), kept in this process's memory so that
 * every poll of an open page (GET /pay/<token>/status) does not read Postgres again while nothing
 * changed. Postgres says when something did: migration 0007's triggers NOTIFY the order's id on
 * every committed change to the order or to a transfer bound to it, and every listening process
 * forgets that order. A committed change therefore shows at the next poll after its notification
 * arrives (bench:pages measures it), in every API process, with no time-to-live to tune.
 *
 * Nothing is served from memory unless this process is listening and proven to hear (its
 * listener's pings come back within the deadline): before the LISTEN connection is up, and from
 * the moment it closes or goes silent until a new one is proven (when it forgets everything, since
 * changes meanwhile went unheard), every read goes to Postgres. A read that an invalidation overtook is
 * answered but not kept. Only orders that can still change what the page shows are kept (a
 * completed or expired order's page stops polling, and its redirect reads the organization's
 * settings). The state is still decided per request from these facts and the clock
 * (presentPaymentPage), so an order passing its expiry needs no notification.
 */
export class PaymentPageCache {
  private readonly entries = new Map<string, PaymentPageFacts>();
  private readonly tokenOfOrder = new Map<string, string>();
  /** Invalidation counter, and per order the value it had at that order's last invalidation. */
  private seq = 0;
  private readonly recent = new Map<string, number>();
  /** Reads begun before this value are not kept (everything was forgotten after they began). */
  private floor = 0;
  private listening = false;
  /** Whether the listener is proven to hear changes now (checked per read: its pings may be overdue before it says so). */
  private hearing: () => boolean = () => true;

  /** The facts of a token: from memory while listening and nothing changed, else by `read`. */
  async find(token: string, read: () => Promise<PaymentPageFacts | null>): Promise<PaymentPageFacts | null> {
    if (this.listening && this.hearing()) {
      const kept = this.entries.get(token);
      if (kept) return kept;
    }
    const began = this.seq;
    const facts = await read();
    if (facts && this.listening && began >= this.floor && canChange(facts) && (this.recent.get(facts.order.id) ?? 0) <= began) {
      this.keep(token, facts);
    }
    return facts;
  }

  /** A committed change to this order or its transfers. */
  invalidate(orderId: string): void {
    this.seq++;
    if (this.recent.size >= MAX_RECENT) this.forget();
    this.recent.set(orderId, this.seq);
    const token = this.tokenOfOrder.get(orderId);
    if (token !== undefined) {
      this.entries.delete(token);
      this.tokenOfOrder.delete(orderId);
    }
  }

  /** Listening (true) or not (false): either way, what was kept may have missed changes. */
  setListening(listening: boolean): void {
    this.listening = listening;
    this.entries.clear();
    this.tokenOfOrder.clear();
    this.seq++;
    this.forget();
  }

  /** Serve from memory only while `hearing` says so (the listener's liveness, core/platform/listener.ts). */
  trustWhile(hearing: () => boolean): void {
    this.hearing = hearing;
  }

  /** Orders kept now. */
  get size(): number {
    return this.entries.size;
  }

  /** Whether it serves from memory (its listener is up). */
  get isListening(): boolean {
    return this.listening && this.hearing();
  }

  private forget(): void {
    this.floor = this.seq;
    this.recent.clear();
  }

  private keep(token: string, facts: PaymentPageFacts): void {
    if (this.entries.size >= MAX_ENTRIES && !this.entries.has(token)) {
      const [oldest] = this.entries.keys();
      const oldestFacts = this.entries.get(oldest);
      this.entries.delete(oldest);
      if (oldestFacts) this.tokenOfOrder.delete(oldestFacts.order.id);
    }
    this.entries.set(token, facts);
    this.tokenOfOrder.set(facts.order.id, token);
  }
}

function canChange(facts: PaymentPageFacts): boolean {
  return facts.order.status !== 'completed' && facts.order.status !== 'expired';
}

export interface PaymentPageListener {
  close(): Promise<void>;
}

/**
 * The LISTEN connection that keeps a PaymentPageCache honest (core/platform/listener.ts): one
 * dedicated connection (counted in DATABASE_POOL_SIZE, core/platform/config.ts
 * dedicatedConnectionsFor). The cache serves from memory only while the listener hears its own
 * pings: a connection that closed or went silent (black-holed) empties it, and status reads go to
 * Postgres until a new connection is proven, so a page is never stale by more than `deadlineMs`.
 */
export async function listenForPaymentPageChanges(
  target: { databaseUrl: string; db: Database },
  cache: PaymentPageCache,
  logger: Logger,
  options: { deadlineMs?: number } = {},
): Promise<PaymentPageListener> {
  const listener = await listenToChannel(
    { ...target, channel: PAYMENT_PAGE_CHANNEL, logger, deadlineMs: options.deadlineMs },
    {
      onNotify: (orderId) => cache.invalidate(orderId),
      onHearing: () => cache.setListening(true),
      onDeaf: () => cache.setListening(false),
    },
  );
  cache.trustWhile(() => listener.hearing);
  return {
    async close() {
      cache.setListening(false);
      await listener.close();
    },
  };
}
