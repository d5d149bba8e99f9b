/**
 * The public write kit: the pieces every anonymous (or session-less) write of the public pages
 * goes through, in this order (design.md §6a):
 * 1. `publicBodyReader`: a size-limited form or JSON body (PUBLIC_WRITE_BODY_LIMIT_BYTES);
 * 2. `checkSameOrigin`: cross-site posts refused (Sec-Fetch-Site / Origin / Referer);
 * 3. `WriteBudgets`: budgets in Redis per client IP and per resource, failing closed;
 * 4. `PoolReserveGuard`: a write that takes a pool address leaves the merchant's reserve free.
 * Every refusal is a `PublicWriteRefusal` (kind, status, retryAfter) that the page renders.
 * Used by the payment links' checkout (api/pages/checkout/); the dashboard's forms reuse 1–3.
 */
export { publicBodyReader, type PublicBody } from './body';
export { checkSameOrigin } from './same-origin';
export { WriteBudgets, type BudgetRule } from './budgets';
export { PoolReserveGuard, publicPoolReserve, type PoolReserveOptions } from './pool-reserve';
export { PublicWriteRefusal, type RefusalKind } from './refusal';
