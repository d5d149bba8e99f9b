import { expect } from 'chai';

/**
 * One call to a running API process (tests that spawn api/main.ts): JSON in and out with an API
 * key; anything but 200/201 fails the test with the answer. Returns the body's data (B) or the body (A).
 */
export async function callApi(base: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  expect(res.status, `${method} ${path}: ${JSON.stringify(json)}`).to.be.oneOf([200, 201]);
  return json.data ?? json;
}
