import { gte, lt, type SQL } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { validationError } from '../platform/errors';

/**
 * The time span an export covers: `from` inclusive, `to` exclusive, so consecutive periods
 * (a month, the next month) never share a row. Either end may be open.
 */
export interface ExportPeriod {
  from?: Date;
  to?: Date;
}

/** Reads `from` and `to` (RFC 3339 with an offset, as every timestamp input); a bad one or from after to is 400. */
export function exportPeriod(from: string | undefined, to: string | undefined): ExportPeriod {
  const period: ExportPeriod = { from: instant('from', from), to: instant('to', to) };
  if (period.from && period.to && period.from > period.to) {
    throw validationError('from must not be after to', [{ field: 'from', message: 'must not be after to' }]);
  }
  return period;
}

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i;

function instant(field: 'from' | 'to', text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const at = new Date(text);
  if (!RFC3339.test(text) || Number.isNaN(at.getTime())) {
    throw validationError(`${field} must be a timestamp with an offset, e.g. 2025-01-01T00:00:00Z`, [{ field, message: 'must be a timestamp with an offset (RFC 3339)' }]);
  }
  return at;
}

/** The period as conditions on a timestamp column (none for an open end). */
export function withinPeriod(column: AnyPgColumn, period: ExportPeriod): SQL[] {
  return [period.from ? gte(column, period.from) : undefined, period.to ? lt(column, period.to) : undefined].filter((c): c is SQL => c !== undefined);
}
