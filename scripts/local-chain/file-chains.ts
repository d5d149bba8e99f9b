import { envKey, type Chain, type ChainRegistry } from '../../core/chains/registry';

/**
 * `npm start` on NETWORK=local starts nodes for the built-in local chains only (ethereum-local,
 * tron-local, solana-local). A chain the chains file adds (CHAINS_FILE) runs on a node the operator
 * starts, with the token contracts the file names deployed on it: `npm start` cannot make those up
 * (a fresh node has no contract at the file's addresses). So it asks each added chain's node for its
 * chain id at start-up and says, on the terminal, which one is not there and how to start it, or
 * which one answers as another chain (a URL pointing at another chain's node would scan that chain's
 * blocks under this chain's name).
 */
export interface FileChainNodeProblem {
  chainId: string;
  evmChainId: number;
  rpcUrls: string[];
  /** The chain id a node answered when it is not the file's; absent when no URL answered. */
  answeredChainId?: number;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1', '0.0.0.0']);

/** The EVM chain id the node at `url` answers (eth_chainId), or null when nothing answers in time. */
export async function evmChainIdAt(url: string, timeoutMs: number): Promise<number | null> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return null;
    const body = (await res.json()) as { result?: unknown };
    return typeof body.result === 'string' && /^0x[0-9a-f]+$/i.test(body.result) ? Number(BigInt(body.result)) : null;
  } catch {
    return null;
  }
}

/**
 * The chains file's enabled EVM chains on this network whose node is missing (no RPC URL answers
 * eth_chainId) or answers another chain id than the file's. All are asked at once, each URL within
 * `timeoutMs`; a chain is fine as soon as one of its URLs answers with its chain id.
 */
export async function checkFileChainNodes(registry: ChainRegistry, timeoutMs = 2_000): Promise<FileChainNodeProblem[]> {
  const fileChains = (registry.chainsFile?.chains ?? [])
    .map((def) => registry.get(def.chainId))
    .filter((c): c is Chain & { evmChainId: number } => !!c && c.enabled && c.protocol === 'evm' && c.evmChainId !== undefined);
  const checked = await Promise.all(
    fileChains.map(async (chain): Promise<FileChainNodeProblem | null> => {
      const answers = await Promise.all(chain.rpcUrls.map((url) => evmChainIdAt(url, timeoutMs)));
      if (answers.includes(chain.evmChainId)) return null;
      const other = answers.find((a): a is number => a !== null);
      return { chainId: chain.chainId, evmChainId: chain.evmChainId, rpcUrls: [...chain.rpcUrls], ...(other !== undefined ? { answeredChainId: other } : {}) };
    }),
  );
  return checked.filter((p): p is FileChainNodeProblem => p !== null);
}

/** The command that starts a node for a loopback RPC URL, or null for a URL on another host (not ours to start). */
export function anvilCommandFor(rpcUrl: string, evmChainId: number): string | null {
  let url: URL;
  try {
    url = new URL(rpcUrl);
  } catch {
    return null;
  }
  if (!LOOPBACK_HOSTS.has(url.hostname)) return null;
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return `npx anvil --port ${port} --chain-id ${evmChainId}`;
}

/** What `npm start` prints about the problems (empty when there are none): one paragraph per chain. */
export function fileChainNodesMessage(problems: FileChainNodeProblem[], chainsFilePath: string): string {
  if (problems.length === 0) return '';
  const paragraphs = problems.map((p) => {
    const urls = p.rpcUrls.join(', ');
    const override = `RPC_URLS_${envKey(p.chainId)}`;
    if (p.answeredChainId !== undefined) {
      return (
        `  Chain ${p.chainId} (chains file): the node at ${urls} answers chain id ${p.answeredChainId}, the file says ${p.evmChainId}.\n` +
        `    It is another chain's node (another local chain on that port?), whose blocks would be read as ${p.chainId}'s: give ${p.chainId} its own node and URL (the file's rpcUrls or ${override}).\n`
      );
    }
    const start = p.rpcUrls.map((u) => anvilCommandFor(u, p.evmChainId)).find((c): c is string => c !== null);
    return (
      `  Chain ${p.chainId} (chains file): no node answers at ${urls}; npm start starts nodes for the built-in local chains only.\n` +
      (start
        ? `    Start its node (${start}), deploy on it the token contracts the file names for ${p.chainId}, then restart npm start.\n`
        : `    Check that URL (the file's rpcUrls, or ${override}); its node is not one npm start runs.\n`) +
      `    Until then ${p.chainId} is not scanned: payments on it are not seen, and after a minute /health shows it degraded.\n`
    );
  });
  return `\n  CHAINS_FILE ${chainsFilePath}:\n${paragraphs.join('')}`;
}
