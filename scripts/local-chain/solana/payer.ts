import {
  address,
  appendTransactionMessageInstructions,
  type Address,
  compressTransactionMessageUsingAddressLookupTables,
  createSolanaRpc,
  createTransactionMessage,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getProgramDerivedAddress,
  type Instruction,
  type KeyPairSigner,
  lamports,
  pipe,
  type Rpc,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Signature,
  type SolanaRpcApi,
  AccountRole,
} from '@solana/kit';
import { getCreateAccountInstruction, SYSTEM_PROGRAM_ADDRESS } from '@solana-program/system';
import {
  findAssociatedTokenPda,
  getCreateAssociatedTokenIdempotentInstruction,
  getInitializeAccount3Instruction,
  getInitializeMint2Instruction,
  getMintSize,
  getMintToInstruction,
  getTokenSize,
  getTransferCheckedInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from '@solana-program/token';
import { ADDRESS_LOOKUP_TABLE_PROGRAM } from './execute';
import { loadSolanaLocalWallet, type SolanaLocalInfo, type SolanaLocalWallet, type SolanaTestCurrency, TEST_MINT_DECIMALS, throwawaySigner } from './wallet';

/**
 * Test payments on solana-local with `@solana/kit`, as a wallet makes them: `transferChecked`
 * from the funded local payer to an owner's associated token account, created in the same
 * transaction when it does not exist yet. Also the awkward cases the detection tests need: a
 * payment to another (non-associated) token account of the owner, a failed transaction that
 * lands with `meta.err`, a payment in a lookalike mint, and a v0 transaction whose recipient
 * account comes from an address lookup table.
 */

export interface SolanaPayment {
  signature: string;
  /** The slot of its block once confirmed (null when not waited for). */
  slot: number | null;
  /** The transaction error (meta.err) when it landed failed. */
  err: unknown;
  from: string;
  to: string;
  /** The token account that received (or would have received) the tokens. */
  tokenAccount: string;
  mint: string;
  amount: bigint;
  /** The recipient's token account was created in this transaction. */
  createdTokenAccount: boolean;
}

export type WaitFor = 'none' | 'processed' | 'confirmed' | 'finalized';

export interface SendOptions {
  legacy?: boolean;
  skipPreflight?: boolean;
  /** Lookup tables (address → its addresses) the message is compressed with (v0). */
  lookupTables?: Record<string, string[]>;
  waitFor?: WaitFor;
}

const RANK: Record<WaitFor, number> = { none: 0, processed: 1, confirmed: 2, finalized: 3 };

export class SolanaLocalClient {
  readonly rpc: Rpc<SolanaRpcApi>;
  private lags: { confirmationLag: number; finalizationLag: number; slotMs: number } | null = null;
  private lookalike: KeyPairSigner | null = null;

  /**
   * @param produceSlots produce the slots a wait needs itself (a node with slotMs 0); otherwise
   *   wait for the node's timer.
   */
  constructor(
    readonly url: string,
    readonly wallet: SolanaLocalWallet,
    readonly info: SolanaLocalInfo,
    private readonly options: { produceSlots?: boolean } = {},
  ) {
    this.rpc = createSolanaRpc(url);
  }

  /** A client of the chain started with this DATA_DIR (another process: `npm run pay`). */
  static async fromDataDir(url: string, dataDir: string, options: { produceSlots?: boolean } = {}): Promise<SolanaLocalClient | null> {
    const loaded = await loadSolanaLocalWallet(dataDir);
    return loaded ? new SolanaLocalClient(url, loaded.wallet, loaded.info, options) : null;
  }

  /** A development control (`solanaLocal_*`). */
  async dev<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const res = await fetch(this.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [params] }) });
    const body = (await res.json()) as { result?: T; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  }

  mint(currency: SolanaTestCurrency): Address {
    return address(this.info.mints[currency]);
  }

  async ata(owner: string, mint: string): Promise<Address> {
    const [ata] = await findAssociatedTokenPda({ owner: address(owner), mint: address(mint), tokenProgram: TOKEN_PROGRAM_ADDRESS });
    return ata;
  }

  async exists(account: string): Promise<boolean> {
    const { value } = await this.rpc.getAccountInfo(address(account), { commitment: 'processed', encoding: 'base64' }).send();
    return value !== null;
  }

  async tokenBalance(tokenAccount: string, commitment: 'processed' | 'confirmed' | 'finalized' = 'processed'): Promise<bigint> {
    if (!(await this.exists(tokenAccount))) return 0n;
    const { value } = await this.rpc.getTokenAccountBalance(address(tokenAccount), { commitment }).send();
    return BigInt(value.amount);
  }

  /** Builds, signs and sends a transaction paid by `feePayer`; waits as asked. */
  async send(feePayer: KeyPairSigner, instructions: Instruction[], options: SendOptions = {}): Promise<{ signature: string; slot: number | null; err: unknown }> {
    const { value: latest } = await this.rpc.getLatestBlockhash({ commitment: 'processed' }).send();
    let message = pipe(
      createTransactionMessage({ version: options.legacy ? 'legacy' : 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) => setTransactionMessageLifetimeUsingBlockhash(latest, m),
      (m) => appendTransactionMessageInstructions(instructions, m),
    );
    if (options.lookupTables) {
      const tables = Object.fromEntries(Object.entries(options.lookupTables).map(([k, v]) => [address(k), v.map((a) => address(a))]));
      message = compressTransactionMessageUsingAddressLookupTables(message as never, tables) as typeof message;
    }
    const signed = await signTransactionMessageWithSigners(message);
    const signature = await this.rpc
      .sendTransaction(getBase64EncodedWireTransaction(signed), { encoding: 'base64', skipPreflight: options.skipPreflight ?? false, preflightCommitment: 'processed' })
      .send();
    const waitFor = options.waitFor ?? 'confirmed';
    if (waitFor === 'none') return { signature, slot: null, err: null };
    const status = await this.waitFor(signature, waitFor);
    return { signature, slot: status.slot, err: status.err };
  }

  /** Waits until the transaction reaches the commitment (producing the slots itself with produceSlots). */
  async waitFor(signature: string, commitment: Exclude<WaitFor, 'none'> = 'confirmed', timeoutMs = 30_000): Promise<{ slot: number; err: unknown }> {
    if (this.options.produceSlots) {
      const lags = await this.nodeLags();
      const needed = commitment === 'finalized' ? lags.finalizationLag + 1 : commitment === 'confirmed' ? lags.confirmationLag + 1 : 1;
      await this.dev('solanaLocal_produceSlot', { count: needed });
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { value } = await this.rpc.getSignatureStatuses([signature as Signature]).send();
      const s = value[0];
      if (s && s.confirmationStatus && RANK[s.confirmationStatus] >= RANK[commitment]) return { slot: Number(s.slot), err: s.err };
      if (Date.now() > deadline) throw new Error(`transaction ${signature} did not reach ${commitment} within ${timeoutMs} ms (is solana-local producing slots?)`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  private async nodeLags() {
    this.lags ??= await this.dev<{ confirmationLag: number; finalizationLag: number; slotMs: number }>('solanaLocal_info');
    return this.lags;
  }

  /** Tops the payer's balance of a mint up (mintTo in its own transaction) when it is below `amount`. */
  private async ensurePayerHolds(mint: Address, amount: bigint): Promise<Address> {
    const payerAta = await this.ata(this.wallet.payer.address, mint);
    const balance = await this.tokenBalance(payerAta);
    if (balance < amount) {
      await this.send(
        this.wallet.mintAuthority,
        [
          getCreateAssociatedTokenIdempotentInstruction({ payer: this.wallet.mintAuthority, ata: payerAta, owner: this.wallet.payer.address, mint }),
          getMintToInstruction({ mint, token: payerAta, mintAuthority: this.wallet.mintAuthority, amount: amount - balance + 10n ** 12n }),
        ],
        { waitFor: 'processed' },
      );
    }
    return payerAta;
  }

  /**
   * Pays `amount` base units of the mint to `owner`'s associated token account with
   * transferChecked, creating that account in the same transaction when it does not exist.
   */
  async payMint(owner: string, mint: Address, amount: bigint, options: SendOptions = {}): Promise<SolanaPayment> {
    const payer = this.wallet.payer;
    const source = await this.ensurePayerHolds(mint, amount);
    const recipient = await this.ata(owner, mint);
    const create = !(await this.exists(recipient));
    const instructions: Instruction[] = [];
    if (create) instructions.push(getCreateAssociatedTokenIdempotentInstruction({ payer, ata: recipient, owner: address(owner), mint }));
    instructions.push(getTransferCheckedInstruction({ source, mint, destination: recipient, authority: payer, amount, decimals: TEST_MINT_DECIMALS }));
    const sent = await this.send(payer, instructions, options);
    return { ...sent, from: payer.address, to: owner, tokenAccount: recipient, mint, amount, createdTokenAccount: create };
  }

  pay(owner: string, amount: bigint, currency: SolanaTestCurrency = 'USDT', options: SendOptions = {}): Promise<SolanaPayment> {
    return this.payMint(owner, this.mint(currency), amount, options);
  }

  /** Pays into a new token account of `owner` that is not its associated one (created in the same transaction). */
  async payToOtherTokenAccount(owner: string, amount: bigint, currency: SolanaTestCurrency = 'USDT', options: SendOptions = {}): Promise<SolanaPayment> {
    const payer = this.wallet.payer;
    const mint = this.mint(currency);
    const source = await this.ensurePayerHolds(mint, amount);
    const account = await throwawaySigner();
    const rent = await this.rpc.getMinimumBalanceForRentExemption(BigInt(getTokenSize())).send();
    const sent = await this.send(
      payer,
      [
        getCreateAccountInstruction({ payer, newAccount: account, lamports: rent, space: getTokenSize(), programAddress: TOKEN_PROGRAM_ADDRESS }),
        getInitializeAccount3Instruction({ account: account.address, mint, owner: address(owner) }),
        getTransferCheckedInstruction({ source, mint, destination: account.address, authority: payer, amount, decimals: TEST_MINT_DECIMALS }),
      ],
      options,
    );
    return { ...sent, from: payer.address, to: owner, tokenAccount: account.address, mint, amount, createdTokenAccount: true };
  }

  /**
   * A payment that fails on chain: it sends one base unit more than the payer holds (spl-token's
   * InsufficientFunds, custom error 1) without preflight, so it lands in a block with meta.err and
   * its fee paid, and changes no token balance (an associated account it would create is not created either).
   */
  async payFailing(owner: string, currency: SolanaTestCurrency = 'USDT', options: SendOptions = {}): Promise<SolanaPayment> {
    const payer = this.wallet.payer;
    const mint = this.mint(currency);
    const source = await this.ata(payer.address, mint);
    const amount = (await this.tokenBalance(source)) + 1n;
    const recipient = await this.ata(owner, mint);
    const create = !(await this.exists(recipient));
    const instructions: Instruction[] = [];
    if (create) instructions.push(getCreateAssociatedTokenIdempotentInstruction({ payer, ata: recipient, owner: address(owner), mint }));
    instructions.push(getTransferCheckedInstruction({ source, mint, destination: recipient, authority: payer, amount, decimals: TEST_MINT_DECIMALS }));
    const sent = await this.send(payer, instructions, { ...options, skipPreflight: true });
    return { ...sent, from: payer.address, to: owner, tokenAccount: recipient, mint, amount, createdTokenAccount: false };
  }

  /** Another mint with the test mints' decimals (made once per client), as a lookalike token. */
  async lookalikeMint(): Promise<Address> {
    if (this.lookalike) return this.lookalike.address;
    const mint = await throwawaySigner();
    const authority = this.wallet.mintAuthority;
    const rent = await this.rpc.getMinimumBalanceForRentExemption(BigInt(getMintSize())).send();
    await this.send(
      authority,
      [
        getCreateAccountInstruction({ payer: authority, newAccount: mint, lamports: rent, space: getMintSize(), programAddress: TOKEN_PROGRAM_ADDRESS }),
        getInitializeMint2Instruction({ mint: mint.address, decimals: TEST_MINT_DECIMALS, mintAuthority: authority.address }),
      ],
      { waitFor: 'processed' },
    );
    this.lookalike = mint;
    return mint.address;
  }

  /** A payment in a lookalike mint (same decimals, another address) to `owner`'s associated account of that mint. */
  async payLookalike(owner: string, amount: bigint, options: SendOptions = {}): Promise<SolanaPayment> {
    return this.payMint(owner, await this.lookalikeMint(), amount, options);
  }

  /**
   * Creates an address lookup table holding `addresses` (CreateLookupTable + ExtendLookupTable of
   * the Address Lookup Table program) and waits until it can be used (the slot after its extension).
   */
  async createLookupTable(addresses: string[]): Promise<string> {
    const payer = this.wallet.payer;
    const recentSlot = await this.rpc.getSlot({ commitment: 'finalized' }).send();
    const slotBytes = Buffer.alloc(8);
    slotBytes.writeBigUInt64LE(recentSlot);
    const [table, bump] = await getProgramDerivedAddress({
      programAddress: address(ADDRESS_LOOKUP_TABLE_PROGRAM),
      seeds: [getAddressEncoder().encode(payer.address), slotBytes],
    });
    const accounts = [
      { address: table, role: AccountRole.WRITABLE },
      { address: payer.address, role: AccountRole.READONLY_SIGNER, signer: payer },
      { address: payer.address, role: AccountRole.WRITABLE_SIGNER, signer: payer },
      { address: SYSTEM_PROGRAM_ADDRESS, role: AccountRole.READONLY },
    ];
    const create = Buffer.alloc(4 + 8 + 1);
    create.writeUInt32LE(0, 0);
    create.writeBigUInt64LE(recentSlot, 4);
    create.writeUInt8(bump, 12);
    const extend = Buffer.alloc(4 + 8 + 32 * addresses.length);
    extend.writeUInt32LE(2, 0);
    extend.writeBigUInt64LE(BigInt(addresses.length), 4);
    addresses.forEach((a, i) => Buffer.from(getAddressEncoder().encode(address(a))).copy(extend, 12 + 32 * i));
    const program = address(ADDRESS_LOOKUP_TABLE_PROGRAM);
    const sent = await this.send(payer, [
      { programAddress: program, accounts: [accounts[0], accounts[1], accounts[2], accounts[3]], data: new Uint8Array(create) },
      { programAddress: program, accounts: [accounts[0], accounts[1], accounts[2], accounts[3]], data: new Uint8Array(extend) },
    ] as Instruction[], { waitFor: 'processed' });
    if (sent.err) throw new Error(`creating the lookup table failed: ${JSON.stringify(sent.err)}`);
    // Extended addresses are usable from the next slot on.
    if (this.options.produceSlots) await this.dev('solanaLocal_produceSlot', { count: 1 });
    const deadline = Date.now() + 30_000;
    while ((await this.rpc.getSlot({ commitment: 'processed' }).send()) <= BigInt(sent.slot!)) {
      if (Date.now() > deadline) throw new Error('no slot after the lookup table extension');
      await new Promise((r) => setTimeout(r, 25));
    }
    return table;
  }

  /**
   * A v0 payment whose recipient token account, the mint and the owner come from an address
   * lookup table (created first): in getBlock/getTransaction they appear under
   * meta.loadedAddresses, indexed after the static keys. The recipient's associated account is
   * created in the same transaction when it does not exist.
   */
  async payWithLookupTable(owner: string, amount: bigint, currency: SolanaTestCurrency = 'USDT', options: SendOptions = {}): Promise<SolanaPayment & { lookupTable: string }> {
    const payer = this.wallet.payer;
    const mint = this.mint(currency);
    const source = await this.ensurePayerHolds(mint, amount);
    const recipient = await this.ata(owner, mint);
    const create = !(await this.exists(recipient));
    const addresses = [recipient, mint, owner];
    const table = await this.createLookupTable(addresses);
    const instructions: Instruction[] = [];
    if (create) instructions.push(getCreateAssociatedTokenIdempotentInstruction({ payer, ata: recipient, owner: address(owner), mint }));
    instructions.push(getTransferCheckedInstruction({ source, mint, destination: recipient, authority: payer, amount, decimals: TEST_MINT_DECIMALS }));
    const sent = await this.send(payer, instructions, { ...options, lookupTables: { [table]: addresses } });
    return { ...sent, from: payer.address, to: owner, tokenAccount: recipient, mint, amount, createdTokenAccount: create, lookupTable: table };
  }

  /** Sends lamports from the faucet (as requestAirdrop does). */
  async airdrop(to: string, amount: bigint): Promise<string> {
    return this.rpc.requestAirdrop(address(to), lamports(amount)).send();
  }
}
