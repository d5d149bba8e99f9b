/**
 * Domain errors carry a machine code (style B's code table plus our additions) and an HTTP status.
 * The formatting module (api/format.ts) is the one place that turns them into a wire body.
 */
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'INVALID_JSON'
  | 'PAYLOAD_TOO_LARGE'
  | 'URI_TOO_LONG'
  | 'HEADERS_TOO_LARGE'
  | 'INVALID_API_KEY'
  | 'INSUFFICIENT_PERMISSIONS'
  | 'RESOURCE_NOT_FOUND'
  | 'DUPLICATE_ORDER_REFERENCE'
  | 'DUPLICATE_DEPOSIT_REFERENCE'
  | 'DEPOSIT_REFERENCE_NOT_FOUND'
  | 'NO_AVAILABLE_ADDRESSES'
  | 'INVALID_AMOUNT'
  | 'INVALID_CHAIN'
  | 'INVALID_CURRENCY'
  | 'ORDER_EXPIRED'
  | 'ORDER_ALREADY_PAID'
  | 'RATE_LIMIT_EXCEEDED'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'IDEMPOTENCY_IN_PROGRESS'
  | 'CONFLICT'
  | 'LAST_OWNER_KEY'
  | 'IMPORT_REJECTED'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL_ERROR'
  // Payment links (issue 28)
  | 'DUPLICATE_SLUG'
  | 'INVALID_STATUS_TRANSITION'
  | 'PAYMENT_LINK_FROZEN'
  | 'PAYMENT_LINK_SOLD_OUT'
  | 'PAYMENT_LINK_UNAVAILABLE'
  | 'PAYMENT_LINK_BUSY';

const STATUS: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 400,
  INVALID_JSON: 400,
  PAYLOAD_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  HEADERS_TOO_LARGE: 431,
  INVALID_API_KEY: 401,
  INSUFFICIENT_PERMISSIONS: 403,
  RESOURCE_NOT_FOUND: 404,
  DUPLICATE_ORDER_REFERENCE: 409,
  DUPLICATE_DEPOSIT_REFERENCE: 409,
  DEPOSIT_REFERENCE_NOT_FOUND: 404,
  NO_AVAILABLE_ADDRESSES: 503,
  INVALID_AMOUNT: 400,
  INVALID_CHAIN: 400,
  INVALID_CURRENCY: 400,
  ORDER_EXPIRED: 400,
  ORDER_ALREADY_PAID: 400,
  RATE_LIMIT_EXCEEDED: 429,
  IDEMPOTENCY_KEY_REUSED: 409,
  IDEMPOTENCY_IN_PROGRESS: 409,
  CONFLICT: 409,
  LAST_OWNER_KEY: 409,
  IMPORT_REJECTED: 400,
  SERVICE_UNAVAILABLE: 503,
  INTERNAL_ERROR: 500,
  DUPLICATE_SLUG: 409,
  INVALID_STATUS_TRANSITION: 409,
  PAYMENT_LINK_FROZEN: 409,
  PAYMENT_LINK_SOLD_OUT: 409,
  PAYMENT_LINK_UNAVAILABLE: 410,
  PAYMENT_LINK_BUSY: 503,
};

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    /** Extra top-level fields of the error body (existingOrderId, retryAfter). */
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = STATUS[code];
  }
}

export const notFound = (what: string) => new AppError('RESOURCE_NOT_FOUND', `${what} not found`);
export const validationError = (message: string, details?: unknown) =>
  new AppError('VALIDATION_ERROR', message, details);
export const forbidden = (message = 'This API key does not have permission for this action') =>
  new AppError('INSUFFICIENT_PERMISSIONS', message);

/**
 * The Postgres error of this SQLSTATE in `err` or its causes (drizzle wraps the driver's error),
 * null when there is none (isUniqueViolation).
 */
export function postgresError(err: unknown, code: string): { constraint_name?: string; detail?: string } | null {
  // Bounded: a cause chain that loops back on itself ends the walk.
  for (let e = err as { code?: string; cause?: unknown } | undefined, depth = 0; e && typeof e === 'object' && depth < 8; e = e.cause as typeof e, depth++) {
    if (e.code === code) return e as { constraint_name?: string; detail?: string };
  }
  return null;
}

/** A unique violation (23505), of `constraint` when one is named. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = postgresError(err, '23505');
  return e !== null && (constraint === undefined || e.constraint_name === constraint);
}

