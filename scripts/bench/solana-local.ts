/**
 * `npm run bench:solana-local`: figures of the local Solana chain, run as its own process
 * (scripts/local-chain/solana/main.ts, 400 ms slots) on a fresh DATA_DIR. Prints:
 *  1. start time of a new chain (test mints created) until its RPC answers;
 *  2. latency of a payment (transferChecked, recipient account created in the same transaction)
 *     from sendTransaction to its block being confirmed, over 100 payments (p50, p95, max);
 *  3. resident memory of the chain process after the payments, and after 20,000 more (empty) slots;
 *  4. restart time with that ledger, and the ledger's size.
 * Not a timed test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { generateKeyPairSigner } from '@solana/kit';
import { SolanaLocalClient } from '../local-chain/solana/payer';
import { percentile } from './bench-kit';

const root = path.resolve(__dirname, '../..');

function startChain(dataDir: string): Promise<{ child: ChildProcess; url: string; ms: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/local-chain/solana/main.ts', '--port', '0', '--slot-ms', '400'], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve({ child, url: m[1], ms: performance.now() - t0 });
    });
    child.once('exit', (code) => reject(new Error(`solana-local exited (${code}): ${out}`)));
  });
}

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const stop = (child: ChildProcess) => new Promise<void>((resolve) => { child.once('exit', () => resolve()); child.kill('SIGTERM'); });

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-solana-local-'));
  try {
    const first = await startChain(dataDir);
    console.log(`start (new chain, test mints created): ${first.ms.toFixed(0)} ms; RSS ${rssMb(first.child.pid!).toFixed(0)} MB`);
    const client = (await SolanaLocalClient.fromDataDir(first.url, dataDir))!;
    const latencies: number[] = [];
    for (let i = 0; i < 100; i++) {
      const owner = (await generateKeyPairSigner()).address;
      const t = performance.now();
      const paid = await client.pay(owner, 1_000_000n, i % 2 ? 'USDC' : 'USDT', { waitFor: 'none' });
      await client.waitFor(paid.signature, 'confirmed');
      latencies.push(performance.now() - t);
    }
    latencies.sort((a, b) => a - b);
    console.log(`payment → confirmed (400 ms slots, 1 block to confirmation), 100 payments: p50 ${percentile(latencies, 50).toFixed(0)} ms, p95 ${percentile(latencies, 95).toFixed(0)} ms, max ${latencies[latencies.length - 1].toFixed(0)} ms`);
    console.log(`RSS after 100 payments: ${rssMb(first.child.pid!).toFixed(0)} MB`);
    const t = performance.now();
    for (let i = 0; i < 4; i++) await client.dev('solanaLocal_produceSlot', { count: 5000 });
    console.log(`20,000 empty slots produced in ${(performance.now() - t).toFixed(0)} ms; RSS ${rssMb(first.child.pid!).toFixed(0)} MB`);
    await stop(first.child);
    const ledger = path.join(dataDir, 'solana-local', 'ledger.jsonl');
    const again = await startChain(dataDir);
    const slot = await (await SolanaLocalClient.fromDataDir(again.url, dataDir))!.rpc.getSlot({ commitment: 'processed' }).send();
    console.log(`restart with ${(fs.statSync(ledger).size / 1e6).toFixed(1)} MB of ledger (${slot} slots): ${again.ms.toFixed(0)} ms; RSS ${rssMb(again.child.pid!).toFixed(0)} MB`);
    await stop(again.child);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
