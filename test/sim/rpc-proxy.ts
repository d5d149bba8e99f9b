import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Rng } from './rng';

/** Faults the proxy injects between the service and the chain. */
export type RpcFaultKind = 'delay' | 'error' | 'http-error' | 'timeout' | 'duplicate' | 'reorder' | 'stale' | 'stall';

export interface RpcFaultRates {
  delay: number;
  error: number;
  httpError: number;
  timeout: number;
  duplicate: number;
  reorder: number;
  stale: number;
}

export const DEFAULT_RPC_FAULTS: RpcFaultRates = { delay: 0.15, error: 0.02, httpError: 0.02, timeout: 0.003, duplicate: 0.02, reorder: 0.3, stale: 0.01 };

/** The default rates times `scale` (the simulation's --rpc-fault-scale), each capped at 1; 0 injects nothing. */
export const scaledRpcFaults = (scale: number): RpcFaultRates =>
  Object.fromEntries(Object.entries(DEFAULT_RPC_FAULTS).map(([k, rate]) => [k, Math.min(1, rate * scale)])) as unknown as RpcFaultRates;

export interface FaultyRpcProxy {
  url: string;
  counts: Record<RpcFaultKind, number>;
  requests: number;
  /** Faults off (quiescence): the service must then converge. */
  setEnabled(on: boolean): void;
  /** A scanner stall (issue 25): every call held for `ms`, no error, then answered as usual. */
  hold(ms: number): void;
  close(): Promise<void>;
}

/**
 * What the proxy speaks: JSON-RPC (anvil; one path, calls and batches in the body) or the java-tron
 * HTTP API (tron-local; a path per call, `{"Error": …}` bodies for errors).
 */
export type RpcDialect = 'json-rpc' | 'tron-http';

/** Tron's head calls: a lagging node behind a load balancer answers an older block for them. */
const TRON_HEAD_PATHS = new Set(['/wallet/getnowblock', '/walletsolidity/getnowblock']);

/**
 * A proxy in front of the chain that delays, duplicates, reorders (batch answers; and answers
 * overtaken by later ones), times out, errors and answers stale heads, at seeded rates. Only read
 * calls pass through here (the service never sends transactions), so forwarding a call twice is
 * harmless to the chain.
 */
export async function startFaultyRpcProxy(target: string, rng: Rng, rates: RpcFaultRates = DEFAULT_RPC_FAULTS, dialect: RpcDialect = 'json-rpc'): Promise<FaultyRpcProxy> {
  const counts: Record<RpcFaultKind, number> = { delay: 0, error: 0, 'http-error': 0, timeout: 0, duplicate: 0, reorder: 0, stale: 0, stall: 0 };
  let enabled = true;
  let holdUntil = 0;
  let requests = 0;
  /** Recent answers to head calls, per head call (eth_blockNumber; Tron's two getnowblock paths). */
  const lastHeads = new Map<string, string[]>();
  // Answers overtaken by the answer of a later call (delays make them arrive out of order).
  let received = 0;
  let latestAnswered = 0;
  const held = new Set<http.ServerResponse>();

  const forward = async (p: string, body: string): Promise<string> => {
    const res = await fetch(`${target}${p === '/' ? '' : p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return res.text();
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        requests++;
        if (enabled && Date.now() < holdUntil) {
          counts.stall++;
          while (enabled && Date.now() < holdUntil) await new Promise((r) => setTimeout(r, 100));
        }
        const seq = ++received;
        const body = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(body);
        } catch {
          parsed = null;
        }
        const p = req.url ?? '/';
        const single = dialect === 'json-rpc' && parsed && !Array.isArray(parsed) ? (parsed as { id?: unknown; method?: string }) : null;
        // The head call this is, if any: its answers are kept to be served stale later.
        const headCall = dialect === 'json-rpc' ? (single?.method === 'eth_blockNumber' ? 'eth_blockNumber' : null) : TRON_HEAD_PATHS.has(p) ? p : null;
        const answer = (status: number, text: string) => {
          if (res.writableEnded || res.destroyed) return;
          // Overtaken by a later call's answer: counted as injected when the proxy injects delays (with
          // none, concurrent calls still overtake each other now and then, and nothing was injected).
          if (seq < latestAnswered && rates.delay > 0) counts.reorder++;
          latestAnswered = Math.max(latestAnswered, seq);
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(text);
        };
        if (enabled) {
          if (rng.chance(rates.timeout)) {
            counts.timeout++;
            held.add(res);
            // Hold the call, then cut the connection: the client sees a timeout or reset.
            setTimeout(() => (held.delete(res), res.destroy()), 6_000);
            return;
          }
          if (rng.chance(rates.httpError)) {
            counts['http-error']++;
            return answer(rng.chance(0.5) ? 503 : 502, JSON.stringify({ error: 'upstream unavailable' }));
          }
          if (single && rng.chance(rates.error)) {
            counts.error++;
            return answer(200, JSON.stringify({ jsonrpc: '2.0', id: single.id ?? null, error: { code: -32603, message: 'internal error (injected)' } }));
          }
          if (dialect === 'tron-http' && rng.chance(rates.error)) {
            counts.error++;
            return answer(200, JSON.stringify({ Error: 'class java.lang.NullPointerException : null (injected)' }));
          }
          if (rng.chance(rates.delay)) {
            counts.delay++;
            await new Promise((r) => setTimeout(r, rng.int(20, 800)));
          }
          const seen = headCall ? (lastHeads.get(headCall) ?? []) : [];
          if (headCall && seen.length > 3 && rng.chance(rates.stale)) {
            // A lagging node behind a load balancer: an older head (JSON-RPC: with this call's id).
            counts.stale++;
            const old = seen[rng.int(0, seen.length - 3)];
            return answer(200, single ? JSON.stringify({ jsonrpc: '2.0', id: single.id ?? null, result: old }) : old);
          }
        }
        let text: string;
        try {
          text = await forward(p, body);
          if (enabled && rng.chance(rates.duplicate)) {
            counts.duplicate++;
            text = await forward(p, body);
          }
        } catch {
          return answer(502, JSON.stringify({ error: 'chain unreachable' }));
        }
        if (headCall) {
          try {
            const r = single ? (JSON.parse(text) as { result?: string }).result : (JSON.parse(text) as { blockID?: string }).blockID ? text : undefined;
            if (r) {
              const list = lastHeads.get(headCall) ?? [];
              list.push(r);
              if (list.length > 20) list.shift();
              lastHeads.set(headCall, list);
            }
          } catch {
            // not JSON: pass through
          }
        }
        if (enabled && Array.isArray(parsed) && parsed.length > 1 && rng.chance(rates.reorder)) {
          try {
            const items = JSON.parse(text) as unknown[];
            if (Array.isArray(items)) {
              counts.reorder++;
              text = JSON.stringify(items.reverse());
            }
          } catch {
            // pass through
          }
        }
        answer(200, text);
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    get requests() {
      return requests;
    },
    setEnabled(on) {
      enabled = on;
      if (!on) holdUntil = 0;
    },
    hold(ms) {
      holdUntil = Math.max(holdUntil, Date.now() + ms);
    },
    async close() {
      for (const r of held) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
