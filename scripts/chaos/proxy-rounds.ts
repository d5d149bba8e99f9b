import path from 'node:path';
import { startPrivateRedis, startTcpProxy } from '../../test/helpers/processes';
import { Rng } from '../../test/sim/rng';
import {
  cleanupStack,
  numberOption,
  option,
  RequestTally,
  ROOT,
  scratchDatabase,
  sleep,
  spawnService,
  startConnectionCutter,
  throughProxy,
  timedRequest,
} from './chaos-kit';

/**
 * `npm run chaos:proxy-rounds`: issue 37's "three rounds of the proxy test against `npm start`".
 * Each round starts `npm start` itself (NETWORK=local defaults: its local chains, its first
 * organization and key) on a database of its own reached through a TCP proxy and a private
 * redis-server, sends POST /orders at a steady rate while the proxy resets the Postgres connections
 * (RST or FIN at random), then asks the process to stop. A round fails when the process exits by
 * itself, a request gets no answer, or an answer takes longer than the bound.
 *
 *   --rounds 3  --seconds 60  --rate 4 (orders/s)  --cut-every-ms 2000
 *   --bound-ms 4000 (DATABASE_REQUEST_TIMEOUT_MS + 1 s)  --abort-ms 30000  --seed 1
 * (or CHAOS_ROUNDS, CHAOS_SECONDS, CHAOS_RATE, CHAOS_CUT_EVERY_MS, CHAOS_BOUND_MS, CHAOS_ABORT_MS, CHAOS_SEED)
 */
const rounds = numberOption('rounds', 'CHAOS_ROUNDS', 3, 1, 100);
const seconds = numberOption('seconds', 'CHAOS_SECONDS', 60, 5, 3600);
const rate = numberOption('rate', 'CHAOS_RATE', 4, 0.1, 200);
const cutEveryMs = numberOption('cut-every-ms', 'CHAOS_CUT_EVERY_MS', 2000, 100, 600_000);
const requestTimeoutMs = numberOption('database-request-timeout-ms', 'DATABASE_REQUEST_TIMEOUT_MS', 3000, 100, 120_000);
const boundMs = numberOption('bound-ms', 'CHAOS_BOUND_MS', requestTimeoutMs + 1000, 100, 600_000);
const abortMs = numberOption('abort-ms', 'CHAOS_ABORT_MS', 30_000, 1000, 600_000);
const seed = numberOption('seed', 'CHAOS_SEED', Date.now() % 1_000_000, 0, 2 ** 31);
const outDir = path.resolve(ROOT, option('out', 'CHAOS_OUT', path.join('.data', 'chaos', `proxy-rounds-${seed}`)));

/** Orders spread over the three local chains, in a currency each offers. */
const TARGETS = [
  { chainId: 'ethereum-local', currency: 'USDT' },
  { chainId: 'tron-local', currency: 'USDT' },
  { chainId: 'solana-local', currency: 'USDC' },
];

interface RoundResult {
  round: number;
  tally: RequestTally;
  cuts: { rst: number; fin: number; connections: number };
  aliveAfterLoad: boolean;
  exits: string[];
  stopCode: number | null;
  failures: string[];
  /** Oddities worth a look that the bar (201 or 503, alive, answered in time) does not fail. */
  notes: string[];
}

async function runRound(round: number, rng: Rng): Promise<RoundResult> {
  const cleanup = cleanupStack();
  const failures: string[] = [];
  const notes: string[] = [];
  const tally = new RequestTally(boundMs);
  let cuts = { rst: 0, fin: 0, connections: 0 };
  let aliveAfterLoad = false;
  let stopCode: number | null = null;
  let exits: string[] = [];
  try {
    const db = await scratchDatabase('rounds');
    cleanup.add(() => db.drop());
    const redis = await startPrivateRedis();
    cleanup.add(() => redis.stop());
    const proxy = await startTcpProxy(Number(new URL(db.url).port || 5432));
    cleanup.add(() => proxy.close());
    const started = Date.now();
    const service = spawnService(
      'npm',
      ['start'],
      {
        NETWORK: 'local',
        DATABASE_URL: throughProxy(db.url, proxy),
        DATABASE_REQUEST_TIMEOUT_MS: String(requestTimeoutMs),
        REDIS_URL: redis.url,
        PORT: '0',
        METRICS_PORT: '0',
        LOG_LEVEL: 'info',
        // The round measures database faults, not the per-key request budget.
        RATE_LIMIT_ENABLED: 'false',
      },
      path.join(outDir, `round-${round}.log`),
      started,
    );
    cleanup.add(() => service.stop());
    const [, port] = await service.waitFor(/ready: http:\/\/localhost:(\d+)\/health/, 180_000);
    const [, key] = await service.waitFor(/Owner API key \(shown once, store it now\): (\S+)/, 1_000);
    const base = `http://127.0.0.1:${port}/api/v1`;
    log(`round ${round}: npm start ready on port ${port} after ${Math.round((Date.now() - started) / 1000)} s; ${rate} orders/s for ${seconds} s, connections cut every ~${cutEveryMs} ms`);

    const cutter = startConnectionCutter(proxy, cutEveryMs, rng);
    const inFlight = new Set<Promise<void>>();
    const loadStart = Date.now();
    for (let n = 0; Date.now() - loadStart < seconds * 1000 && service.alive(); n++) {
      const target = TARGETS[n % TARGETS.length];
      const sentAt = Date.now() - started;
      const p = timedRequest(
        `${base}/orders`,
        { method: 'POST', headers: { 'X-API-Key': key }, body: { orderReference: `round-${round}-${n}`, amount: `${1 + (n % 50)}.25`, ...target } },
        abortMs,
      ).then((r) => {
        const code = r.status === '201' ? '' : typeof r.body.code === 'string' ? ` ${r.body.code}` : typeof r.body.error === 'string' && /^[A-Z]\w+$/.test(r.body.error) ? ` ${r.body.error}` : '';
        tally.record(`${r.status}${code}`, r.ms, sentAt);
        if (r.status === '503' && !r.headers?.get('retry-after')) failures.push(`a 503 without Retry-After (request sent at ${sentAt} ms)`);
      });
      const tracked: Promise<void> = p.finally(() => inFlight.delete(tracked));
      inFlight.add(tracked);
      await sleep(loadStart + ((n + 1) * 1000) / rate - Date.now());
    }
    cutter.stop();
    cuts = cutter.figures;
    await Promise.all(inFlight);
    // Still answering after the storm: /health from the same process.
    await sleep(2_000);
    const health = await timedRequest(`http://127.0.0.1:${port}/health`, { method: 'GET' }, 10_000);
    aliveAfterLoad = service.alive();
    if (!aliveAfterLoad) failures.push('the process exited during the round');
    else if (health.status === 'no-answer' || health.status === 'hung') failures.push(`/health got no answer after the round (${health.status})`);
    exits = service.exits.map((e) => `exit ${e.code ?? e.signal} at ${Math.round(e.atMs / 1000)} s: ${lastLines(e.stderrTail, 6)}`);
    stopCode = await service.stop();
    if (aliveAfterLoad && stopCode !== 0) failures.push(`SIGTERM ended it with ${stopCode ?? 'no exit within 15 s'}, not 0`);
    const unanswered = tally.count('no-answer') + tally.count('hung');
    if (unanswered > 0) failures.push(`${unanswered} request(s) got no answer`);
    if (tally.overBound.length > 0) failures.push(`${tally.overBound.length} answer(s) slower than ${boundMs} ms (slowest ${tally.maxMs} ms)`);
    const unexpected = [...tally.byStatus.keys()].filter((s) => s !== '201' && !s.startsWith('503 ') && s !== 'no-answer' && s !== 'hung');
    if (unexpected.length > 0) failures.push(`answers other than 201 and 503: ${unexpected.join(', ')}`);
    // The pool holds 100 addresses per protocol, more than a round's orders on one chain at the defaults.
    const emptyPool = tally.count('503 NO_AVAILABLE_ADDRESSES');
    if (emptyPool > 0 && (seconds * rate) / TARGETS.length < 100) notes.push(`${emptyPool} × 503 NO_AVAILABLE_ADDRESSES although at most ${Math.ceil((seconds * rate) / TARGETS.length)} orders per protocol were created`);
  } catch (err) {
    failures.push(`round aborted: ${(err as Error).message}`);
  } finally {
    await cleanup.run();
  }
  return { round, tally, cuts, aliveAfterLoad, exits, stopCode, failures, notes };
}

function lastLines(text: string, n: number): string {
  return text.trim().split('\n').slice(-n).join(' | ');
}

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(): Promise<void> {
  log(`proxy rounds: ${rounds} × ${seconds} s, seed ${seed}, logs in ${outDir}`);
  const rng = new Rng(seed);
  const results: RoundResult[] = [];
  for (let round = 1; round <= rounds; round++) {
    const r = await runRound(round, rng.fork(`round-${round}`));
    results.push(r);
    log(`round ${r.round}: ${r.tally.summary()}`);
    log(`  cuts: ${r.cuts.rst} RST + ${r.cuts.fin} FIN, ${r.cuts.connections} connections; process alive after the load: ${r.aliveAfterLoad ? 'yes' : 'NO'}; SIGTERM exit code ${r.stopCode ?? '-'}`);
    for (const e of r.exits) log(`  process ${e}`);
    for (const n of r.notes) log(`  NOTE: ${n}`);
    for (const f of r.failures) log(`  FAIL: ${f}`);
  }
  const failed = results.filter((r) => r.failures.length > 0).length;
  log(`\n${rounds - failed} of ${rounds} round(s) passed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

void main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
