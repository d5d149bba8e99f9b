import { Type, type TProperties } from '@sinclair/typebox';
import type { ApiBuilder } from '../route-kit';
import type { ApiDeps } from '../deps';
import { exportPeriod } from '../../core/exports/period';
import { exportOrders, ORDER_EXPORT_COLUMNS } from '../../core/exports/orders-export';
import { exportTransfers, TRANSFER_EXPORT_COLUMNS } from '../../core/exports/transfers-export';
import { DEPOSIT_EXPORT_COLUMNS, exportDeposits } from '../../core/exports/deposits-export';
import { ORDER_LIST_FILTERS } from './orders.routes';
import { TRANSFER_LIST_FILTERS } from './transfers.routes';
import { DEPOSIT_LIST_FILTERS } from './deposits.routes';

const TAG = 'Exports';

/** from/to plus the list route's filters: an export is that list, whole, over a period. */
function exportQuery<F extends TProperties>(timeField: string, filters: F) {
  const bound = (description: string) => Type.Optional(Type.String({ format: 'date-time', maxLength: 64, description }));
  return Type.Object(
    {
      from: bound(`Rows whose ${timeField} is at or after this instant (RFC 3339 with an offset, e.g. 2025-01-01T00:00:00Z)`),
      to: bound(`Rows whose ${timeField} is before this instant (exclusive: consecutive periods share no row)`),
      ...filters,
    },
    { additionalProperties: false },
  );
}

/** What every export's description says once. */
function exportDoc(what: string, list: string, columns: readonly string[]): string {
  return (
    `${what}, oldest first, as one CSV file (text/csv, an attachment) with a header row: ${columns.join(', ')}. ` +
    `Takes the filters of ${list} and from/to; no row cap: the file is streamed from the database in batches, however large. ` +
    'Amounts are exact decimal strings in token units; timestamps RFC 3339 UTC; every cell is quoted and a cell starting with =, +, -, @ gets a leading apostrophe (spreadsheet-safe). ' +
    'A bad filter or period (from after to) is 400 VALIDATION_ERROR in the deployment\'s error format, before any of the file is sent.'
  );
}

export function registerExportRoutes(api: ApiBuilder, deps: ApiDeps): void {
  api.route(
    {
      method: 'get',
      path: '/exports/orders.csv',
      summary: 'Export orders as CSV (created in a period)',
      description: exportDoc('Orders created in the period', 'GET /orders', ORDER_EXPORT_COLUMNS),
      tag: TAG,
      minRole: 'viewer',
      query: exportQuery('createdAt', ORDER_LIST_FILTERS),
      produces: 'text/csv',
    },
    async ({ caller, query: { from, to, ...filters }, reply }) => reply.csv(await exportOrders(deps, caller.organizationId, filters, exportPeriod(from, to))),
  );

  api.route(
    {
      method: 'get',
      path: '/exports/transfers.csv',
      summary: 'Export transfers (payments seen on chain) as CSV (detected in a period)',
      description: exportDoc('Transfers detected in the period, attributed or not', 'GET /transfers', TRANSFER_EXPORT_COLUMNS),
      tag: TAG,
      minRole: 'viewer',
      query: exportQuery('detectedAt', TRANSFER_LIST_FILTERS),
      produces: 'text/csv',
    },
    async ({ caller, query: { from, to, ...filters }, reply }) => reply.csv(await exportTransfers(deps, caller.organizationId, filters, exportPeriod(from, to))),
  );

  api.route(
    {
      method: 'get',
      path: '/exports/deposits.csv',
      summary: 'Export deposits as CSV (detected in a period)',
      description: exportDoc('Deposits detected in the period', 'GET /deposits', DEPOSIT_EXPORT_COLUMNS),
      tag: TAG,
      minRole: 'viewer',
      query: exportQuery('detectedAt', DEPOSIT_LIST_FILTERS),
      produces: 'text/csv',
    },
    async ({ caller, query: { from, to, ...filters }, reply }) => reply.csv(await exportDeposits(deps, caller.organizationId, filters, exportPeriod(from, to))),
  );
}
