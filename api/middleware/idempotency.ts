import type { Request, Response } from 'express';
import { validationError } from '../../core/platform/errors';
import {
  beginIdempotentRequest,
  completeIdempotentRequest,
  releaseIdempotentRequest,
  requestFingerprint,
} from '../../core/platform/idempotency';
import type { Caller } from '../../core/organizations/organizations';
import type { ApiDeps } from '../deps';
import { holdAnswerUntil, sendJson } from '../answer';

/**
 * What became of a creating request's Idempotency-Key: none was sent; the stored answer was
 * replayed (the request is answered); or the request proceeds and its answer, success or error,
 * is stored before it goes out (api/answer.ts).
 */
export type IdempotencyOutcome = 'absent' | 'replayed' | 'recording';

/**
 * Idempotency-Key on creating POSTs (design.md §4a): the same key and body replay the stored
 * answer; another body, or a request still in flight, is a 409. 5xx and 429 are not stored.
 * Runs after the body is parsed and before it is validated, so validation errors replay too.
 */
export async function applyIdempotencyKey(deps: ApiDeps, req: Request, res: Response, caller: Caller): Promise<IdempotencyOutcome> {
  const key = req.headers['idempotency-key'];
  if (key === undefined) return 'absent';
  if (typeof key !== 'string' || key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
    throw validationError('Idempotency-Key must be 1 to 255 printable ASCII characters', [{ field: 'Idempotency-Key', message: 'is invalid' }]);
  }
  const fingerprint = requestFingerprint(req.method, req.baseUrl + req.path, req.body);
  const outcome = await beginIdempotentRequest(deps.db, caller.organizationId, key, fingerprint, deps.clock.now(), deps.config.secretEncryptionKey);
  if (outcome.kind === 'replay') {
    res.setHeader('Idempotent-Replayed', 'true');
    sendJson(res, outcome.status, outcome.body);
    return 'replayed';
  }
  // Store the answer before it is sent, so a replay right after sees it. Error answers (the
  // app's error handler) are held the same way.
  holdAnswerUntil(res, async (status, body) => {
    const store =
      status >= 500 || status === 429
        ? releaseIdempotentRequest(deps.db, caller.organizationId, key)
        : completeIdempotentRequest(deps.db, caller.organizationId, key, status, body, deps.config.secretEncryptionKey);
    // The answer still goes out: what it says happened (an order created) did happen. But the key
    // stays in progress until it expires (a retry gets 409, never a second creation): say so.
    await store.catch((err) =>
      deps.logger.error(
        { err, organizationId: caller.organizationId, idempotencyKey: key, status },
        'failed to store the answer of an Idempotency-Key request: a retry with this key is refused (409) until the key expires',
      ),
    );
  });
  return 'recording';
}
