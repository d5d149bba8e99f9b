import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Rng } from './rng';

/** How the receiver answered one POST. */
export type ReceiverAnswer = 'ok' | 'fail' | 'timeout' | 'gone';

export interface ReceivedPost {
  endpoint: string;
  eventId: string;
  type: string;
  answer: ReceiverAnswer;
  at: number;
  /**
   * The service never took this answer in: its connection was gone when the answer was due, or
   * closed within UNREAD_WITHIN_MS of it with no further request on it (the service's sender keeps
   * a connection whose answer it read for the next POST; it closes one whose request timed out, and
   * a worker that ends closes all of its own). A POST this receiver processes only after the
   * service's timeout — its event loop is shared with tron-local and solana-local and stalls — is
   * still recorded with the answer drawn for it, though the service had recorded a timeout.
   */
  unread?: boolean;
}

/**
 * A connection closed this soon after its last answer was not closed by a client that read it:
 * the service's sender keeps a connection whose answer it read for the next POST (keep-alive, idle
 * for 4 s: core/webhooks/sender.ts), and destroys one whose request timed out. A timeout that had
 * fired before the answer was written closes at once (the close is already waiting); one that fires
 * after it, with the answer unread, fires at most a second late (a later one is taken as a pause of
 * the worker, which then reads what has arrived).
 */
const UNREAD_WITHIN_MS = 1_000;

export interface ChaosReceiver {
  url: string;
  posts: ReceivedPost[];
  /** Endpoints (paths) that may answer 410 Gone. */
  allowGone(path: string): void;
  /** Every answer 200 from now on (quiescence). */
  setCalm(on: boolean): void;
  close(): Promise<void>;
}

/**
 * The merchants' webhook receiver: records every POST, and answers 500, times out (answers after
 * the service's timeout) or — on endpoints allowed to — 410 at seeded rates.
 */
export async function startChaosReceiver(rng: Rng, opts: { timeoutMs: number; failRate?: number; timeoutRate?: number; goneRate?: number }): Promise<ChaosReceiver> {
  const posts: ReceivedPost[] = [];
  const gone = new Set<string>();
  let calm = false;
  const failRate = opts.failRate ?? 0.12;
  const timeoutRate = opts.timeoutRate ?? 0.04;
  const goneRate = opts.goneRate ?? 0.03;
  // Per connection: its latest POST and when that was answered (undefined: not yet).
  const latest = new WeakMap<Socket, { post: ReceivedPost; answeredAt?: number }>();
  const watched = new WeakSet<Socket>();
  let closing = false;
  const watch = (socket: Socket) => {
    if (watched.has(socket)) return;
    watched.add(socket);
    socket.once('close', () => {
      if (closing) return; // closed by close(), not by the service
      const last = latest.get(socket);
      if (last && (last.answeredAt === undefined || Date.now() - last.answeredAt <= UNREAD_WITHIN_MS)) last.post.unread = true;
    });
  };
  const server = http.createServer((req, res) => {
    watch(req.socket);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const endpoint = req.url ?? '/';
      let eventId = String(req.headers['x-service-event-id'] ?? '');
      let type = '';
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: string; type?: string };
        eventId ||= body.id ?? '';
        type = body.type ?? '';
      } catch {
        // recorded with what the headers say
      }
      let answer: ReceiverAnswer = 'ok';
      if (!calm) {
        if (gone.has(endpoint) && rng.chance(goneRate)) answer = 'gone';
        else if (rng.chance(failRate)) answer = 'fail';
        else if (rng.chance(timeoutRate)) answer = 'timeout';
      }
      const post: ReceivedPost = { endpoint, eventId, type, answer, at: Date.now() };
      posts.push(post);
      const last: { post: ReceivedPost; answeredAt?: number } = { post };
      latest.set(req.socket, last);
      const send = (status: number) => {
        last.answeredAt = Date.now();
        if (res.destroyed) {
          post.unread = true;
          return;
        }
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ received: status < 300 }));
      };
      if (answer === 'ok') send(200);
      else if (answer === 'fail') send(rng.pick([500, 502, 503, 400]));
      else if (answer === 'gone') send(410);
      else setTimeout(() => send(200), opts.timeoutMs + 500);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    posts,
    allowGone: (p) => gone.add(p),
    setCalm: (on) => (calm = on),
    async close() {
      closing = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
