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
  recipients: Type.Optional(
    Type.Array(
      Type.Object({
        email: Type.String(),
        confirmed: Type.Boolean({ description: 'Followed the link of its confirmation e-mail: only confirmed addresses receive alert e-mails' }),
        confirmationSentAt: NullableDateTime(),
      }),
      { description: 'alerts.email only: each address and whether it confirmed' },
    ),
  ),
});

export function presentConfigEntry(e: ConfigEntry): Static<typeof configEntrySchema> {
  const { recipients, ...rest } = e;
  return {
    ...rest,
    updatedAt: iso(e.updatedAt),
    ...(recipients ? { recipients: recipients.map((r) => ({ ...r, confirmationSentAt: iso(r.confirmationSentAt) })) } : {}),
  };
}
