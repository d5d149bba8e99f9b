import type { Response } from 'express';
import type { ApiStyle } from '../core/config';
import { AppError, type ErrorCode } from '../core/errors';

/**
 * The one module that owns the difference between wire formats A and B (design.md §2).
 * Route handlers hand it plain resources; it decides envelopes, list shapes and error bodies.
 */

export interface Page {
  page: number;
  limit: number;
  total: number;
}

/** Description A's error names for our codes. */
const A_ERROR_NAMES: Record<ErrorCode, string> = {
  VALIDATION_ERROR: 'ValidationError',
  INVALID_JSON: 'ValidationError',
  PAYLOAD_TOO_LARGE: 'PayloadTooLarge',
  INVALID_API_KEY: 'Unauthorized',
  INSUFFICIENT_PERMISSIONS: 'Forbidden',
  RESOURCE_NOT_FOUND: 'NotFound',
  DEPOSIT_REFERENCE_NOT_FOUND: 'NotFound',
  DUPLICATE_ORDER_REFERENCE: 'Conflict',
  DUPLICATE_DEPOSIT_REFERENCE: 'Conflict',
  NO_AVAILABLE_ADDRESSES: 'InsufficientAddresses',
  INVALID_AMOUNT: 'ValidationError',
  INVALID_CHAIN: 'ValidationError',
  INVALID_CURRENCY: 'ValidationError',
  ORDER_EXPIRED: 'OrderExpired',
  ORDER_ALREADY_PAID: 'OrderAlreadyPaid',
  RATE_LIMIT_EXCEEDED: 'RateLimitExceeded',
  IDEMPOTENCY_KEY_REUSED: 'Conflict',
  IDEMPOTENCY_IN_PROGRESS: 'Conflict',
  CONFLICT: 'Conflict',
  LAST_OWNER_KEY: 'Conflict',
  IMPORT_REJECTED: 'ValidationError',
  SERVICE_UNAVAILABLE: 'ServiceUnavailable',
  INTERNAL_ERROR: 'InternalError',
};

/** Description B's short `error` text per status. */
const B_ERROR_TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export class WireFormat {
  constructor(readonly style: ApiStyle) {}

  /** A single resource or result. */
  body(data: unknown, message = 'OK'): unknown {
    return this.style === 'a' ? { success: true, data, message } : data;
  }

  send(res: Response, status: number, data: unknown, message?: string): void {
    res.status(status).json(this.body(data, message));
  }

  /** A paginated list; `plural` names A's array (`data.orders`). */
  listBody(plural: string, items: unknown[], page: Page, message = 'OK'): unknown {
    const totalPages = Math.ceil(page.total / page.limit);
    if (this.style === 'a') {
      return {
        success: true,
        data: { [plural]: items, pagination: { page: page.page, limit: page.limit, total: page.total, totalPages } },
        message,
      };
    }
    return {
      data: items,
      pagination: { page: page.page, limit: page.limit, total: page.total, totalPages, hasMore: page.page < totalPages },
    };
  }

  sendList(res: Response, plural: string, items: unknown[], page: Page): void {
    res.status(200).json(this.listBody(plural, items, page));
  }

  /** A's deposit reference list (deposit service page): `data.references` with total, page, limit. */
  depositReferenceListBody(items: unknown[], page: Page): unknown {
    if (this.style === 'a') {
      return { success: true, data: { references: items, total: page.total, page: page.page, limit: page.limit }, message: 'OK' };
    }
    return this.listBody('references', items, page);
  }

  errorBody(err: AppError): unknown {
    const extra = err.extra ?? {};
    if (this.style === 'a') {
      return {
        success: false,
        error: A_ERROR_NAMES[err.code],
        message: err.message,
        ...(err.details !== undefined ? { details: err.details } : {}),
        ...extra,
      };
    }
    return {
      error: B_ERROR_TITLES[err.status] ?? 'Error',
      message: err.message,
      code: err.code,
      statusCode: err.status,
      ...(err.details !== undefined ? { details: err.details } : {}),
      ...extra,
    };
  }

  sendError(res: Response, err: AppError): void {
    res.status(err.status).json(this.errorBody(err));
  }
}
