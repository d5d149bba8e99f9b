import type { ServerResponse } from 'node:http';
import type { Response } from 'express';

/** Work to finish before a response's answer goes out (the Idempotency-Key step stores it). */
type BeforeAnswer = (status: number, body: unknown) => Promise<void>;
const beforeAnswer = new WeakMap<Response, BeforeAnswer>();

/**
 * Holds this response's answer, whichever it is (the route's result or the error handler's
 * error), until `hook` has run with it; only the first answer is held.
 */
export function holdAnswerUntil(res: Response, hook: BeforeAnswer): void {
  beforeAnswer.set(res, hook);
}

/**
 * Every JSON answer of the API goes out here. Express's res.json runs the body through
 * res.send's content negotiation (charset parsing, ETag and freshness checks, string-to-Buffer
 * conversion) on every answer; none of it applies to the API's fresh per-request JSON. HEAD
 * answers carry no body (Node drops it).
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  const hook = beforeAnswer.get(res);
  if (hook) {
    beforeAnswer.delete(res);
    void hook(status, body).finally(() => writeJson(res, status, body));
    return;
  }
  writeJson(res, status, body);
}

/** A JSON answer outside the API routes (no Idempotency-Key step can hold it): the public status endpoint. */
export function writeJson(res: ServerResponse, status: number, body: unknown): void {
  writeJsonText(res, status, JSON.stringify(body) ?? '');
}

/** A JSON answer already serialized. */
export function writeJsonText(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
