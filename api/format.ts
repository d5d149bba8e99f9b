import type { Response } from 'express';
import type { ApiStyle } from '../core/platform/config';
import { AppError, type ErrorCode } from '../core/platform/errors';
import { sendJson } from './answer';

/**
 * The one module that owns the difference between wire formats A and B (design.md §2): the
 * envelope, the list shape and the error body. Route handlers hand it plain resources from the
 * views (core/views/, one presenter per resource); a resource whose shape itself differs by style
 * (deposit references, the pool import) has its A/B form picked from `style` in api/presenters/.
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
  URI_TOO_LONG: 'UriTooLong',
  HEADERS_TOO_LARGE: 'HeadersTooLarge',
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
  DUPLICATE_SLUG: 'Conflict',
  INVALID_STATUS_TRANSITION: 'Conflict',
  PAYMENT_LINK_FROZEN: 'Conflict',
  PAYMENT_LINK_SOLD_OUT: 'SoldOut',
  PAYMENT_LINK_UNAVAILABLE: 'Gone',
  PAYMENT_LINK_BUSY: 'ServiceUnavailable',
};

/** Description B's short `error` text per status. */
const B_ERROR_TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  410: 'Gone',
  413: 'Payload Too Large',
  414: 'URI Too Long',
  431: 'Request Header Fields Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * The error of a route whose failures carry `success: false` in either style (the spec's pool
 * import): B's error body gains the field A's already has. Only 400s: the spec's validation failure.
 */
export function withSuccessFalse(err: unknown): unknown {
  if (!(err instanceof AppError) || err.status !== 400) return err;
  return new AppError(err.code, err.message, err.details, { ...err.extra, success: false });
}

export class WireFormat {
  constructor(readonly style: ApiStyle) {}

  /** A single resource or result. */
  body(data: unknown, message = 'OK'): unknown {
    return this.style === 'a' ? { success: true, data, message } : data;
  }

  /**
   * A result whose B form is flat and says `success: true` itself, beside the result's fields (the
   * spec's pool import; with its message, the deposit unbind); A envelopes it as any result.
   */
  flatSuccessBody(data: object, message: string, b: { withMessage: boolean }): unknown {
    if (this.style === 'a') return this.body(data, message);
    return b.withMessage ? { success: true, message, ...data } : { success: true, ...data };
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

  /** OpenAPI schema of a success answer wrapping `resource` (a list of them when `plural` is given). */
  successSchema(resource: Record<string, unknown>, plural?: string): Record<string, unknown> {
    const pagination = {
      type: 'object',
      properties: {
        page: { type: 'integer' },
        limit: { type: 'integer' },
        total: { type: 'integer' },
        totalPages: { type: 'integer' },
        ...(this.style === 'b' ? { hasMore: { type: 'boolean' } } : {}),
      },
    };
    const envelope = (data: unknown) => ({ type: 'object', properties: { success: { const: true }, data, message: { type: 'string' } } });
    if (plural) {
      if (this.style === 'a') return envelope({ type: 'object', properties: { [plural]: { type: 'array', items: resource }, pagination } });
      return { type: 'object', properties: { data: { type: 'array', items: resource }, pagination } };
    }
    return this.style === 'a' ? envelope(resource) : resource;
  }

  /** OpenAPI schema of the error body (`withSuccess`: B's body of a route whose failures carry success: false). */
  errorSchema(withSuccess = false): Record<string, unknown> {
    if (this.style === 'a') {
      return {
        type: 'object',
        properties: {
          success: { const: false },
          error: { type: 'string', examples: ['ValidationError', 'Unauthorized', 'NotFound', 'InsufficientAddresses'] },
          message: { type: 'string' },
          details: {},
        },
      };
    }
    return {
      type: 'object',
      properties: {
        ...(withSuccess ? { success: { const: false } } : {}),
        error: { type: 'string' },
        message: { type: 'string' },
        code: { type: 'string' },
        statusCode: { type: 'integer' },
        details: {},
      },
    };
  }

  /** Picks the documented (OpenAPI) shape of a special answer for this deployment's style. */
  documented<A, B>(shapes: { a: A; b: B }): A | B {
    return this.style === 'a' ? shapes.a : shapes.b;
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
    sendJson(res, err.status, this.errorBody(err));
  }
}
