import { Type, type Static } from '@sinclair/typebox';
import type { ApiKeyView } from '../organizations/organizations';
import { ROLES } from '../organizations/roles';
import type { OrganizationProfile } from '../organizations/organization-profile';
import { DateTime, iso, Nullable, NullableDateTime, StringEnum } from '../platform/wire-schema';

/** An organization and its API keys on the wire. */

export const organizationSchema = Type.Object({
  id: Type.String(),
  name: Type.String({ description: 'Display name, shown to payers on the payment and checkout pages ("Payment to <name>")' }),
  supportContact: Nullable(Type.String(), { description: 'E-mail address or http(s) URL shown to payers on the payment and checkout pages; null: none' }),
  createdAt: DateTime(),
});

export function presentOrganization(org: OrganizationProfile): Static<typeof organizationSchema> {
  return { id: org.id, name: org.name, supportContact: org.supportContact, createdAt: org.createdAt.toISOString() };
}

export const apiKeySchema = Type.Object({
  id: Type.String({ example: 'key_01jd...' }),
  organizationId: Type.String(),
  name: Type.String(),
  role: StringEnum(ROLES),
  keyPrefix: Type.String({ description: 'First characters of the key, to tell keys apart' }),
  createdAt: DateTime(),
  revokedAt: NullableDateTime(),
});

/** The answer to a key's creation: the only time the key itself is shown. */
export const createdApiKeySchema = Type.Composite([apiKeySchema, Type.Object({ key: Type.String({ description: 'pk_… shown once' }) })]);

export function presentApiKey(k: ApiKeyView): Static<typeof apiKeySchema> {
  return { id: k.id, organizationId: k.organizationId, name: k.name, role: k.role, keyPrefix: k.keyPrefix, createdAt: k.createdAt.toISOString(), revokedAt: iso(k.revokedAt) };
}
