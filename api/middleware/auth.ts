import type { Request, Response } from 'express';
import { AppError, forbidden } from '../../core/platform/errors';
import { authenticateApiKey, type Caller } from '../../core/organizations/organizations';
import { roleAtLeast, type Role } from '../../core/organizations/roles';
import type { ApiDeps } from '../deps';
import { addRequestLogFields } from '../request-log';

/** Both headers are accepted whatever the style: `Authorization: Bearer <key>` and `X-API-Key`. */
export function presentedKey(req: Request): string | null {
  const header = req.headers.authorization;
  if (typeof header === 'string' && header.length > 0) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match && /^\s*pk_\S+\s*$/.test(header)) {
      // The commonest slip: the key without its scheme. Say so rather than "invalid key".
      throw new AppError('INVALID_API_KEY', 'Authorization header has a key but no scheme: send "Authorization: Bearer pk_…" (add "Bearer "), or send the key as X-API-Key: pk_…');
    }
    return match ? match[1] : '';
  }
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string') return apiKey.trim();
  return null;
}

/** The caller of a request, from its API key; INVALID_API_KEY when there is none or it is unknown. */
export async function authenticateRequest(deps: ApiDeps, req: Request, res: Response): Promise<Caller> {
  const key = presentedKey(req);
  if (key === null) throw new AppError('INVALID_API_KEY', 'Missing API key: send Authorization: Bearer <key> or X-API-Key: <key>');
  const caller = key ? await authenticateApiKey(deps.db, key, deps.keyCache) : null;
  if (!caller) throw new AppError('INVALID_API_KEY', 'Invalid or revoked API key');
  addRequestLogFields(res, { organizationId: caller.organizationId, keyId: caller.keyId });
  return caller;
}

export function requireRole(caller: Caller, minimum: Role): void {
  if (!roleAtLeast(caller.role, minimum)) throw forbidden(`This action requires the ${minimum} role or higher`);
}
