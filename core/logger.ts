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

export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'stablegate' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
