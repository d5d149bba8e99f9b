import { TronLocalNode } from '../../scripts/local-chain/tron/tron-local-node';
import { randomTronAddress } from '../helpers/addresses';

/**
 * tron-local for the simulation: an in-process node producing blocks on its timer (the chain's
 * configured block time), its clock behind the service's like anvil's, and payers funded with its
 * test USDT. Payments go through its development endpoint (several transfers in one transaction
 * for a batch), left for the next block; reorgs orphan its newest unsolidified blocks.
 */
export interface SimTron {
  node: TronLocalNode;
  /** The test USDT contract (T… form). */
  token: string;
  /** Head once the payers are funded: the history the checks read starts here. */
  startBlock: number;
  /** One transaction of one or more USDT transfers from a payer; its id. */
  pay(from: string, transfers: { to: string; amount: bigint }[]): Promise<string>;
  /** Depth from the head down to the oldest of the newest `blocks` unsolidified blocks holding a transaction; 0: none does. */
  newestWithTransactions(blocks: number): Promise<number>;
  /** Waits until the transaction is in a block; its depth from the head (0: not mined in time). */
  waitMined(txId: string, timeoutMs: number): Promise<number>;
  /** Orphans the newest `blocks` unsolidified blocks; their transactions re-included in the new ones or gone. */
  orphan(blocks: number, reinclude: boolean): Promise<{ orphaned: number; from: number; transactions: number }>;
  payers: string[];
  /** Height → the block solidified there and when (machine clock, ms): when Tron credits a payment. */
  solidified: Map<number, { hash: string; atMs: number }>;
  stop(): Promise<void>;
}

export async function startSimTron(opts: { blockTimeMs: number; solidificationLag: number; clockLagMs: number; payers: number }): Promise<SimTron> {
  const solidified = new Map<number, { hash: string; atMs: number }>();
  const node = new TronLocalNode({
    blockTimeMs: opts.blockTimeMs,
    solidificationLag: opts.solidificationLag,
    clockLagMs: opts.clockLagMs,
    onSolidified: (b) => solidified.set(b.number, { hash: b.hash, atMs: Date.now() }),
  });
  await node.start();
  const dev = async (route: string, body: unknown) => {
    const res = await fetch(`${node.url}/dev/${route}`, { method: 'POST', body: JSON.stringify(body) });
    const answer = (await res.json()) as Record<string, unknown>;
    if (answer.Error) throw new Error(`tron-local /dev/${route}: ${String(answer.Error)}`);
    return answer;
  };
  const payers = Array.from({ length: opts.payers }, randomTronAddress);
  // Funded from the faucet, mined at once (before the run's history begins).
  await dev('transfer', { transfers: payers.map((to) => ({ to, amount: (10n ** 16n).toString() })), mine: true });
  const txIds = async (num: number): Promise<string[]> => {
    const res = await fetch(`${node.url}/wallet/getblockbynum`, { method: 'POST', body: JSON.stringify({ num }) });
    const block = (await res.json()) as { transactions?: { txID: string }[] };
    return (block.transactions ?? []).map((t) => t.txID);
  };
  /** Depth of the oldest of the newest `blocks` unsolidified blocks that `holds` a matching transaction. */
  const deepest = async (blocks: number, holds: (ids: string[]) => boolean): Promise<number> => {
    const head = node.head.number;
    let depth = 0;
    for (let num = head; num > node.solidifiedNumber && head - num < blocks; num--) if (holds(await txIds(num))) depth = head - num + 1;
    return depth;
  };
  return {
    node,
    newestWithTransactions: (blocks) => deepest(blocks, (ids) => ids.length > 0),
    async waitMined(txId, timeoutMs) {
      for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
        const depth = await deepest(opts.solidificationLag, (ids) => ids.includes(txId));
        if (depth > 0) return depth;
      }
      return 0;
    },
    token: node.token,
    startBlock: node.head.number,
    payers,
    solidified,
    async pay(from, transfers) {
      const sent = await dev('transfer', { transfers: transfers.map((t) => ({ from, to: t.to, amount: t.amount.toString() })), mine: false });
      return String(sent.txID);
    },
    async orphan(blocks, reinclude) {
      // The transactions the orphaned blocks held (counted just before: the timer may add a block in between).
      let transactions = 0;
      for (let num = node.head.number; num > node.solidifiedNumber && node.head.number - num < blocks; num--) transactions += (await txIds(num)).length;
      const done = (await dev('orphan', { blocks, reinclude })) as { orphaned: number; from: number };
      return { ...done, transactions };
    },
    stop: () => node.stop(),
  };
}
