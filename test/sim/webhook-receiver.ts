import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Rng } from './rng';

/** How the receiver answered one POST. */
export type ReceiverAnswer = 'ok' | 'fail' | 'timeout' | 'gone';

export interface ReceivedPost {
  endpoint: string;
  eventId: string;
  type: string;
  answer: ReceiverAnswer;
  at: number;
}

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
  const server = http.createServer((req, res) => {
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
      posts.push({ endpoint, eventId, type, answer, at: Date.now() });
      const send = (status: number) => {
        if (res.destroyed) return;
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
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
