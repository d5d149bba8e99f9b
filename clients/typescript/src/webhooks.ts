import { createHmac, timingSafeEqual } from 'node:crypto';

/** A webhook body: `{id, type, createdAt, data}` (alert.* events carry `timestamp` instead of `createdAt`). */
export interface WebhookEvent<T = Record<string, unknown>> {
  id: string;
  type: string;
  createdAt?: string;
  timestamp?: string;
  data: T;
}

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/**
 * Checks a delivery's `X-Service-Signature` header — lowercase hex HMAC-SHA-256 of the exact body
 * bytes, keyed with the endpoint's whole secret (a generated one's `whsec_` prefix included) — in constant time, and
 * returns the parsed event. Throws WebhookVerificationError otherwise. The same in wire formats A
 * and B. Pass the raw body (a Buffer or the string as received), never a re-serialised object.
 */
export function verifyWebhook<T = Record<string, unknown>>(rawBody: Buffer | string, signatureHeader: string | string[] | undefined | null, secret: string): WebhookEvent<T> {
  if (!secret) throw new WebhookVerificationError('No secret: pass the endpoint secret as shown once at creation (a generated one with its whsec_ prefix)');
  const header = Array.isArray(signatureHeader) ? signatureHeader[0] : signatureHeader;
  const given = (header ?? '').trim().replace(/^sha256=/i, '').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(given)) throw new WebhookVerificationError('Missing or malformed X-Service-Signature header');
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
  const expected = createHmac('sha256', secret).update(body).digest();
  if (!timingSafeEqual(expected, Buffer.from(given, 'hex'))) throw new WebhookVerificationError('Signature does not match: wrong secret, or the body was changed (verify the raw bytes)');
  try {
    return JSON.parse(body.toString('utf8')) as WebhookEvent<T>;
  } catch {
    throw new WebhookVerificationError('Body is not JSON');
  }
}
