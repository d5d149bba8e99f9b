import path from 'node:path';
import { type Address, type Instruction, lamports } from '@solana/kit';
import { getCreateAccountInstruction, getTransferSolInstruction } from '@solana-program/system';
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getInitializeMint2Instruction,
  getMintSize,
  getMintToInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import { serveRpc } from './server';
import { SolanaLocalNode } from './solana-local-node';
import {
  loadOrCreateKeys,
  readInfoIn,
  signedWire,
  solanaLocalDir,
  SOLANA_TEST_CURRENCIES,
  type SolanaLocalInfo,
  type SolanaLocalWallet,
  type SolanaTestCurrency,
  TEST_MINT_DECIMALS,
  throwawaySigner,
  walletFromKeys,
  writeInfo,
} from './wallet';

/**
 * Starts solana-local (development only): its ledger, keys and test mints under
 * `<dataDir>/solana-local/` (none: memory only, for tests), a JSON-RPC server on `port` (0: any
 * free port). On the first start it funds a faucet, a payer and a mint authority and creates the
 * test mints USDC and USDT (6 decimals), the payer holding a large balance of each; later starts
 * continue the same chain. Call it from local-chain.ts as tron-local is started:
 * `startSolanaLocal({ dataDir: config.dataDir, port: 8899, slotMs: 400 })`.
 */

export interface SolanaLocalOptions {
  /** DATA_DIR; null: memory only. */
  dataDir: string | null;
  /** 0 picks a free port. */
  port?: number;
  /** Slot interval in ms (400 like mainnet); 0: slots only on solanaLocal_produceSlot. */
  slotMs?: number;
  /** Blocks from the newest to the confirmed one (1). */
  confirmationLag?: number;
  /** Blocks from the newest to the finalized one (32). */
  finalizationLag?: number;
}

export interface RunningSolanaLocal {
  url: string;
  node: SolanaLocalNode;
  info: SolanaLocalInfo;
  wallet: SolanaLocalWallet;
  /** True on the first start of this chain (its ledger was new). */
  created: boolean;
  stop(): Promise<void>;
}

const PAYER_LAMPORTS = 1_000n * 1_000_000_000n; // 1000 SOL
const MINT_AUTHORITY_LAMPORTS = 100n * 1_000_000_000n;
/** The payer's starting balance of each test mint (base units): 1 billion. */
export const PAYER_TOKEN_BALANCE = 1_000_000_000n * 10n ** BigInt(TEST_MINT_DECIMALS);

export async function startSolanaLocal(options: SolanaLocalOptions): Promise<RunningSolanaLocal> {
  const dir = options.dataDir === null ? null : solanaLocalDir(options.dataDir);
  const node = new SolanaLocalNode({
    ledgerFile: dir ? path.join(dir, 'ledger.jsonl') : null,
    slotMs: options.slotMs,
    confirmationLag: options.confirmationLag,
    finalizationLag: options.finalizationLag,
  });
  const wallet = await walletFromKeys(loadOrCreateKeys(dir));
  node.faucet = async (to, amount, blockhash) =>
    signedWire(wallet.faucet, [getTransferSolInstruction({ source: wallet.faucet, destination: to as Address, amount })], blockhash, 0n);
  const existing = readInfoIn(dir);
  const created = !existing || existing.genesisHash !== node.genesisHash;
  const minted = created ? await createTestMints(node, wallet) : existing;
  node.details = { mints: minted.mints, decimals: minted.decimals, payer: minted.payer, faucet: minted.faucet };
  const server = await serveRpc(node, options.port ?? 0);
  node.startSlots();
  const info = { ...minted, rpcUrl: server.url };
  writeInfo(dir, info);
  let stopped = false;
  return {
    url: server.url,
    node,
    info,
    wallet,
    created,
    async stop() {
      if (stopped) return;
      stopped = true;
      node.stopSlots();
      await server.close();
    },
  };
}

/** The first block after genesis: faucet, payer and mint authority funded; USDC and USDT created, the payer holding each. */
async function createTestMints(node: SolanaLocalNode, wallet: SolanaLocalWallet): Promise<SolanaLocalInfo> {
  const { faucet, payer, mintAuthority } = wallet;
  if (!node.account(faucet.address)) node.genesisFaucet(faucet.address);
  const head = () => node.head;
  const submit = async (feePayer: typeof faucet, instructions: Instruction[]) => {
    node.submit(await signedWire(feePayer, instructions, head().blockhash, BigInt(head().blockHeight + 150)));
  };
  await submit(faucet, [
    getTransferSolInstruction({ source: faucet, destination: payer.address, amount: PAYER_LAMPORTS }),
    getTransferSolInstruction({ source: faucet, destination: mintAuthority.address, amount: MINT_AUTHORITY_LAMPORTS }),
  ]);
  const mints = {} as Record<SolanaTestCurrency, string>;
  const rent = lamports(node.svm.minimumBalanceForRentExemption(BigInt(getMintSize())));
  for (const currency of SOLANA_TEST_CURRENCIES) {
    const mint = await throwawaySigner();
    const [payerAta] = await findAssociatedTokenPda({ owner: payer.address, mint: mint.address, tokenProgram: TOKEN_PROGRAM_ADDRESS });
    await submit(mintAuthority, [
      getCreateAccountInstruction({ payer: mintAuthority, newAccount: mint, lamports: rent, space: getMintSize(), programAddress: TOKEN_PROGRAM_ADDRESS }),
      getInitializeMint2Instruction({ mint: mint.address, decimals: TEST_MINT_DECIMALS, mintAuthority: mintAuthority.address }),
      getCreateAssociatedTokenIdempotentInstruction({ payer: mintAuthority, ata: payerAta, owner: payer.address, mint: mint.address }),
      getMintToInstruction({ mint: mint.address, token: payerAta, mintAuthority, amount: PAYER_TOKEN_BALANCE }),
    ]);
    mints[currency] = mint.address;
  }
  node.produceSlots(1);
  return { genesisHash: node.genesisHash, mints, decimals: TEST_MINT_DECIMALS, payer: payer.address, faucet: faucet.address, mintAuthority: mintAuthority.address };
}
