import type { Request, Response, NextFunction, Router } from 'express';
import express from 'express';
import { constantTimeEqual } from '../core/platform/secrets';
import type { ApiDeps } from './deps';
import { BULL_BOARD_POLICY } from './security-headers';

export const BULL_BOARD_PATH = '/admin/queues';

/**
 * bull-board behind operator credentials (HTTP Basic) from configuration — never an organization's
 * API key: queues hold every tenant's jobs. Without OPERATOR_PASSWORD it is switched off.
 */
export function bullBoardRouter(deps: ApiDeps): Router {
  const router = express.Router();
  router.use((_req, res, next) => {
    res.setHeader('Content-Security-Policy', BULL_BOARD_POLICY);
    next();
  });
  const operator = deps.config.operator;
  if (!operator) {
    router.use((_req, res) => {
      res.status(503).type('text/plain').send('The queue dashboard is off: set OPERATOR_USER and OPERATOR_PASSWORD to enable it.');
    });
    return router;
  }
  // Loaded only when the dashboard is on: an API process without OPERATOR_PASSWORD never loads
  // bull-board (about 60 modules and 3 MB of heap, README → Memory and heap limits).
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { createBullBoard } = require('@bull-board/api') as typeof import('@bull-board/api');
  const { BullMQAdapter } = require('@bull-board/api/bullMQAdapter') as typeof import('@bull-board/api/bullMQAdapter');
  const { ExpressAdapter } = require('@bull-board/express') as typeof import('@bull-board/express');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({ queues: Object.values(deps.queues).map((q) => new BullMQAdapter(q)), serverAdapter });
  router.use((req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization ?? '';
    const match = /^Basic\s+(.+)$/i.exec(header);
    const [user, ...rest] = match ? Buffer.from(match[1], 'base64').toString('utf8').split(':') : [];
    const password = rest.join(':');
    const userOk = constantTimeEqual(user ?? '', operator.user);
    const passwordOk = constantTimeEqual(password, operator.password);
    if (match && userOk && passwordOk) return next();
    res.setHeader('WWW-Authenticate', 'Basic realm="stablegate-operators", charset="UTF-8"');
    res.status(401).type('text/plain').send('Operator credentials required');
  });
  router.use(serverAdapter.getRouter());
  return router;
}
