import net from 'node:net';
import { Duplex } from 'node:stream';

/**
 * A deadline on every database call. postgres.js has no per-query timeout: a query on a pooled
 * connection that went silent (a failover to a new host, a NAT or conntrack flush, a load
 * balancer's idle drop) waits until the kernel gives up, 12 to 15 minutes. So the pool's sockets
 * are ours (postgres.js's `socket` option) and each is watched: one that has written bytes and read
 * none since for longer than `answerWithinMs` is destroyed with a DATABASE_SILENT error, which fails
 * every query on it (catchable; isDatabaseUnreachable knows the code) and lets the pool open a new
 * one. The server's `statement_timeout` is set a little below the bound (`deadlineOptions`), so a
 * statement that is slow but alive fails server-side with its own clear error instead of being cut.
 *
 * TCP keep-alive with a short first delay ends idle connections whose peer has vanished. What
 * should end a connection with unacknowledged data is TCP_USER_TIMEOUT, which Node cannot set
 * without a native addon (nor the keep-alive interval and count, so later probes keep the kernel's
 * 75 s); the write-wait bound here covers that case instead, and keep-alive the idle one.
 */

/** The code of the error a silent connection is destroyed with (isDatabaseUnreachable knows it). */
export const DATABASE_SILENT = 'DATABASE_SILENT';

/** The first keep-alive probe of an idle connection after this long (seconds, postgres.js's `keep_alive`). */
const KEEP_ALIVE_DELAY_SECONDS = 10;

export interface ConnectionDeadline {
  /** How long a connection may wait for an answer (bytes written, none read since) before it is destroyed. */
  answerWithinMs: number;
}

/** The postgres.js options that put a deadline on every call of a client (spread into its options). */
export function deadlineOptions(deadline: ConnectionDeadline): DeadlineOptions {
  return connectionDeadline(deadline).options;
}

export interface DeadlineOptions {
  socket: (options: PgSocketOptions) => Duplex;
  keep_alive: number;
  connection: { statement_timeout: number };
}

/**
 * The deadline's postgres.js options, and `recycle`: destroys every connection of the client
 * (their calls fail with DATABASE_SILENT and the pool opens new ones), for a watchdog that saw
 * work stop without any call failing. Returns how many connections it destroyed.
 */
export function connectionDeadline(deadline: ConnectionDeadline): { options: DeadlineOptions; recycle(reason: string): number } {
  const factory = deadlineSocketFactory(deadline);
  return {
    options: {
      socket: factory,
      keep_alive: KEEP_ALIVE_DELAY_SECONDS,
      connection: { statement_timeout: statementTimeoutFor(deadline.answerWithinMs) },
    },
    recycle: factory.recycle,
  };
}

/**
 * The server's statement_timeout for a bound: a tenth below it (at least 100 ms, at most 2 s), the
 * time for the server's error to come back before the client would cut the connection.
 */
export function statementTimeoutFor(answerWithinMs: number): number {
  const margin = Math.min(2000, Math.max(100, Math.round(answerWithinMs / 10)));
  return Math.max(1, answerWithinMs - margin);
}

/** What postgres.js hands the `socket` option: its parsed options (host and port lists, or a Unix socket path). */
export interface PgSocketOptions {
  host: string[];
  port: number[];
  path?: string | false;
  ssl?: unknown;
}

/** ReadyForQuery ('Z'): the server's answer to each Sync ('S') and simple Query ('Q'), and the end of the start-up. */
const READY_FOR_QUERY = 0x5a;
const ANSWERED_BY_READY = new Set([0x53, 0x51]);

/**
 * Finds the message boundaries of one direction of the protocol (a type byte and a length that
 * counts itself), across chunks; `untypedFirst`: the first message has no type byte (the start-up).
 */
class MessageFramer {
  private bodyLeft = 0;
  private header: number[] = [];
  constructor(private untypedFirst: boolean, private readonly onType: (type: number) => void) {}

  push(chunk: Uint8Array): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.bodyLeft > 0) {
        const n = Math.min(this.bodyLeft, chunk.length - i);
        this.bodyLeft -= n;
        i += n;
        continue;
      }
      const headerLength = this.untypedFirst ? 4 : 5;
      while (this.header.length < headerLength && i < chunk.length) this.header.push(chunk[i++]);
      if (this.header.length < headerLength) return;
      const h = this.header;
      const length = ((h[headerLength - 4] << 24) | (h[headerLength - 3] << 16) | (h[headerLength - 2] << 8) | h[headerLength - 1]) >>> 0;
      if (!this.untypedFirst) this.onType(h[0]);
      this.bodyLeft = Math.max(0, length - 4);
      this.header = [];
      this.untypedFirst = false;
    }
  }
}

/**
 * One connection's debt: whether the server owes it an answer, and since when it has heard
 * nothing while owed. With the protocol in plain text (TCP, Unix socket) the debt is exact: every
 * write is owed until a read, and every Sync or Query until its ReadyForQuery (a pipelined query
 * whose predecessor was answered is still owed). Under TLS postgres.js takes the socket over and
 * only byte counts are seen: bytes written and none read since; a read clears the debt, so a
 * pipelined query left unanswered behind an answered one waits until the next write on that connection.
 */
class Watch {
  /** When the server last owed an answer and had not been heard from since (performance.now()), or null. */
  owedSince: number | null = null;
  private expectedReady = 1;
  private seenReady = 0;
  private lastRead = 0;
  private lastWritten = 0;
  private readonly plaintext: boolean;

  constructor(readonly socket: net.Socket, tls: boolean, onRead: () => void) {
    this.plaintext = !tls;
    if (!this.plaintext) return;
    const outgoing = new MessageFramer(true, (type) => {
      if (ANSWERED_BY_READY.has(type)) this.expectedReady++;
    });
    const incoming = new MessageFramer(false, (type) => {
      if (type === READY_FOR_QUERY) this.seenReady++;
    });
    const write = socket.write;
    socket.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (chunk instanceof Uint8Array) outgoing.push(chunk);
      this.owedSince ??= performance.now();
      return (write as (...args: unknown[]) => boolean).call(socket, chunk, ...rest);
    }) as net.Socket['write'];
    // postgres.js says goodbye (Terminate) with end(chunk), which does not go through write.
    const end = socket.end;
    socket.end = ((...args: unknown[]) => {
      this.owedSince ??= performance.now();
      return (end as (...a: unknown[]) => net.Socket).apply(socket, args);
    }) as net.Socket['end'];
    socket.on('data', (chunk: Buffer) => {
      incoming.push(chunk);
      // Still owed (a pipelined query, the rest of the start-up): the clock starts again, the server is alive.
      this.owedSince = this.seenReady < this.expectedReady ? performance.now() : null;
      onRead();
    });
  }

  /** Brings the debt up to date where only byte counts are seen. */
  sample(now: number, onRead: () => void): void {
    if (this.plaintext) return;
    const read = this.socket.bytesRead;
    const written = this.socket.bytesWritten;
    if (read !== this.lastRead) {
      this.lastRead = read;
      // Written in the same interval: the read may have come before it, so that write is owed from now.
      this.owedSince = written !== this.lastWritten ? now : null;
      onRead();
    } else if (written !== this.lastWritten) {
      this.owedSince ??= now;
    }
    this.lastWritten = written;
  }
}

/**
 * A `socket` option for postgres.js: connects to its host (the list taken in turn, as postgres.js
 * does) and watches the connection. While the database is known to be silent (a connection was
 * destroyed for silence and none has read anything since), one connection at a time tries it and
 * the others fail at once with DATABASE_SILENT: a query queued behind a new connection that will
 * never answer gets its error now, not after one bound per connection attempt ahead of it.
 */
export function deadlineSocketFactory({ answerWithinMs }: ConnectionDeadline): ((options: PgSocketOptions) => Duplex) & { recycle(reason: string): number } {
  if (!(answerWithinMs > 0)) throw new Error(`answerWithinMs must be positive, got ${answerWithinMs}`);
  const watched = new Set<Watch>();
  // Fine enough that the bound is kept within a tenth (at most 250 ms) of itself.
  const tickMs = Math.max(10, Math.min(250, Math.floor(answerWithinMs / 10)));
  let timer: NodeJS.Timeout | null = null;
  let hostIndex = 0;
  let silent = false;
  let probing: Watch | null = null;
  const heard = () => {
    silent = false;
  };

  const check = () => {
    const now = performance.now();
    for (const w of watched) {
      if (w.socket.destroyed) {
        watched.delete(w);
        continue;
      }
      w.sample(now, heard);
      if (w.owedSince !== null && now - w.owedSince > answerWithinMs) {
        watched.delete(w);
        silent = true;
        w.socket.destroy(silentError(answerWithinMs, now - w.owedSince));
      }
    }
    if (watched.size === 0 && timer) {
      clearInterval(timer);
      timer = null;
    }
  };

  const recycle = (reason: string): number => {
    const sockets = [...watched].filter((w) => !w.socket.destroyed);
    watched.clear();
    for (const w of sockets) w.socket.destroy(Object.assign(new Error(`The database connection was recycled: ${reason}`), { code: DATABASE_SILENT }));
    return sockets.length;
  };

  const create = (options: PgSocketOptions): Duplex => {
    if (silent && probing && !probing.socket.destroyed) return failingSocket(silentError(answerWithinMs, null));
    let socket: net.Socket;
    if (options.path) {
      socket = net.connect(options.path);
    } else {
      const host = options.host[hostIndex % options.host.length];
      const port = options.port[hostIndex % options.port.length];
      hostIndex = (hostIndex + 1) % options.host.length;
      socket = net.connect({ host, port });
      // postgres.js reads these for its error messages and TLS's server name.
      Object.assign(socket, { host, port });
    }
    socket.setKeepAlive(true, KEEP_ALIVE_DELAY_SECONDS * 1000);
    const w = new Watch(socket, Boolean(options.ssl), heard);
    watched.add(w);
    // Closed by postgres.js's connect_timeout (which may come first) after waiting long unanswered: silent too.
    socket.once('close', () => {
      if (w.owedSince !== null && performance.now() - w.owedSince >= answerWithinMs / 2) silent = true;
    });
    if (silent) probing = w;
    timer ??= setInterval(check, tickMs).unref();
    return socket;
  };
  return Object.assign(create, { recycle });
}

function silentError(answerWithinMs: number, waitedMs: number | null): Error & { code: string } {
  const message =
    waitedMs === null
      ? `The database has not answered for ${answerWithinMs} ms; a connection is being tried again`
      : `The database did not answer within ${answerWithinMs} ms (waited ${Math.round(waitedMs)} ms); the connection was closed`;
  return Object.assign(new Error(message), { code: DATABASE_SILENT });
}

/**
 * A stand-in socket that fails with `err` once postgres.js has written its first message to it.
 * Not before: postgres.js defers small writes to an immediate, and a socket that closed while one
 * was pending left the connection unable to write again (its timer cleared but not reset).
 */
function failingSocket(err: Error): Duplex {
  const socket: Duplex = new Duplex({
    read() {},
    write(_chunk, _encoding, callback) {
      callback();
      process.nextTick(() => socket.destroy(err));
    },
  });
  return socket;
}
