/**
 * Provider URLs (RPC, WebSocket) often carry credentials: a user and password, a project key in the
 * path, a key in the query. Logs, errors and metrics name a provider by its origin only.
 */

/** scheme://host[:port] of a URL, without user, password, path or query. */
export function urlOrigin(url: string): string {
  try {
    const u = new URL(url);
    // URL.origin is "null" for schemes it does not know; build it from the parts then.
    return u.origin !== 'null' ? u.origin : `${u.protocol}//${u.host}`;
  } catch {
    return '(invalid URL)';
  }
}

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

/** Free text (an error message) with every URL in it reduced to its origin. */
export function withUrlsReduced(text: string): string {
  return text.replace(URL_IN_TEXT, (url) => urlOrigin(url));
}
