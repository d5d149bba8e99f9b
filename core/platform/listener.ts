import postgres from 'postgres';
import { randomBytes } from 'node:crypto';
import { sql as drizzleSql } from 'drizzle-orm';
import { prepareStatement, type Database } from '../../db/client';
import { deadlineOptions } from '../../db/connection-deadline';
import { elapsedMs } from './clock';
import type { Logger } from './logger';

/**
 * How long a listener may go without hearing its own ping before it counts as deaf (default). A
 * TCP connection that is black-holed (a partition, a NAT that dropped the flow, a pooler whose
 * backend died) neither closes nor errors for minutes: only a round trip tells it is alive.
 */
export const DEFAULT_LISTEN_DEADLINE_MS = 2000;
/** Time between attempts to listen again while Postgres cannot be reached. */
const RELISTEN_DELAY_MS = 1000;
/** How long one attempt to listen may take (postgres.js's connect_timeout ends at the handshake, not at the LISTEN's answer). */
const LISTEN_ATTEMPT_DEADLINE_MS = 10_000;
/** Every payload starting with this is a listener's ping, never a message of the channel. */
const PING_PREFIX = '~listener-ping:';

/** The ping: a NOTIFY sent through the process's query pool, heard (or not) on the listening connection. */
const pingStatement = prepareStatement<{ channel: string; payload: string }>(
  'listener.ping',
  drizzleSql`select pg_notify(${drizzleSql.placeholder('channel')}, ${drizzleSql.placeholder('payload')})`,
);

export interface ChannelListenerHandlers {
  /** A notification of the channel (never a ping). Called only while this connection is listening. */
  onNotify(payload: string): void;
  /**
   * The connection is proven to hear the channel: its LISTEN is in place and a ping sent after it
   * came back. Called at the start and after every loss; whatever was notified while the
   * listener was deaf went unheard, so catch up here.
   */
  onHearing(): void;
  /** The listener may be missing notifications from now on (its connection closed, or a ping did not come back in time). */
  onDeaf(): void;
}

export interface ChannelListenerOptions {
  /** Where the listening connection goes (its own connection, outside the query pool). */
  databaseUrl: string;
  /** The query pool the pings are sent through. */
  db: Database;
  channel: string;
  logger: Logger;
  /** A ping must come back within this many ms, else the listener is deaf until proven again (DEFAULT_LISTEN_DEADLINE_MS). */
  deadlineMs?: number;
}

export interface ChannelListener {
  /**
   * Whether everything committed more than `deadlineMs` ago has been heard: a ping sent less than
   * `deadlineMs` ago came back on this connection (Postgres delivers notifications in commit
   * order, so every change committed before that ping was heard before it). Cheap: read it per
   * request before trusting what the notifications keep up to date.
   */
  readonly hearing: boolean;
  close(): Promise<void>;
}

/**
 * LISTEN on one channel over postgres.js's `sql.listen`, on one dedicated connection, with one
 * reconnect policy and a liveness check. Every deadline/4 the listener NOTIFYs itself through the
 * query pool; when a ping has not come back within the deadline, or postgres.js listened again
 * after its connection closed (what was notified in between is lost), the listener is deaf:
 * `onDeaf`, and the connection is dropped (a black-holed one never closes by itself) and a new one
 * listens, retried every second. It hears again (`onHearing`) once a ping sent on the new
 * LISTEN came back. Used by the webhook fast path and the payment pages' memory of open orders.
 */
export async function listenToChannel(options: ChannelListenerOptions, handlers: ChannelListenerHandlers): Promise<ChannelListener> {
  const { channel, logger, db } = options;
  const deadlineMs = options.deadlineMs ?? DEFAULT_LISTEN_DEADLINE_MS;
  const pingEveryMs = Math.max(10, Math.floor(deadlineMs / 4));
  const pingTag = `${PING_PREFIX}${randomBytes(6).toString('hex')}:`;

  let closed = false;
  /** The connection listening now, and a number that changes with each new one. */
  let connection: postgres.Sql | null = null;
  let generation = 0;
  /** When the last ping heard back was sent (elapsedMs), or -Infinity while not proven. */
  let provenSentAt = Number.NEGATIVE_INFINITY;
  let hearing = false;
  /** Pings sent and not yet heard: their sequence number → when they were sent. */
  const pending = new Map<number, number>();
  let pingSeq = 0;
  let reconnecting: Promise<void> | null = null;
  let unreachableReported = false;
  let firstHearing: (() => void) | null = null;

  const becomeDeaf = () => {
    provenSentAt = Number.NEGATIVE_INFINITY;
    pending.clear();
    if (hearing) {
      hearing = false;
      handlers.onDeaf();
    }
  };

  const heardPing = (seq: number) => {
    const sentAt = pending.get(seq);
    if (sentAt === undefined) return;
    for (const s of pending.keys()) if (s <= seq) pending.delete(s);
    provenSentAt = Math.max(provenSentAt, sentAt);
    if (!hearing) {
      hearing = true;
      if (unreachableReported) logger.info({ channel }, 'listening again');
      unreachableReported = false;
      handlers.onHearing();
      firstHearing?.();
    }
  };

  const sendPing = () => {
    if (closed || connection === null) return;
    const seq = ++pingSeq;
    pending.set(seq, elapsedMs());
    pingStatement.run(db, { channel, payload: `${pingTag}${seq}` }).catch(() => {
      // Postgres unreachable: the ping is not heard, and the deadline makes the listener deaf.
    });
  };

  const connect = async (): Promise<void> => {
    const mine = ++generation;
    // The deadline's socket (db/connection-deadline.ts): keep-alive on the idle listening
    // connection, and one left silent after it was dropped (its goodbye unanswered) is destroyed.
    const sql = postgres(options.databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 5, ...deadlineOptions({ answerWithinMs: LISTEN_ATTEMPT_DEADLINE_MS }) });
    connection = sql;
    let listens = 0;
    try {
      await sql.listen(
        channel,
        (payload) => {
          if (mine !== generation || closed) return;
          if (payload.startsWith(PING_PREFIX)) {
            if (payload.startsWith(pingTag)) heardPing(Number(payload.slice(pingTag.length)));
            return;
          }
          handlers.onNotify(payload);
        },
        () => {
          if (mine !== generation || closed) return;
          // Again after a reconnect of postgres.js: notifications in between were lost.
          if (listens++ > 0) becomeDeaf();
          sendPing();
        },
      );
    } catch (err) {
      if (connection === sql) connection = null;
      void sql.end({ timeout: 0 }).catch(() => {});
      throw err;
    }
  };

  /** Drops the current connection (it may never close by itself) and listens on a new one until that works. */
  const reconnect = () => {
    reconnecting ??= (async () => {
      const old = connection;
      connection = null;
      generation++;
      if (old) void old.end({ timeout: 0 }).catch(() => {});
      while (!closed) {
        try {
          await withDeadline(connect(), LISTEN_ATTEMPT_DEADLINE_MS, () => {
            // Connected, then silent before the LISTEN was answered: drop it and try again.
            const stuck = connection;
            connection = null;
            generation++;
            if (stuck) void stuck.end({ timeout: 0 }).catch(() => {});
          });
          break;
        } catch (err) {
          if (!unreachableReported) {
            logger.warn({ channel, err: { message: (err as Error).message } }, 'cannot listen; retrying every second');
            unreachableReported = true;
          }
          await new Promise((resolve) => setTimeout(resolve, RELISTEN_DELAY_MS).unref());
        }
      }
      reconnecting = null;
    })();
  };

  const check = () => {
    if (closed) return;
    const now = elapsedMs();
    // Pings are heard in the order sent: the first pending one is the oldest.
    const [oldestPending = Number.POSITIVE_INFINITY] = pending.values();
    const overdue = now - oldestPending > deadlineMs || (hearing && now - provenSentAt > deadlineMs);
    if (overdue && reconnecting === null) {
      if (hearing) logger.warn({ channel, deadlineMs }, 'a ping was not heard within the deadline; listening on a new connection');
      unreachableReported = true;
      becomeDeaf();
      reconnect();
      return;
    }
    sendPing();
  };

  await connect();
  const timer = setInterval(check, pingEveryMs);
  timer.unref();
  // Return hearing (the first ping back), so that a caller's memory is on from the start.
  await new Promise<void>((resolve) => {
    firstHearing = resolve;
    if (hearing) resolve();
    setTimeout(resolve, deadlineMs).unref();
  });
  firstHearing = null;

  return {
    get hearing() {
      return hearing && elapsedMs() - provenSentAt <= deadlineMs;
    },
    async close() {
      closed = true;
      clearInterval(timer);
      becomeDeaf();
      await reconnecting;
      const sql = connection;
      connection = null;
      await sql?.end({ timeout: 5 });
    },
  };
}

/** `work`, or a rejection after `ms` (calling `onTimeout` first). */
async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new Error(`no answer to LISTEN within ${ms} ms`));
    }, ms);
    timer.unref();
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
    work.catch(() => {});
  }
}
