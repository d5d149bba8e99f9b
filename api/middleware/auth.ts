import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError, forbidden } from '../../core/errors';
import { authenticateApiKey } from '../../core/organizations';
import { roleAtLeast, type Role } from '../../core/roles';
import type { ApiDeps } from '../deps';
import { addRequestLogFields } from '../request-log';

/** Both headers are accepted whatever the style: `Authorization: Bearer <key>` and `X-API-Key`. */
export function presentedKey(req: Request): string | null {
  const header = req.headers.authorization;
  if (typeof header === 'string' && header.length > 0) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match ? match[1] : '';
  }
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string') return apiKey.trim();
  return null;
}

export function authenticate(deps: ApiDeps): RequestHandler {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const key = presentedKey(req);
      if (key === null) throw new AppError('INVALID_API_KEY', 'Missing API key: send Authorization: Bearer <key> or X-API-Key: <key>');
      const caller = key ? await authenticateApiKey(deps.db, key, deps.keyCache) : null;
      if (!caller) throw new AppError('INVALID_API_KEY', 'Invalid or revoked API key');
      res.locals.caller = caller;
      addRequestLogFields(res, { organizationId: caller.organizationId, keyId: caller.keyId });
      next();
    } catch (err) {
      next(err);
    }
  };
}

export function requireRole(minimum: Role): RequestHandler {
  return (_req, res, next) => {
    const caller = res.locals.caller as { role: Role } | undefined;
    if (!caller || !roleAtLeast(caller.role, minimum)) {
      next(forbidden(`This action requires the ${minimum} role or higher`));
      return;
    }
    next();
  };
}
