import { isDatabaseUnreachable } from '../../db/client';
import type { Logger } from './logger';
import { describeStartupError } from './startup-errors';

/** Time left after the shutdown deadline for forced closes to finish before the process exits anyway. */
const EXIT_AFTER_DEADLINE_MS = 3000;

/**
 * Runs a long-lived process: on SIGTERM or SIGINT it stops taking work, lets what it holds
 * finish, closes connections, and exits. A second signal exits at once. With `timeoutMs`
 * (SHUTDOWN_TIMEOUT_MS) the drain is bounded: `deadline` aborts then (parts force-close what they
 * still hold), and a process that has still not closed a few seconds later exits with 1, well
 * inside an orchestrator's grace period rather than being SIGKILLed mid-write.
 */
export function handleShutdown(close: (deadline: AbortSignal) => Promise<void>, logger: Logger, timeoutMs?: number): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    closing = true;
    logger.info({ signal, timeoutMs }, 'shutting down');
    const deadline = new AbortController();
    if (timeoutMs !== undefined) {
      setTimeout(() => {
        logger.warn({ timeoutMs }, 'shutdown deadline reached: closing what is still open');
        deadline.abort();
      }, timeoutMs).unref();
      setTimeout(() => {
        logger.error({ timeoutMs }, 'not shut down after the deadline: exiting');
        logger.flush?.();
        process.exit(1);
      }, timeoutMs + EXIT_AFTER_DEADLINE_MS).unref();
    }
    close(deadline.signal).then(
      () => {
        logger.info('shut down cleanly');
        logger.flush?.();
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

export interface Shutdown {
  /** A part to close on shutdown, after the parts added later; `deadline` aborts at SHUTDOWN_TIMEOUT_MS. */
  add(close: (deadline: AbortSignal) => Promise<void>): void;
  /** Runs at once when the signal arrives, before any part closes (an HTTP server starts draining). */
  atSignal(begin: () => void): void;
}

/**
 * handleShutdown for a process that starts several parts: the signal handler is installed before
 * the first part starts (a SIGTERM during start-up still shuts down cleanly), and the parts
 * started so far are closed in reverse order, all within one deadline.
 */
export function shutdownInReverse(logger: Logger, timeoutMs?: number): Shutdown {
  const closers: ((deadline: AbortSignal) => Promise<void>)[] = [];
  const beginners: (() => void)[] = [];
  handleShutdown(async (deadline) => {
    for (const begin of beginners) begin();
    for (const close of closers.slice().reverse()) await close(deadline);
  }, logger, timeoutMs);
  return { add: (close) => void closers.push(close), atSignal: (begin) => void beginners.push(begin) };
}

/** What an entry point tells runMain once it has a logger. */
export interface MainScope {
  /** From now on a start-up failure is also one line in the JSON log format (stdout), not only stderr. */
  useLogger(logger: Logger): void;
}

/**
 * Entry-point wrapper: a failure at start-up is one clear line, not a stack trace. Once the entry
 * has a logger the line is logged as a fatal JSON entry too, so log collectors see why it stopped.
 */
export function runMain(main: (scope: MainScope) => Promise<void>): void {
  let logger: Logger | null = null;
  surviveLostDatabaseConnectionSetUps(() => logger);
  main({ useLogger: (l) => void (logger = l) }).catch((err) => {
    const line = describeStartupError(err);
    const l = logger as Logger | null;
    if (l) {
      const code = (err as { code?: unknown })?.code;
      l.fatal(typeof code === 'string' ? { code } : {}, line);
      l.flush?.();
    }
    console.error(line);
    process.exit(1);
  });
}

/**
 * postgres.js (3.4.x) begins every new connection with a catalog query (array types) whose promise
 * nothing holds (porsager/postgres#1192): a connection reset during that query is an unhandled
 * rejection, and Node ends a process on one. The API died that way when the database went away
 * just as a connection was being opened. The work waiting for that connection fails on its own (a
 * request is answered 503, a job is retried), so such a rejection is logged and the process goes
 * on; any other unhandled rejection still ends it, as Node's default does.
 */
function surviveLostDatabaseConnectionSetUps(logger: () => Logger | null): void {
  process.on('unhandledRejection', (reason) => {
    if (!isDatabaseUnreachable(reason)) throw reason;
    const err = reason as { message?: unknown; code?: unknown };
    const fields = { err: { message: String(err.message), code: err.code } };
    const line = 'a database connection was lost while it was being set up; what waited for it fails and is retried';
    const l = logger();
    if (l) l.warn(fields, line);
    else console.error(line, fields);
  });
}
