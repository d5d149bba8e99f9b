import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleRpc } from './rpc';
import type { SolanaLocalNode } from './solana-local-node';
import { RpcError, rpcErrors, stringifyJson } from './wire';

/** solana-local's HTTP JSON-RPC endpoint (POST, single requests and batches), on 127.0.0.1. */
export async function serveRpc(node: SolanaLocalNode, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => void handle(node, req, res));
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function handle(node: SolanaLocalNode, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const send = (status: number, body: string): void => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(body);
  };
  if (req.method !== 'POST') return send(405, '');
  let raw = '';
  for await (const chunk of req) raw += chunk;
  let request: unknown;
  try {
    request = JSON.parse(raw);
  } catch {
    return send(200, stringifyJson({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }));
  }
  if (Array.isArray(request)) {
    const answers = [];
    for (const r of request) answers.push(await answer(node, r));
    return send(200, stringifyJson(answers));
  }
  return send(200, stringifyJson(await answer(node, request)));
}

async function answer(node: SolanaLocalNode, request: unknown): Promise<unknown> {
  const r = request as { id?: unknown; method?: unknown; params?: unknown };
  const id = r && typeof r === 'object' && 'id' in r ? r.id : null;
  try {
    if (!r || typeof r !== 'object' || typeof r.method !== 'string') throw rpcErrors.invalidRequest();
    const params = r.params === undefined ? [] : r.params;
    if (!Array.isArray(params)) throw rpcErrors.invalidParams('Invalid params: expected an array');
    return { jsonrpc: '2.0', result: await handleRpc(node, r.method, params), id };
  } catch (err) {
    if (err instanceof RpcError) return { jsonrpc: '2.0', error: { code: err.code, message: err.message, ...(err.data === undefined ? {} : { data: err.data }) }, id };
    return { jsonrpc: '2.0', error: { code: -32603, message: `Internal error: ${(err as Error).message}` }, id };
  }
}
