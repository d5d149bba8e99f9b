import pino, { type Logger, type DestinationStream } from 'pino';
import type { LogLevel } from './config';

export type { Logger };

/** Paths never written to a log line, whatever logs them. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'secret',
  'key',
  'apiKey',
  'password',
  '*.secret',
  '*.key',
  '*.apiKey',
  '*.password',
  'body.addresses',
];

/**
 * Errors are logged by name, message, code and stack only: driver errors carry the failed
 * query's parameters and row details, which may hold anything a client sent.
 */
export function safeErrorSerializer(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const e = err as Error & { code?: unknown; cause?: unknown };
  return {
    type: e.name,
    message: e.message,
    ...(typeof e.code === 'string' || typeof e.code === 'number' ? { code: e.code } : {}),
    stack: e.stack,
    ...(e.cause instanceof Error ? { cause: safeErrorSerializer(e.cause) } : {}),
  };
}

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'stablegate' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { err: safeErrorSerializer, error: safeErrorSerializer },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
