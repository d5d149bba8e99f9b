import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { paths as PathsA } from './generated/stablegate-a';
import type { paths as PathsB } from './generated/stablegate-b';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from './webhooks';

export type { PathsA, PathsB };

export interface StablegateClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** Where the service runs, e.g. http://localhost:3000 (the client adds /api/v1/… itself). */
  baseUrl: string;
  /** An API key (pk_…), sent as `Authorization: Bearer <key>`. */
  apiKey: string;
}

function clientOptions(options: StablegateClientOptions): ClientOptions {
  const { apiKey, baseUrl, headers, ...rest } = options;
  return { ...rest, baseUrl: baseUrl.replace(/\/+$/, ''), headers: { ...(headers as Record<string, string> | undefined), Authorization: `Bearer ${apiKey}` } };
}

/**
 * A typed client of a Stablegate deployment in wire format B (the default: flat bodies, `code`
 * in errors). Paths, parameters, bodies and answers are typed from the OpenAPI document:
 *
 *   const sg = createStablegateClient({ baseUrl: 'http://localhost:3000', apiKey });
 *   const { data, error } = await sg.POST('/api/v1/orders', { body: { orderReference, amount: '10', currency: 'USDT', chainId } });
 */
export function createStablegateClient(options: StablegateClientOptions): Client<PathsB> {
  return createClient<PathsB>(clientOptions(options));
}

/** The same for a deployment with API_STYLE=a (`{success, data, message}` envelopes). */
export function createStablegateClientA(options: StablegateClientOptions): Client<PathsA> {
  return createClient<PathsA>(clientOptions(options));
}
