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

/** Entry-point wrapper: a failure at start-up is one clear line, not a stack trace. */
export function runMain(main: () => Promise<void>): void {
  main().catch((err) => {
    console.error(describeStartupError(err));
    process.exit(1);
  });
}
