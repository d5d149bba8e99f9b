import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * Starts anvil from the npm package `@foundry-rs/anvil` with the flags of design.md §10:
 * cancun (the default hardfork slows down as the chain grows), pruned history (bounded disk;
 * anvil_reorg still has its recent states) and a private cache directory.
 */
export interface AnvilOptions {
  /** 0 picks a free port (read back from the "Listening on" line). */
  port?: number;
  /** Seconds between blocks; unset = mine on demand (tests). */
  blockTime?: number;
  /** JSON state file: loaded at start if present, dumped periodically and on exit. */
  stateFile?: string;
  stateIntervalSeconds?: number;
  host?: string;
  /** Unix seconds of the genesis block (default: now); two chains with different ones have different genesis hashes. */
  genesisTimestamp?: number;
  /**
   * Past states kept in memory (default 256: anvil_reorg and calls at recent blocks need them). 0 keeps
   * none, for chains of many blocks: anvil 1.7.1 with 256 (or 16) kept states slows down as the chain
   * grows and stalls past about 57,000 blocks (over 90 s for 5,000 empty blocks); with none it mines
   * 100,000 empty blocks in about 4 s.
   */
  historyStates?: number;
  /** EVM chain id (default anvil's 31337): a second local chain, configured like another network (56 like BSC). */
  chainId?: number;
  /** Extra output lines go here (e.g. the terminal of `npm run chain`). */
  onOutput?: (line: string) => void;
}

export interface RunningAnvil {
  url: string;
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The anvil binary of the platform package (`@foundry-rs/anvil-<os>-<arch>`), run directly so that
 * signals reach anvil itself; the package's node wrapper is the fallback.
 */
export function anvilBinary(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const os = process.platform === 'win32' ? 'win32' : process.platform;
  const candidates: string[] = [];
  try {
    const pkg = require.resolve(`@foundry-rs/anvil-${os}-${arch}/package.json`);
    candidates.push(path.join(path.dirname(pkg), 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil'));
  } catch {
    // not installed for this platform: try the wrapper
  }
  candidates.push(path.resolve(__dirname, '../../node_modules/.bin/anvil'), path.resolve(process.cwd(), 'node_modules/.bin/anvil'));
  const found = candidates.find((c) => fs.existsSync(c));
  if (!found) throw new Error('anvil binary not found: run npm install (package @foundry-rs/anvil)');
  return found;
}

export async function startAnvil(options: AnvilOptions = {}): Promise<RunningAnvil> {
  const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sg-anvil-cache-'));
  const args = [
    '--port', String(options.port ?? 0),
    '--host', options.host ?? '127.0.0.1',
    '--hardfork', 'cancun',
    // A bare --prune-history keeps no past state at all.
    ...(options.historyStates === 0 ? ['--prune-history'] : ['--prune-history', String(options.historyStates ?? 256)]),
    '--cache-path', cacheDir,
  ];
  if (options.blockTime) args.push('--block-time', String(options.blockTime));
  if (options.chainId !== undefined) args.push('--chain-id', String(options.chainId));
  if (options.genesisTimestamp !== undefined) args.push('--timestamp', String(options.genesisTimestamp));
  if (options.stateFile) {
    fs.mkdirSync(path.dirname(options.stateFile), { recursive: true });
    args.push('--state', options.stateFile, '--state-interval', String(options.stateIntervalSeconds ?? 5));
  }
  const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`anvil did not start within 15 s: ${buffered.slice(-500)}`)), 15_000);
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      buffered += text;
      for (const line of text.split('\n')) if (line.trim()) options.onOutput?.(line);
      const m = /Listening on [^\s:]+:(\d+)/.exec(buffered);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`anvil exited with code ${code}: ${buffered.slice(-500)}`));
    });
  });
  // Keep draining output so anvil never blocks on a full pipe.
  child.stdout!.removeAllListeners('data');
  child.stderr!.removeAllListeners('data');
  child.stdout!.on('data', (c: Buffer) => options.onOutput && c.toString().split('\n').filter((l) => l.trim()).forEach(options.onOutput));
  child.stderr!.on('data', (c: Buffer) => options.onOutput && c.toString().split('\n').filter((l) => l.trim()).forEach(options.onOutput));
  let exited = false;
  // Never leave anvil behind when the parent exits (it dumps its state on SIGTERM).
  const onParentExit = () => {
    if (!exited) child.kill('SIGTERM');
  };
  process.once('exit', onParentExit);
  child.once('exit', () => {
    exited = true;
    process.removeListener('exit', onParentExit);
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    process: child,
    async stop() {
      if (!exited) {
        // SIGTERM: anvil dumps its state (with --state) and exits.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            child.kill('SIGKILL');
          }, 5000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        });
      }
      fs.rmSync(cacheDir, { recursive: true, force: true });
    },
  };
}
