import { Type, type Static } from '@sinclair/typebox';
import type { ConfigEntry } from '../organizations/org-config';
import { NullableDateTime } from '../platform/wire-schema';
import { iso } from '../../api/present';

/** A configuration value: a number, a string or null (each key's definition says which). */
const configValue = Type.Unsafe<number | string | null>({ type: ['number', 'string', 'null'] });

export const configEntrySchema = Type.Object({
  key: Type.String(),
  value: configValue,
  default: configValue,
  isDefault: Type.Boolean(),
  description: Type.String(),
  updatedAt: NullableDateTime(),
});

export const setConfigBody = Type.Object({ value: configValue }, { additionalProperties: false });

export function presentConfigEntry(e: ConfigEntry): Static<typeof configEntrySchema> {
  return { ...e, updatedAt: iso(e.updatedAt) };
}
