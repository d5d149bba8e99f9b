import type { Logger } from '../../logger';
import type { Chain } from '../registry';
import type { EvmRpc } from './evm-rpc';

/**
 * Reads decimals() of every configured token of a chain and compares it with the registry
 * (design.md §4a: read from the chain, not assumed). A chain with a mismatch is not scanned: an
 * amount read with the wrong decimals would credit the wrong value. Checked once per process.
 */
const DECIMALS_SELECTOR = '0x313ce567';
const verdicts = new Map<string, { ok: boolean; problems: string[] }>();

export async function verifyTokenDecimals(chain: Chain, rpc: EvmRpc, logger: Logger): Promise<boolean> {
  const key = `${chain.chainId}|${Object.values(chain.tokens).map((t) => t?.address ?? '-').join(',')}`;
  const known = verdicts.get(key);
  if (known) return known.ok;
  const problems: string[] = [];
  for (const token of Object.values(chain.tokens)) {
    if (!token?.address) continue;
    let onChain: number | null = null;
    try {
      const raw = await rpc.call(token.address, DECIMALS_SELECTOR);
      onChain = raw && raw !== '0x' ? Number(BigInt(raw)) : null;
    } catch (err) {
      if ((err as Error).name === 'RpcUnavailableError') throw err; // provider down: check again later
      onChain = null;
    }
    if (onChain !== token.decimals) {
      problems.push(`${token.currency} at ${token.address} reports decimals ${onChain ?? 'none'}, the registry expects ${token.decimals}`);
    }
  }
  const ok = problems.length === 0;
  verdicts.set(key, { ok, problems });
  if (!ok) {
    logger.error({ chainId: chain.chainId, problems }, `refusing to scan ${chain.chainId}: token decimals mismatch (${problems.join('; ')})`);
  } else {
    logger.info({ chainId: chain.chainId }, 'token decimals verified');
  }
  return ok;
}

export function resetTokenVerdicts(): void {
  verdicts.clear();
}
