/**
 * Public URLs carry bearer tokens (whoever has the URL sees the order): request logs show the
 * route, never the token: the payment page's /pay/<token> and a payment link's /l/<slug> (a
 * generated slug is 128 random bits), the dashboard's sign-in links. Other public routes add
 * their prefixes here.
 */
const TOKEN_PATHS = [/^(\/pay\/)[^/?#]+/, /^(\/l\/)[^/?#]+/, /^(\/dashboard\/link\/)[^/?#]+/];

export function maskPublicTokens(path: string): string {
  for (const re of TOKEN_PATHS) {
    if (re.test(path)) return path.replace(re, '$1[token]');
  }
  return path;
}
