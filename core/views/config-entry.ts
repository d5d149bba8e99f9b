import { Type, type Static } from '@sinclair/typebox';
import type { ConfigEntry } from '../organizations/org-config';
import { iso, NullableDateTime } from '../platform/wire-schema';

/** A configuration value: a number, a string or null (each key's definition says which). */
export const configValue = Type.Unsafe<number | string | null>({ type: ['number', 'string', 'null'] });

export const configEntrySchema = Type.Object({
  key: Type.String(),
  value: configValue,
  default: configValue,
  isDefault: Type.Boolean(),
  description: Type.String(),
  updatedAt: NullableDateTime(),
});

export function presentConfigEntry(e: ConfigEntry): Static<typeof configEntrySchema> {
  return { ...e, updatedAt: iso(e.updatedAt) };
}
