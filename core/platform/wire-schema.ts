import { Type, type SchemaOptions, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

/**
 * TypeBox helpers for the wire objects' schemas. A schema declared with them is plain JSON Schema
 * (ajv validates it, the OpenAPI document shows it) and its TypeScript type is derived from it
 * (`Static<typeof schema>`), so the two cannot drift. Each keeps the JSON shape the API always
 * documented (`type: [t, 'null']`, `enum`) rather than TypeBox's anyOf forms.
 */

/** A string from a fixed list, as `{type: 'string', enum}` (ajv's enum message names the choices). */
export function StringEnum<const T extends string>(values: readonly T[], options: SchemaOptions = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });
}

/** `schema` or null, as `type: [<type>, 'null']` (an enum gains null too). */
export function Nullable<T extends TSchema>(schema: T, options: SchemaOptions = {}): TUnsafe<Static<T> | null> {
  // Object.entries leaves out TypeBox's symbol keys: the result is an Unsafe of plain JSON Schema.
  const { type, enum: values, ...rest } = Object.fromEntries(Object.entries(schema)) as { type?: string; enum?: unknown[] };
  return Type.Unsafe<Static<T> | null>({ ...rest, type: [type, 'null'], ...(values ? { enum: [...values, null] } : {}), ...options });
}

/** A date-time string (RFC 3339, UTC with milliseconds), as presented by `iso`. */
export const DateTime = (options: SchemaOptions = {}) => Type.String({ format: 'date-time', ...options });
/** A date-time string or null. */
export const NullableDateTime = (options: SchemaOptions = {}) => Nullable(Type.String({ format: 'date-time' }), options);

/** Stored metadata in an answer: the object the caller gave. */
export const metadataOut = (options: SchemaOptions = {}) => Type.Unsafe<Record<string, unknown>>({ type: 'object', ...options });

/** A time as the wire shows it (DateTime): RFC 3339 UTC with milliseconds and Z, or null. */
export function iso(date: Date | null | undefined): string | null {
  return date ? date.toISOString() : null;
}
