import type { Response } from 'express';
import type { ApiStyle } from '../core/config';
import { AppError, type ErrorCode } from '../core/errors';
import type { UnbindResult } from '../core/deposits/bindings';
import type { ReferenceDetail, ReferenceSummary } from '../core/deposits/queries';
import { addressEntries, presentBinding } from './deposits.present';
import { presentDeposit } from '../core/deposits/records';
import { iso } from './present';
import { sendJson } from './answer';

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

  /** A's deposit reference list (deposit service page): `data.references` with total, page, limit. */
  depositReferenceListBody(items: unknown[], page: Page): unknown {
    if (this.style === 'a') {
      return { success: true, data: { references: items, total: page.total, page: page.page, limit: page.limit }, message: 'OK' };
    }
    return this.listBody('references', items, page);
  }

  /**
   * A deposit reference's detail. A (one family: the earliest bound, or the one asked for with
   * ?protocol=): protocol, address/depositAddress, boundAt, totalDeposits, totalAmount as ONE
   * string — the face-value sum of every currency (all USD stablecoins, added 1:1, exactly) —
   * with totalAmountByCurrency beside it, and the recent deposits. B: addresses of every family
   * and chain, totalAmount keyed by currency.
   */
  depositReferenceBody(detail: ReferenceDetail): unknown {
    if (this.style === 'a') {
      const b = detail.bindings[0];
      const totals = detail.totalsByProtocol[b.protocol]!;
      return this.body({
        ...presentBinding(b),
        totalDeposits: totals.count,
        totalAmount: totals.nominal,
        totalAmountByCurrency: totals.byCurrency,
        lastDepositAt: iso(totals.lastDepositAt),
        boundAt: iso(b.createdAt),
        deposits: detail.recentDeposits.filter((d) => d.protocol === b.protocol).map(presentDeposit),
      });
    }
    return {
      depositReference: detail.depositReference,
      protocols: detail.bindings.map((b) => b.protocol),
      addresses: addressEntries(detail),
      totalDeposits: detail.totals.count,
      totalAmount: detail.totals.byCurrency,
      lastDepositAt: iso(detail.totals.lastDepositAt),
      metadata: detail.bindings[0].metadata,
      createdAt: iso(detail.bindings[0].createdAt),
    };
  }

  /**
   * Deposit reference list. A: one item per bound family (depositReference, protocol,
   * depositAddress, totals, lastDepositAt, boundAt) in data.references with total/page/limit
   * counting references. B: one item per reference (protocols, addressCount, totalAmount by currency).
   */
  depositReferenceList(items: ReferenceSummary[], page: Page): unknown {
    if (this.style === 'a') {
      const rows = items.flatMap((s) =>
        s.bindings.map((b) => {
          const totals = s.totalsByProtocol[b.protocol]!;
          return {
            depositReference: s.depositReference,
            protocol: b.protocol,
            address: b.address,
            depositAddress: b.address,
            monitoredChains: b.monitoredChains,
            totalDeposits: totals.count,
            totalAmount: totals.nominal,
            totalAmountByCurrency: totals.byCurrency,
            lastDepositAt: iso(totals.lastDepositAt),
            boundAt: iso(b.createdAt),
            metadata: b.metadata,
          };
        }),
      );
      return this.depositReferenceListBody(rows, page);
    }
    const rows = items.map((s) => ({
      depositReference: s.depositReference,
      protocols: s.bindings.map((b) => b.protocol),
      addressCount: new Set(s.bindings.map((b) => b.address)).size,
      totalDeposits: s.totals.count,
      totalAmount: s.totals.byCurrency,
      lastDepositAt: iso(s.totals.lastDepositAt),
      metadata: s.bindings[0].metadata,
      createdAt: iso(s.bindings[0].createdAt),
    }));
    return this.depositReferenceListBody(rows, page);
  }

  /** Unbind answer: B flat {success, message, depositReference, unboundAddresses}; A enveloped. */
  depositUnbindBody(result: UnbindResult, message: string): unknown {
    const data = { depositReference: result.depositReference, unboundAddresses: result.unboundAddresses, addresses: result.addresses };
    return this.style === 'a' ? this.body(data, message) : { success: true, message, ...data };
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

  /** OpenAPI schema of the error body. */
  errorSchema(): Record<string, unknown> {
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
    return { type: 'object', properties: { error: { type: 'string' }, message: { type: 'string' }, code: { type: 'string' }, statusCode: { type: 'integer' }, details: {} } };
  }

  /** Picks the documented (OpenAPI) shape of a special answer for this deployment's style. */
  documented<T>(shapes: { a: T; b: T }): T {
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
