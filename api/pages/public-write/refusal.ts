/**
 * Why the public write kit refused an anonymous write, with the status it answers. Each page
 * renders its own friendly page (or JSON) for it; the kind is stable, the wording is the page's.
 */
export type RefusalKind =
  /** The post came from another site (Origin, Referer or Sec-Fetch-Site says so), or a form post says nothing of where it came from. */
  | 'crossSite'
  /** The body is larger than PUBLIC_WRITE_BODY_LIMIT_BYTES. */
  | 'tooLarge'
  /** Neither a form (application/x-www-form-urlencoded) nor JSON. */
  | 'unsupportedType'
  /** Malformed form or JSON. */
  | 'badBody'
  /** A budget (per client IP, per resource) is spent: retry after retryAfter seconds. */
  | 'tooMany'
  /** Taking one more address would leave fewer than the reserve free in the merchant's pool. */
  | 'poolReserve'
  /** The kit could not decide safely (Redis unreachable, the pool's lock busy): nothing was written. */
  | 'busy';

const STATUS: Record<RefusalKind, number> = {
  crossSite: 403,
  tooLarge: 413,
  unsupportedType: 415,
  badBody: 400,
  tooMany: 429,
  poolReserve: 503,
  busy: 503,
};

export class PublicWriteRefusal extends Error {
  readonly status: number;
  constructor(
    readonly kind: RefusalKind,
    message: string,
    /** Seconds until a retry may succeed (429 and 503), also sent as Retry-After. */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'PublicWriteRefusal';
    this.status = STATUS[kind];
  }
}
