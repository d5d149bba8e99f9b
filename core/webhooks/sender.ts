import http from 'node:http';
import https from 'node:https';
import { assertLiteralHostAllowed, guardedLookup } from './url-guard';

export interface SendRequest {
  url: string;
  body: Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
  allowInsecure: boolean;
}

/** Why no HTTP answer arrived; classifyAttempt turns it into the attempt log's error. */
export type SendFailureKind = 'timeout' | 'dns' | 'tls' | 'refused' | 'blocked' | 'network' | 'secret';

export interface SendFailure {
  kind: SendFailureKind;
  message: string;
}

export interface SendOutcome {
  /** HTTP status, or null when no answer arrived (then `failure` says why). */
  statusCode: number | null;
  durationMs: number;
  failure: SendFailure | null;
  /** The first bytes of the answer (at most RESPONSE_EXCERPT_BYTES), for the attempt log. */
  responseExcerpt: string | null;
  /** The answer was longer than the excerpt: the rest was not read. */
  responseTruncated: boolean;
  /** Retry-After of a 429 or 503, in milliseconds. */
  retryAfterMs: number | null;
  /**
   * How long this process was paused during the attempt (SIGSTOP, a frozen VM): its timeout fired
   * that much late. The answer, if any, may have arrived meanwhile, and the job's lease may be lost.
   */
  pausedMs?: number;
}

/** A timeout that fires this much later than it was due means the process was paused. */
const PAUSED_AFTER_MS = 1000;
/**
 * After a pause, the time given to read an answer that arrived meanwhile: it sits in the socket's
 * buffer, but timers run before I/O when the process resumes, so the overdue timeout fires first.
 */
const PAUSE_READ_GRACE_MS = 250;

const TLS_CODES: ReadonlySet<string> = new Set([
  'EPROTO',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

/** Names the kind of a socket-level error from its code (node's errors carry one). */
export function failureKind(err: NodeJS.ErrnoException): SendFailureKind {
  const code = err.code ?? '';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EAI_NODATA') return 'dns';
  if (code === 'ECONNREFUSED') return 'refused';
  if (code === 'ETIMEDOUT') return 'timeout';
  if (code === 'EWEBHOOKFORBIDDEN') return 'blocked'; // guardedLookup refused the address
  if (TLS_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.startsWith('CERT_')) return 'tls';
  return 'network';
}

export const RESPONSE_EXCERPT_BYTES = 1024;

/** Retry-After: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now: number): number | null {
  if (!value) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * Connections kept open between deliveries, per receiver origin (host and port), one pool per
 * process: most deliveries then cost one request on an open socket rather than a TCP (and TLS)
 * handshake each. An idle socket is closed after IDLE_SOCKET_MS, or a second before the
 * receiver's announced `Keep-Alive: timeout` (node's agent reads it), so a request is seldom sent
 * on a socket the receiver is closing. At most MAX_SOCKETS_PER_ORIGIN at once per origin and
 * process; a request waiting for one counts that wait against its timeout, like any other.
 * Guarded and insecure (WEBHOOK_ALLOW_INSECURE) requests never share a pool: a socket opened
 * without the connect-time SSRF check is never handed to a request that needs it.
 */
const IDLE_SOCKET_MS = 4000;
const MAX_SOCKETS_PER_ORIGIN = 64;
const agentOptions = { keepAlive: true, timeout: IDLE_SOCKET_MS, maxSockets: MAX_SOCKETS_PER_ORIGIN, maxFreeSockets: MAX_SOCKETS_PER_ORIGIN };
const agents = {
  guarded: { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) },
  insecure: { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) },
};

/**
 * One POST to a receiver. Redirects are never followed (node's http does not follow them; the
 * caller counts 3xx as a failure). Without allowInsecure the socket connects only to an address
 * that passed the SSRF check (guardedLookup), and a kept-alive socket is only reused for requests
 * to the same origin that were checked the same way (see `agents`). Never throws: every failure
 * is an outcome.
 */
export function sendWebhook(req: SendRequest): Promise<SendOutcome> {
  const started = Date.now();
  return new Promise<SendOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: Omit<SendOutcome, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...outcome, durationMs: Date.now() - started, ...(pausedMs === undefined ? {} : { pausedMs }) });
    };
    const fail = (failure: SendFailure) => finish({ statusCode: null, failure, responseExcerpt: null, responseTruncated: false, retryAfterMs: null });

    let url: URL;
    try {
      url = new URL(req.url);
      assertLiteralHostAllowed(url, { allowInsecure: req.allowInsecure });
    } catch (err) {
      return resolve({ statusCode: null, failure: { kind: 'blocked', message: (err as Error).message }, responseExcerpt: null, responseTruncated: false, retryAfterMs: null, durationMs: 0 });
    }
    const secure = url.protocol === 'https:';
    const pool = req.allowInsecure ? agents.insecure : agents.guarded;
    const request = (secure ? https : http).request(
      url,
      {
        method: 'POST',
        headers: { ...req.headers, 'Content-Length': String(req.body.length) },
        agent: secure ? pool.https : pool.http,
        ...(req.allowInsecure ? {} : { lookup: guardedLookup }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        // `complete`: the whole answer was read, so the socket may serve the next request;
        // otherwise (an answer longer than the excerpt, a broken one) it is closed.
        const done = (complete: boolean) => {
          const status = res.statusCode ?? 0;
          const excerpt = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
          const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(res.headers['retry-after'], Date.now()) : null;
          finish({ statusCode: status, failure: null, responseExcerpt: excerpt, responseTruncated: size > RESPONSE_EXCERPT_BYTES, retryAfterMs });
          if (!complete) request.destroy();
        };
        res.on('data', (chunk: Buffer) => {
          if (size < RESPONSE_EXCERPT_BYTES) chunks.push(chunk);
          size += chunk.length;
          if (size > RESPONSE_EXCERPT_BYTES) done(false); // enough for the log; stop reading
        });
        res.on('end', () => done(true));
        res.on('error', () => done(false));
      },
    );
    let pausedMs: number | undefined;
    const onTimeout = () => {
      const lateMs = Date.now() - started - req.timeoutMs;
      if (pausedMs === undefined && lateMs > PAUSED_AFTER_MS) {
        // Record what was observed, not a timeout the receiver never caused (issue 32).
        pausedMs = lateMs;
        timer = setTimeout(onTimeout, PAUSE_READ_GRACE_MS);
        return;
      }
      const message =
        pausedMs === undefined
          ? `timed out after ${req.timeoutMs} ms`
          : `no answer within ${req.timeoutMs} ms; this process was paused for ${pausedMs} ms meanwhile (its job's lease may have passed)`;
      finish({ statusCode: null, failure: { kind: 'timeout', message }, responseExcerpt: null, responseTruncated: false, retryAfterMs: null, ...(pausedMs === undefined ? {} : { pausedMs }) });
      request.destroy();
    };
    let timer = setTimeout(onTimeout, req.timeoutMs);
    request.on('error', (err: NodeJS.ErrnoException) => fail({ kind: failureKind(err), message: err.message || String(err) }));
    request.end(req.body);
  });
}
