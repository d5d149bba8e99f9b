import { address, type Address, type Instruction } from '@solana/kit';
import { findAssociatedTokenPda, getCreateAssociatedTokenIdempotentInstruction, getTransferCheckedInstruction, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token';
import { startSolanaLocal, type RunningSolanaLocal } from '../../scripts/local-chain/solana/solana-local';
import { SolanaLocalClient } from '../../scripts/local-chain/solana/payer';
import { TEST_MINT_DECIMALS } from '../../scripts/local-chain/solana/wallet';
import type { Rng } from './rng';

/**
 * solana-local for the simulation: an in-process node producing a slot every 400 ms (the chain's
 * configured slot time), skipping slots now and then as leaders do, and paying from its funded
 * payer (a batch is one transaction of several transferChecked, each recipient's associated
 * account created in the same transaction when needed). Forks drop the newest unfinalized blocks,
 * re-including their transactions or not.
 */
export interface SimSolana {
  chain: RunningSolanaLocal;
  mints: { USDC: string; USDT: string };
  /** The confirmed slot once started: the history the checks read starts here. */
  startSlot: number;
  /**
   * One or more transfers, PER_TRANSACTION to a transaction: each item's transaction signature (the
   * intent oracle finds a Solana payment by signature and recipient owner, since its identity's index
   * is the recipient token account's place in the transaction's account list).
   */
  pay(items: { to: string; currency: string; amount: bigint }[]): Promise<string[]>;
  /** Drops the newest `blocks` unfinalized blocks; their transactions re-included in the next block or gone. */
  fork(blocks: number, reinclude: boolean): Promise<{ dropped: number; reincluded: number }>;
  /** Slots skipped so far. */
  skipped(): number;
  stop(): Promise<void>;
}

/** Transfers per transaction (a Solana transaction is at most 1232 bytes). */
const PER_TRANSACTION = 3;

export async function startSimSolana(opts: { slotMs: number; finalizationLag: number; rng: Rng }): Promise<SimSolana> {
  const chain = await startSolanaLocal({ dataDir: null, port: 0, slotMs: opts.slotMs, finalizationLag: opts.finalizationLag });
  const client = new SolanaLocalClient(chain.url, chain.wallet, chain.info);
  const payer = chain.wallet.payer;
  const mints = { USDC: chain.info.mints.USDC, USDT: chain.info.mints.USDT };
  const sources: Record<string, Address> = {};
  for (const [currency, mint] of Object.entries(mints)) [sources[currency]] = await findAssociatedTokenPda({ owner: payer.address, mint: address(mint), tokenProgram: TOKEN_PROGRAM_ADDRESS });
  let skipped = 0;
  // Leaders miss their slots now and then: one to three skipped slots every few seconds.
  const skipper = setInterval(() => {
    if (!opts.rng.chance(0.4)) return;
    const n = opts.rng.int(1, 3);
    chain.node.skipSlots(n);
    skipped += n;
  }, 2_000);
  const startSlot = Number(await client.rpc.getSlot({ commitment: 'confirmed' }).send());
  return {
    chain,
    mints,
    startSlot,
    async pay(items) {
      const signatures: string[] = [];
      for (let i = 0; i < items.length; i += PER_TRANSACTION) {
        const instructions: Instruction[] = [];
        for (const item of items.slice(i, i + PER_TRANSACTION)) {
          const mint = address(mints[item.currency as 'USDC' | 'USDT']);
          const [ata] = await findAssociatedTokenPda({ owner: address(item.to), mint, tokenProgram: TOKEN_PROGRAM_ADDRESS });
          instructions.push(getCreateAssociatedTokenIdempotentInstruction({ payer, ata, owner: address(item.to), mint }));
          instructions.push(getTransferCheckedInstruction({ source: sources[item.currency], mint, destination: ata, authority: payer, amount: item.amount, decimals: TEST_MINT_DECIMALS }));
        }
        // Refused at preflight (a fork dropped the block whose hash the transaction carries): it never
        // landed, so it is sent again with a fresh blockhash.
        let signature = '';
        for (let attempt = 1; ; attempt++) {
          try {
            ({ signature } = await client.send(payer, instructions, { waitFor: 'none' }));
            break;
          } catch (err) {
            if (attempt >= 3 || !/simulation failed|blockhash/i.test((err as Error).message)) throw err;
            await new Promise((r) => setTimeout(r, 500));
          }
        }
        for (let k = i; k < Math.min(items.length, i + PER_TRANSACTION); k++) signatures.push(signature);
      }
      return signatures;
    },
    async fork(blocks, reinclude) {
      const done = await client.dev<{ dropped: number[]; reincluded: string[] }>('solanaLocal_fork', { blocks, reinclude });
      return { dropped: done.dropped.length, reincluded: done.reincluded.length };
    },
    skipped: () => skipped,
    async stop() {
      clearInterval(skipper);
      await chain.stop();
    },
  };
}
