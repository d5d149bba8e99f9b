/**
 * The `cookie` package (0.7.x, the version express 5 depends on) ships no types; what we use of it.
 * Its parse returns a plain object: read it through Object.entries only (api/pages/dashboard/cookies.ts).
 */
declare module 'cookie' {
  export function parse(header: string, options?: { decode?: (value: string) => string }): Record<string, string>;
}
