import type { Logger } from './logger';
import { describeStartupError } from './startup-errors';

/**
 * Runs a long-lived process: on SIGTERM or SIGINT it stops taking work, lets what it holds
 * finish, closes connections, and exits. A second signal exits at once.
 */
export function handleShutdown(close: () => Promise<void>, logger: Logger): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    closing = true;
    logger.info({ signal }, 'shutting down');
    close().then(
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

/**
 * handleShutdown for a process that starts several parts: the signal handler is installed before
 * the first part starts (a SIGTERM during start-up still shuts down cleanly), and the parts
 * started so far are closed in reverse order.
 */
export function shutdownInReverse(logger: Logger): { add(close: () => Promise<void>): void } {
  const closers: (() => Promise<void>)[] = [];
  handleShutdown(async () => {
    for (const close of closers.slice().reverse()) await close();
  }, logger);
  return { add: (close) => void closers.push(close) };
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
