import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { hex20FromTron, normalizeTronAddress, tronFromHex20, tronFromHex41 } from '../../../core/chains/tron/tron-address';
import { TRC20_TRANSFER_TOPIC } from '../../../core/chains/tron/tron-transfers';

/**
 * tron-local: a small Tron node for development and tests (no Tron node is installable from the
 * registries we reach). It produces blocks on a timer, solidifies them a configurable number of
 * blocks behind the head, holds one TRC-20 test USDT (6 decimals) with balances, keeps its state
 * in a JSON file across restarts, and answers the java-tron HTTP endpoints the Tron adapter uses in
 * their documented formats (visible=false): full node `/wallet/*` and solidified `/walletsolidity/*`
 * (getnowblock, getblockbynum, getblockbylimitnext, gettransactioninfobyblocknum, triggerconstantcontract).
 * Development-only endpoints under `/dev/*`: make a transfer (several in one transaction, or a
 * reverted one), mine N blocks at once, orphan the unsolidified blocks (all, or the newest N),
 * answer 429 for a while.
 */

export interface TronLocalOptions {
  /** 0 picks a free port. */
  port?: number;
  /** File holding the chain's state; none: memory only. */
  stateFile?: string;
  /** Block interval; 0 produces blocks only on /dev/mine and transfers with mine: true. */
  blockTimeMs?: number;
  /** Blocks between the head and the newest solidified block. */
  solidificationLag?: number;
  /** The node's clock runs this many ms behind the machine's (block timestamps; tests of clock skew). */
  clockLagMs?: number;
  /** Called as each block becomes solidified (final), in height order. */
  onSolidified?: (block: { number: number; hash: string }) => void;
}

interface LocalLog {
  from: string;
  to: string;
  amount: string;
}

interface LocalTx {
  id: string;
  /** The caller; for a transfer, the payer. */
  owner: string;
  success: boolean;
  logs: LocalLog[];
  /** A plain TRX transfer (TransferContract): no contract code runs, so no logs; TRX balances are not kept. */
  trx?: { to: string; amount: string };
}

interface LocalBlock {
  number: number;
  hash: string;
  parentHash: string;
  /** Milliseconds. */
  timestamp: number;
  txs: LocalTx[];
}

interface LocalState {
  genesisHash: string;
  token: string;
  faucet: string;
  blocks: LocalBlock[];
  pending: LocalTx[];
}

export const TOKEN_DECIMALS = 6;
const FAUCET_SUPPLY = 10n ** 18n;
const WITNESS = '41' + 'ab'.repeat(20);

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
const word = (hex: string): string => hex.padStart(64, '0');
/** A deterministic T… address for a label (tron-local's token contract and faucet). */
const labelAddress = (label: string): string => tronFromHex20(sha256(`tron-local:${label}`).slice(0, 40));

export class TronLocalNode {
  private state: LocalState;
  private balances = new Map<string, bigint>();
  private server: http.Server | null = null;
  private timer: NodeJS.Timeout | null = null;
  private rateLimited = 0;
  /** Highest height reported to onSolidified. */
  private solidifiedTold: number;
  readonly blockTimeMs: number;
  readonly solidificationLag: number;
  url = '';

  constructor(private readonly options: TronLocalOptions = {}) {
    this.blockTimeMs = options.blockTimeMs ?? 3000;
    this.solidificationLag = options.solidificationLag ?? 19;
    this.state = this.load() ?? this.genesis();
    this.replayBalances();
    this.solidifiedTold = this.solidifiedNumber;
  }

  get token(): string {
    return this.state.token;
  }
  get faucet(): string {
    return this.state.faucet;
  }
  get genesisHash(): string {
    return this.state.genesisHash;
  }
  get head(): LocalBlock {
    return this.state.blocks[this.state.blocks.length - 1];
  }
  get solidifiedNumber(): number {
    return Math.max(0, this.head.number - this.solidificationLag);
  }
  balanceOf(address: string): bigint {
    return this.balances.get(address) ?? 0n;
  }

  async start(): Promise<string> {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.options.port ?? 0, '127.0.0.1', () => resolve());
    });
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    if (this.blockTimeMs > 0) this.timer = setInterval(() => this.mine(1), this.blockTimeMs);
    return this.url;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.save();
    if (this.server) {
      this.server.closeAllConnections();
      await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    }
    this.server = null;
  }

  // --- chain -------------------------------------------------------------------------------

  private now(): number {
    return Date.now() - (this.options.clockLagMs ?? 0);
  }

  private genesis(): LocalState {
    const timestamp = this.now();
    const salt = randomBytes(8).toString('hex');
    const hash = '0'.repeat(16) + sha256(`genesis:${salt}:${timestamp}`).slice(16);
    return {
      genesisHash: hash,
      token: labelAddress('USDT'),
      faucet: labelAddress('faucet'),
      blocks: [{ number: 0, hash, parentHash: '0'.repeat(64), timestamp, txs: [] }],
      pending: [],
    };
  }

  private replayBalances(): void {
    this.balances = new Map([[this.state.faucet, FAUCET_SUPPLY]]);
    for (const block of this.state.blocks) for (const tx of block.txs) if (tx.success) for (const l of tx.logs) this.move(l);
  }

  private move(l: LocalLog): void {
    const amount = BigInt(l.amount);
    this.balances.set(l.from, this.balanceOf(l.from) - amount);
    this.balances.set(l.to, this.balanceOf(l.to) + amount);
  }

  /** Produces n blocks; pending transactions go into the first one. */
  mine(n = 1): LocalBlock[] {
    const made: LocalBlock[] = [];
    for (let i = 0; i < n; i++) {
      const parent = this.head;
      const txs = this.state.pending.splice(0);
      for (const tx of txs) {
        // Executed at inclusion: a transfer beyond the payer's balance reverts, as on chain.
        const needs = new Map<string, bigint>();
        for (const l of tx.logs) needs.set(l.from, (needs.get(l.from) ?? 0n) + BigInt(l.amount));
        if (tx.success && [...needs].some(([a, v]) => this.balanceOf(a) < v)) tx.success = false;
        if (tx.success) for (const l of tx.logs) this.move(l);
      }
      const number = parent.number + 1;
      const timestamp = Math.max(this.now(), parent.timestamp + 1);
      const hash = number.toString(16).padStart(16, '0') + sha256(`${parent.hash}:${number}:${timestamp}:${txs.map((t) => t.id).join(',')}:${randomBytes(4).toString('hex')}`).slice(16);
      const block = { number, hash, parentHash: parent.hash, timestamp, txs };
      this.state.blocks.push(block);
      made.push(block);
    }
    // Once per height: an orphaning lowers the head for a moment, never what was solidified.
    for (; this.solidifiedTold < this.solidifiedNumber; this.solidifiedTold++) this.options.onSolidified?.(this.state.blocks[this.solidifiedTold + 1]);
    this.save();
    return made;
  }

  /** Queues a transaction of one or more token transfers (executed when mined). */
  submit(transfers: { from?: string; to: string; amount: bigint }[], opts: { fail?: boolean } = {}): LocalTx {
    const owner = transfers[0]?.from ?? this.state.faucet;
    const logs = transfers.map((t) => ({ from: t.from ?? this.state.faucet, to: t.to, amount: t.amount.toString() }));
    const id = sha256(`${owner}:${JSON.stringify(logs)}:${randomBytes(16).toString('hex')}`);
    const tx = { id, owner, success: !opts.fail, logs };
    this.state.pending.push(tx);
    return tx;
  }

  /** Queues a plain TRX transfer: a transaction in the block whose info has no logs (as on Tron). */
  submitTrx(to: string, amount: bigint): LocalTx {
    const owner = this.state.faucet;
    const tx: LocalTx = { id: sha256(`trx:${owner}:${to}:${amount}:${randomBytes(16).toString('hex')}`), owner, success: true, logs: [], trx: { to, amount: amount.toString() } };
    this.state.pending.push(tx);
    return tx;
  }

  /**
   * Replaces every unsolidified block (or only the newest `blocks` of them) by a new block of the
   * same height and a different hash (a fork the network settled on): their transactions are gone
   * unless `reinclude`, which puts them in the first replacement block.
   */
  orphanUnsolidified(reinclude = false, blocks = Infinity): { orphaned: number; from: number } {
    const keep = Math.max(this.solidifiedNumber, this.head.number - Math.max(0, blocks));
    const removed = this.state.blocks.splice(keep + 1);
    this.replayBalances();
    if (reinclude) this.state.pending.unshift(...removed.flatMap((b) => b.txs.map((t) => ({ ...t, success: t.success }))));
    if (removed.length > 0) this.mine(removed.length);
    return { orphaned: removed.length, from: keep + 1 };
  }

  private blockAt(num: number, view: 'wallet' | 'walletsolidity'): LocalBlock | null {
    const limit = view === 'wallet' ? this.head.number : this.solidifiedNumber;
    if (!Number.isInteger(num) || num < 0 || num > limit) return null;
    return this.state.blocks[num] ?? null;
  }

  // --- persistence -----------------------------------------------------------------------

  private load(): LocalState | null {
    const file = this.options.stateFile;
    if (!file || !fs.existsSync(file)) return null;
    return JSON.parse(fs.readFileSync(file, 'utf8')) as LocalState;
  }

  private save(): void {
    const file = this.options.stateFile;
    if (!file) return;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(this.state));
    fs.renameSync(`${file}.tmp`, file);
  }

  // --- wire formats (java-tron HTTP API, visible=false) ---------------------------------

  private blockJson(b: LocalBlock): Record<string, unknown> {
    const tokenHex = hex20FromTron(this.state.token)!;
    const out: Record<string, unknown> = {
      blockID: b.hash,
      block_header: {
        raw_data: {
          number: b.number,
          txTrieRoot: sha256(b.txs.map((t) => t.id).join('')),
          witness_address: WITNESS,
          parentHash: b.parentHash,
          version: 30,
          timestamp: b.timestamp,
        },
        witness_signature: sha256(b.hash) + sha256(b.parentHash) + '00',
      },
    };
    if (b.txs.length > 0) {
      out.transactions = b.txs.map((t) => (t.trx ? this.trxTransferJson(b, t, t.trx) : {
        ret: [{ contractRet: t.success ? 'SUCCESS' : 'REVERT' }],
        txID: t.id,
        raw_data: {
          contract: [
            {
              parameter: {
                value: { data: 'a9059cbb' + word(hex20FromTron(t.logs[0]?.to ?? this.state.faucet)!) + word(BigInt(t.logs[0]?.amount ?? 0).toString(16)), owner_address: `41${hex20FromTron(t.owner)}`, contract_address: `41${tokenHex}` },
                type_url: 'type.googleapis.com/protocol.TriggerSmartContract',
              },
              type: 'TriggerSmartContract',
            },
          ],
          timestamp: b.timestamp,
        },
      }));
    }
    return out;
  }

  private trxTransferJson(b: LocalBlock, t: LocalTx, trx: { to: string; amount: string }): Record<string, unknown> {
    return {
      ret: [{ contractRet: 'SUCCESS' }],
      txID: t.id,
      raw_data: {
        contract: [
          {
            parameter: {
              value: { amount: Number(trx.amount), owner_address: `41${hex20FromTron(t.owner)}`, to_address: `41${hex20FromTron(trx.to)}` },
              type_url: 'type.googleapis.com/protocol.TransferContract',
            },
            type: 'TransferContract',
          },
        ],
        timestamp: b.timestamp,
      },
    };
  }

  private txInfoJson(b: LocalBlock, t: LocalTx): Record<string, unknown> {
    // A TRX transfer's info: bandwidth only, no receipt result, no log (Nile block 66987565's).
    if (t.trx) return { id: t.id, fee: 267000, blockNumber: b.number, blockTimeStamp: b.timestamp, contractResult: [''], receipt: { net_fee: 267000 } };
    const tokenHex = hex20FromTron(this.state.token)!;
    const info: Record<string, unknown> = {
      id: t.id,
      fee: 0,
      blockNumber: b.number,
      blockTimeStamp: b.timestamp,
      contractResult: [t.success ? word('1') : ''],
      contract_address: `41${tokenHex}`,
      receipt: { energy_usage_total: 14650 * Math.max(1, t.logs.length), net_usage: 345, result: t.success ? 'SUCCESS' : 'REVERT' },
    };
    if (t.success) {
      info.log = t.logs.map((l) => ({
        address: tokenHex,
        topics: [TRC20_TRANSFER_TOPIC, word(hex20FromTron(l.from)!), word(hex20FromTron(l.to)!)],
        data: word(BigInt(l.amount).toString(16)),
      }));
    } else {
      info.result = 'FAILED';
      info.resMessage = Buffer.from('REVERT opcode executed').toString('hex');
    }
    return info;
  }

  private constantCall(body: Record<string, unknown>): Record<string, unknown> {
    const contract = String(body.contract_address ?? '');
    let address: string | null = null;
    try {
      address = contract.startsWith('T') ? normalizeTronAddress(contract) : tronFromHex41(contract);
    } catch {
      address = null;
    }
    if (address !== this.state.token) return { result: { code: 'CONTRACT_VALIDATE_ERROR', message: Buffer.from('Smart contract is not exist.').toString('hex') } };
    const selector = String(body.function_selector ?? '');
    const param = String(body.parameter ?? '');
    let result: string | null = null;
    if (selector === 'decimals()') result = word(TOKEN_DECIMALS.toString(16));
    if (selector === 'balanceOf(address)' && /^[0-9a-fA-F]{64}$/.test(param)) result = word(this.balanceOf(tronFromHex20(param.slice(24))).toString(16));
    if (result === null) return { result: { result: true, message: Buffer.from('REVERT opcode executed').toString('hex') }, constant_result: [''], transaction: { ret: [{ ret: 'FAILED' }] } };
    return { result: { result: true }, energy_used: 935, constant_result: [result], transaction: { ret: [{}], visible: false, txID: sha256(`${selector}:${param}:${Date.now()}`) } };
  }

  // --- HTTP ------------------------------------------------------------------------------

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
    };
    try {
      const url = new URL(req.url ?? '/', 'http://local');
      let raw = '';
      for await (const chunk of req) raw += chunk;
      const body: Record<string, unknown> = raw.trim() ? JSON.parse(raw) : Object.fromEntries(url.searchParams);
      const route = url.pathname;
      if (route.startsWith('/dev/')) return send(200, this.dev(route, body));
      if (this.rateLimited > 0) {
        this.rateLimited--;
        return send(429, { Error: 'rate limited (tron-local /dev/rate-limit)' });
      }
      const [, view, method] = route.split('/') as [string, string, string];
      if (view !== 'wallet' && view !== 'walletsolidity') return send(404, { Error: `unknown path ${route}` });
      const num = Number(body.num ?? 0);
      switch (method) {
        case 'getnowblock':
          return send(200, this.blockJson(this.state.blocks[view === 'wallet' ? this.head.number : this.solidifiedNumber]));
        case 'getblockbynum': {
          const b = this.blockAt(num, view);
          return send(200, b ? this.blockJson(b) : {});
        }
        case 'getblockbylimitnext': {
          // [startNum, endNum), at most 100 (java-tron's GetBlockByLimitNextServlet); {} when none.
          const startNum = Number(body.startNum ?? 0);
          const endNum = Number(body.endNum ?? 0);
          const found: LocalBlock[] = [];
          if (endNum > 0 && endNum > startNum && endNum - startNum <= 100) {
            for (let n = Math.max(0, startNum); n < endNum; n++) {
              const b = this.blockAt(n, view);
              if (b) found.push(b);
            }
          }
          return send(200, found.length > 0 ? { block: found.map((b) => this.blockJson(b)) } : {});
        }
        case 'gettransactioninfobyblocknum': {
          const b = num > 0 ? this.blockAt(num, view) : null;
          // An unknown block, and a block without transactions, answer {} (as TronGrid does).
          return send(200, b && b.txs.length > 0 ? b.txs.map((t) => this.txInfoJson(b, t)) : {});
        }
        case 'triggerconstantcontract':
          return send(200, this.constantCall(body));
        default:
          return send(404, { Error: `unknown path ${route}` });
      }
    } catch (err) {
      send(200, { Error: `class java.lang.Exception : ${(err as Error).message}` });
    }
  }

  private dev(route: string, body: Record<string, unknown>): unknown {
    switch (route) {
      case '/dev/info':
        return { token: this.state.token, faucet: this.state.faucet, decimals: TOKEN_DECIMALS, head: this.head.number, solidified: this.solidifiedNumber, genesisHash: this.state.genesisHash, blockTimeMs: this.blockTimeMs, solidificationLag: this.solidificationLag };
      case '/dev/transfer': {
        const list = Array.isArray(body.transfers) ? (body.transfers as Record<string, unknown>[]) : [body];
        const transfers = list.map((t) => {
          const to = normalizeTronAddress(String(t.to ?? ''));
          if (!to) throw new Error(`not a Tron address: ${String(t.to)}`);
          const from = t.from === undefined ? undefined : normalizeTronAddress(String(t.from));
          if (from === null) throw new Error(`not a Tron address: ${String(t.from)}`);
          const amount = BigInt(String(t.amount ?? ''));
          if (amount <= 0n) throw new Error('amount must be a positive integer of base units');
          return { from, to, amount };
        });
        if (transfers.length === 0) throw new Error('no transfer');
        const tx = this.submit(transfers, { fail: body.fail === true });
        const block = body.mine === false ? null : this.mine(1)[0];
        return { txID: tx.id, success: tx.success, blockNumber: block?.number ?? null, blockHash: block?.hash ?? null };
      }
      case '/dev/mine': {
        const n = Number(body.blocks ?? 1);
        if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new Error('blocks must be an integer from 1 to 100000');
        const made = this.mine(n);
        return { head: made[made.length - 1].number, solidified: this.solidifiedNumber };
      }
      case '/dev/orphan':
        return this.orphanUnsolidified(body.reinclude === true, body.blocks === undefined ? Infinity : Number(body.blocks));
      case '/dev/rate-limit':
        this.rateLimited = Number(body.requests ?? 1);
        return { rateLimited: this.rateLimited };
      case '/dev/balance':
        return { balance: this.balanceOf(normalizeTronAddress(String(body.address ?? '')) ?? '').toString() };
      default:
        throw new Error(`unknown dev path ${route}`);
    }
  }
}
