import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestChain } from './anvil';
import { TEST_DATABASE_URL, TEST_REDIS_PREFIX, TEST_REDIS_URL } from './harness';
import { spawnEntry, type Spawned } from './processes';

/**
 * The running service around the browser tests of the public pages: a port to listen on, a
 * worker process scanning the local anvil chain, a merchant's shop the pages send payers back to.
 */

/** Listens on a free port of 127.0.0.1 and resolves it. */
export async function listenOnFreePort(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** The settings that point a process (worker, `npm run pay`) at the test chain and its tokens. */
export function chainEnv(chain: TestChain): Record<string, string> {
  return {
    RPC_URLS_ETHEREUM_LOCAL: chain.url,
    TOKEN_ETHEREUM_LOCAL_USDT: chain.tokens.USDT,
    TOKEN_ETHEREUM_LOCAL_USDC: chain.tokens.USDC,
    TOKEN_ETHEREUM_LOCAL_DAI: chain.tokens.DAI,
  };
}

/** A worker process scanning the chain quickly (scan, confirmations, expiry), under its own Redis prefix; resolves once started. */
export async function startChainWorker(chain: TestChain, prefixSuffix: string): Promise<Spawned> {
  const worker = spawnEntry('workers/main.ts', {
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: `${TEST_REDIS_PREFIX}${prefixSuffix}`,
    NETWORK: 'local',
    LOG_LEVEL: 'info',
    WORKER_QUEUES: 'chain-scan,chain-confirmations,order-expiry',
    CHAIN_SCAN_INTERVAL_MS: '150',
    CONFIRMATIONS_INTERVAL_MS: '150',
    ORDER_EXPIRY_INTERVAL_MS: '300',
    ...chainEnv(chain),
  });
  await worker.waitFor(/workers started/, 90_000);
  return worker;
}

/** SIGTERM, up to 5 s to finish, then the whole process group is killed. */
export async function stopWorker(worker: Spawned | undefined): Promise<void> {
  if (!worker) return;
  worker.child.kill('SIGTERM');
  await Promise.race([worker.exited, new Promise((r) => setTimeout(r, 5000))]);
  worker.killGroup();
}

/** The merchant's shop, where the pages' buttons lead: records each visit. */
export async function startShop(): Promise<{ server: http.Server; base: string; visits: URL[] }> {
  const visits: URL[] = [];
  let base = '';
  const server = http.createServer((req, res) => {
    visits.push(new URL(req.url!, base));
    res.setHeader('content-type', 'text/html');
    res.end('<!doctype html><title>Shop</title><h1 id="shop">Back at the shop</h1>');
  });
  base = `http://127.0.0.1:${await listenOnFreePort(server)}`;
  return { server, base, visits };
}
