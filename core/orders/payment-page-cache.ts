import postgres from 'postgres';
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
 * Nothing is served from memory unless this process is listening: before the LISTEN connection is
 * up, and from the moment it closes until it is back (when it forgets everything, since changes
 * meanwhile went unheard), every read goes to Postgres. A read that an invalidation overtook is
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

  /** The facts of a token: from memory while listening and nothing changed, else by `read`. */
  async find(token: string, read: () => Promise<PaymentPageFacts | null>): Promise<PaymentPageFacts | null> {
    if (this.listening) {
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

  /** Orders kept now. */
  get size(): number {
    return this.entries.size;
  }

  /** Whether it serves from memory (its listener is up). */
  get isListening(): boolean {
    return this.listening;
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
 * The LISTEN connection that keeps a PaymentPageCache honest: one dedicated connection (counted
 * in DATABASE_POOL_SIZE, core/platform/config.ts dedicatedConnectionsFor). The cache is on once the LISTEN
 * has succeeded and off from the moment the connection closes; then it listens again (a new
 * connection), retrying every second while Postgres is unreachable.
 */
export async function listenForPaymentPageChanges(databaseUrl: string, cache: PaymentPageCache, logger: Logger): Promise<PaymentPageListener> {
  let closed = false;
  let subscribing: Promise<void> | null = null;
  const sql = postgres(databaseUrl, {
    max: 1,
    onnotice: () => {},
    connect_timeout: 5,
    // Held for as long as the process runs (postgres.js would otherwise recycle it now and then).
    idle_timeout: 0,
    max_lifetime: null,
    onnotify: (channel, orderId) => {
      if (channel === PAYMENT_PAGE_CHANNEL) cache.invalidate(orderId);
    },
    onclose: () => {
      cache.setListening(false);
      if (!closed) subscribe();
    },
  } as postgres.Options<Record<string, never>> & { onnotify: (channel: string, payload: string) => void });
  const listenOnce = async () => {
    await sql.unsafe(`listen "${PAYMENT_PAGE_CHANNEL}"`);
    if (!closed) cache.setListening(true);
  };
  const subscribe = () => {
    subscribing ??= (async () => {
      while (!closed) {
        try {
          await listenOnce();
          break;
        } catch (err) {
          logger.warn({ err: { message: (err as Error).message } }, 'payment page listener unavailable; status reads go to Postgres');
          await new Promise((resolve) => setTimeout(resolve, 1000).unref());
        }
      }
      subscribing = null;
    })();
  };
  await listenOnce();
  return {
    async close() {
      closed = true;
      cache.setListening(false);
      await subscribing;
      await sql.end({ timeout: 5 });
    },
  };
}
