/**
 * Public URLs carry bearer tokens (whoever has the URL sees the order): request logs show the
 * route, never the token. Wave 3's public routes add their prefixes here.
 */
const TOKEN_PATHS = [/^(\/pay\/)[^/?#]+/, /^(\/dashboard\/link\/)[^/?#]+/];

export function maskPublicTokens(path: string): string {
  for (const re of TOKEN_PATHS) {
    if (re.test(path)) return path.replace(re, '$1[token]');
  }
  return path;
}
