import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { EvmRpc } from '../../core/chains/evm/evm-rpc';
import { startMetricsServer, type RunningMetrics } from '../../core/metrics/server';
import { buildTestApp, createTestOrg, TEST_REDIS_PREFIX, testConfig, testDb, type TestOrg } from '../helpers/harness';
import { eq } from 'drizzle-orm';
import { recordHeadSeen } from '../../core/detection/scan-position';
import { recordHeadObservation } from '../../core/detection/head-observations';
import { chainHeadObservations } from '../../db/schema';
import { CHAIN, checkpointAt, preserveCheckpoint, tokenEnv } from '../helpers/orders';
import { seedPoolAddresses } from '../helpers/pool';
import { closedPort, spawnEntry } from '../helpers/processes';
import { eventually, startReceiver, startTestWorkers, type Receiver } from '../helpers/webhooks';

/** One sample of the Prometheus text format: name, labels, value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses the text exposition format (what Prometheus scrapes); throws on a malformed line. */
function parseMetrics(text: string): { samples: Sample[]; help: Map<string, string>; types: Map<string, string> } {
  const samples: Sample[] = [];
  const help = new Map<string, string>();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let m = /^# HELP (\S+) (.*)$/.exec(line);
    if (m) {
      help.set(m[1], m[2]);
      continue;
    }
    m = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (m) {
      types.set(m[1], m[2]);
      continue;
    }
    // Values as Go's ParseFloat reads them (NaN and Inf in any case).
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|[nN][aA][nN]|[+-]?[iI][nN][fF])$/.exec(line);
    if (!m) throw new Error(`malformed metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { samples, help, types };
}

function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value;
}

/** Another address of this host than 127.0.0.1: an external IPv4, else 127.0.0.2 (Linux routes all of 127/8 to lo). */
function externalIp(): string {
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return '127.0.0.2';
}

async function scrape(port: number, headers: Record<string, string> = {}, host = '127.0.0.1'): Promise<{ status: number; text: string; type: string }> {
  const res = await fetch(`http://${host}:${port}/metrics`, { headers });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') ?? '' };
}

describe('Prometheus metrics', function () {
  this.timeout(60_000);
  preserveCheckpoint();
  const { app, deps } = buildTestApp({ env: tokenEnv() });
  let metrics: RunningMetrics;
  let org: TestOrg;

  before(async () => {
    metrics = await startMetricsServer(deps, Object.values(deps.queues));
    org = await createTestOrg('Metrics org');
    await seedPoolAddresses(org.organizationId, 'evm', 3);
  });
  after(async () => {
    await metrics.close();
  });

  it('serves the text format on its own port, bound to 127.0.0.1, every family with help and type', async () => {
    const { status, text, type } = await scrape(metrics.port);
    expect(status).to.equal(200);
    expect(type).to.match(/^text\/plain; version=0\.0\.4/);
    const { samples, help, types } = parseMetrics(text);
    expect(samples.length).to.be.greaterThan(20);
    for (const name of [
      'stablegate_http_request_duration_seconds',
      'stablegate_chain_head_block',
      'stablegate_chain_checkpoint_block',
      'stablegate_chain_lag_blocks',
      'stablegate_chain_lag_seconds',
      'stablegate_chain_head_look_age_seconds',
      'stablegate_chain_rpc_calls_total',
      'stablegate_chain_rpc_errors_total',
      'stablegate_chain_transfers_recorded_total',
      'stablegate_order_transitions_total',
      'stablegate_order_creation_statements_total',
      'stablegate_deposit_transitions_total',
      'stablegate_webhook_deliveries_total',
      'stablegate_webhook_delivery_duration_seconds',
      'stablegate_queue_jobs',
      'stablegate_pool_addresses',
      'stablegate_process_cpu_seconds_total',
    ]) {
      expect(help.get(name), name).to.be.a('string').and.not.equal('');
      expect(types.has(name), name).to.equal(true);
    }
    expect(help.has('stablegate_pool_addresses_by_organization')).to.equal(false); // METRICS_PER_ORG is off
    // Loopback only: not reachable on another address of this host.
    const ip = externalIp();
    const reached = await scrape(metrics.port, {}, ip).then(() => true, () => false);
    expect(reached, `metrics reachable on ${ip}`).to.equal(false);
  });

  it('every family is documented in docs/operations.md, and the Grafana dashboard queries only real ones', async () => {
    const { types } = parseMetrics((await scrape(metrics.port)).text);
    const families = [...types.keys()].filter((n) => !n.startsWith('stablegate_process_') && !n.startsWith('stablegate_nodejs_'));
    const operations = readFileSync(path.join(__dirname, '..', '..', 'docs', 'operations.md'), 'utf8');
    for (const name of [...families, 'stablegate_pool_addresses_by_organization']) expect(operations, name).to.include(`\`${name}\``);
    const dashboard = readFileSync(path.join(__dirname, '..', '..', 'ops', 'grafana-dashboard.json'), 'utf8');
    JSON.parse(dashboard);
    const used = new Set([...dashboard.matchAll(/stablegate_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, '')));
    expect(used.size).to.be.greaterThan(10);
    for (const name of used) expect([...types.keys()], name).to.include(name);
  });

  it('is not on the API port', async () => {
    expect((await request(app).get('/metrics')).status).to.equal(404);
    expect((await request(app).get('/api/v1/metrics')).status).to.equal(404);
  });

  it('counts HTTP requests by route pattern and status with durations, and order transitions', async () => {
    const before = parseMetrics((await scrape(metrics.port)).text).samples;
    const route = { method: 'POST', route: '/api/v1/orders', status: '201' };
    const created = await request(app).post('/api/v1/orders').set('X-API-Key', org.keys.member).send({ orderReference: `m-${Date.now()}`, amount: '5', currency: 'USDT', chainId: CHAIN });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    await request(app).get(`/api/v1/orders/${created.body.orderId ?? created.body.id}`).set('X-API-Key', org.keys.member);
    await request(app).get('/api/v1/orders/ord_doesnotexist').set('X-API-Key', org.keys.member);
    const after = parseMetrics((await scrape(metrics.port)).text).samples;
    const delta = (name: string, labels: Record<string, string>) => (valueOf(after, name, labels) ?? 0) - (valueOf(before, name, labels) ?? 0);
    expect(delta('stablegate_http_request_duration_seconds_count', route)).to.equal(1);
    expect(delta('stablegate_http_request_duration_seconds_bucket', { ...route, le: '+Inf' })).to.equal(1);
    expect(delta('stablegate_http_request_duration_seconds_sum', route)).to.be.greaterThan(0);
    expect(delta('stablegate_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/orders/:orderId', status: '200' })).to.equal(1);
    expect(delta('stablegate_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/orders/:orderId', status: '404' })).to.equal(1);
    // Raw URLs never become labels.
    expect(after.some((s) => Object.values(s.labels).some((v) => v.includes('ord_')))).to.equal(false);
    expect(delta('stablegate_order_transitions_total', { status: 'pending' })).to.equal(1);
  });

  it('reads queue depths, pool availability and the chain checkpoint and head at scrape time', async () => {
    const blockTime = new Date(Date.now() - 42_000);
    await checkpointAt(blockTime, 4242);
    // The head as a scan elsewhere stored it: this process never read it (issue 32: a worker that
    // did not run the last scan exported the head it had seen long before).
    await recordHeadSeen(testDb(), CHAIN, 4250, new Date());
    // A look at the head 30 s ago, the latest of any process (what earlier tests saw of the chain
    // forgotten first, as a fresh start of the scan does): its age is exported.
    const lookedAt = new Date(Date.now() - 30_000);
    await testDb().delete(chainHeadObservations).where(eq(chainHeadObservations.chainId, CHAIN));
    await recordHeadObservation(testDb(), { chainId: CHAIN, head: 4250, askedAt: lookedAt, answeredAt: lookedAt, hash: `0x${'ab'.repeat(32)}` });
    const probe = await deps.queues['pool-low-check'].add('pool-low-check', {}, { delay: 3_600_000, jobId: `metrics-probe-${Date.now()}` });
    const { samples } = parseMetrics((await scrape(metrics.port)).text);
    await probe.remove();
    expect(valueOf(samples, 'stablegate_queue_jobs', { queue: 'pool-low-check', state: 'delayed' })).to.be.at.least(1);
    for (const state of ['waiting', 'active', 'delayed', 'failed']) expect(valueOf(samples, 'stablegate_queue_jobs', { queue: 'webhook-delivery', state }), state).to.be.a('number');
    expect(valueOf(samples, 'stablegate_pool_addresses', { protocol: 'evm', status: 'allocated' })).to.be.at.least(1);
    expect(valueOf(samples, 'stablegate_pool_addresses', { protocol: 'evm', status: 'available' })).to.be.at.least(2);
    expect(valueOf(samples, 'stablegate_chain_checkpoint_block', { chain: CHAIN })).to.equal(4242);
    expect(valueOf(samples, 'stablegate_chain_lag_seconds', { chain: CHAIN })).to.be.within(41, 120);
    expect(valueOf(samples, 'stablegate_chain_head_block', { chain: CHAIN })).to.equal(4250);
    expect(valueOf(samples, 'stablegate_chain_lag_blocks', { chain: CHAIN })).to.equal(8);
    expect(valueOf(samples, 'stablegate_chain_head_look_age_seconds', { chain: CHAIN })).to.be.within(30, 90);
  });

  it('counts RPC calls and errors per provider host (never its path or key)', async () => {
    const rpcServer = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const { id } = JSON.parse(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result: '0x1092' }));
      });
    });
    await new Promise<void>((r) => rpcServer.listen(0, '127.0.0.1', r));
    const good = `http://127.0.0.1:${(rpcServer.address() as AddressInfo).port}/v3/secret-provider-key`;
    const bad = `http://127.0.0.1:${await closedPort()}/v3/another-secret`;
    const lines: [object, string][] = [];
    const logger = { warn: (o: object, m: string) => void lines.push([o, m]) };
    const rpc = new EvmRpc({ chainId: 'metrics-chain', rpcUrls: [bad, good], evmChainId: 31337 }, { baseBackoffMs: 1, maxBackoffMs: 1, timeoutMs: 2000, logger });
    expect(await rpc.blockNumber()).to.equal(0x1092);
    // The failure line names the provider by its origin, like the metrics: never its key.
    expect(lines.map(([, m]) => m)).to.deep.equal(['EVM provider failed: backing off and using the next one']);
    expect(lines[0][0]).to.include({ chainId: 'metrics-chain', provider: new URL(bad).origin, method: 'eth_blockNumber' });
    expect(JSON.stringify(lines)).to.not.include('another-secret');
    rpcServer.close();
    const { text, samples } = { text: (await scrape(metrics.port)).text, samples: [] as Sample[] };
    samples.push(...parseMetrics(text).samples);
    const badHost = new URL(bad).host;
    const goodHost = new URL(good).host;
    expect(valueOf(samples, 'stablegate_chain_rpc_calls_total', { chain: 'metrics-chain', provider: badHost })).to.equal(1);
    expect(valueOf(samples, 'stablegate_chain_rpc_errors_total', { chain: 'metrics-chain', provider: badHost })).to.equal(1);
    expect(valueOf(samples, 'stablegate_chain_rpc_calls_total', { chain: 'metrics-chain', provider: goodHost })).to.equal(1);
    expect(valueOf(samples, 'stablegate_chain_rpc_errors_total', { chain: 'metrics-chain', provider: goodHost }) ?? 0).to.equal(0);
    // The head one process read is not exported from its memory: only a stored head is (above).
    expect(valueOf(samples, 'stablegate_chain_head_block', { chain: 'metrics-chain' })).to.equal(undefined);
    // The providers' keys (their paths), not the word: a route label such as rotate-secret is no key.
    expect(text).to.not.include('secret-provider-key');
    expect(text).to.not.include('another-secret');
  });

  describe('webhook deliveries', () => {
    let receiver: Receiver;
    let workers: Awaited<ReturnType<typeof startTestWorkers>>['workers'];
    before(async () => {
      receiver = await startReceiver(() => ({ status: 200 }));
      // Its own queue prefix: the worker process registers job schedulers that must not run in the
      // queues other suites share (the relay picks the event up from Postgres).
      workers = (await startTestWorkers({ REDIS_PREFIX: `${TEST_REDIS_PREFIX}mwh` })).workers;
    });
    after(async () => {
      await workers?.close();
      await receiver?.close();
    });

    it('counts deliveries by outcome with their latency', async () => {
      const { app: insecureApp } = buildTestApp({ env: { WEBHOOK_ALLOW_INSECURE: 'true' } });
      const before = parseMetrics((await scrape(metrics.port)).text).samples;
      const ep = await request(insecureApp).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: `${receiver.url}/hook`, events: ['order.completed'] });
      expect(ep.status, JSON.stringify(ep.body)).to.equal(201);
      expect((await request(insecureApp).post(`/api/v1/webhooks/endpoints/${ep.body.id}/test`).set('X-API-Key', org.keys.admin)).status).to.be.oneOf([200, 201, 202]);
      await receiver.waitFor(1, { path: '/hook' });
      const after = await eventually(async () => {
        const s = parseMetrics((await scrape(metrics.port)).text).samples;
        const n = (valueOf(s, 'stablegate_webhook_deliveries_total', { outcome: 'succeeded' }) ?? 0) - (valueOf(before, 'stablegate_webhook_deliveries_total', { outcome: 'succeeded' }) ?? 0);
        return n >= 1 ? s : null;
      });
      const count = (s: Sample[]) => valueOf(s, 'stablegate_webhook_delivery_duration_seconds_count', { outcome: 'succeeded' }) ?? 0;
      expect(count(after) - count(before)).to.be.at.least(1);
    });
  });
});

describe('Prometheus metrics with METRICS_TOKEN and METRICS_PER_ORG', function () {
  this.timeout(30_000);
  const token = 'a-long-metrics-token-0123456789';
  const { deps } = buildTestApp({ env: { METRICS_TOKEN: token, METRICS_PER_ORG: 'true' } });
  let metrics: RunningMetrics;
  let org: TestOrg;
  before(async () => {
    metrics = await startMetricsServer(deps, Object.values(deps.queues));
    org = await createTestOrg('Per-org metrics');
    await seedPoolAddresses(org.organizationId, 'evm', 2);
  });
  after(async () => metrics.close());

  it('requires the bearer token and reports pool availability per organization', async () => {
    expect((await scrape(metrics.port)).status).to.equal(401);
    expect((await scrape(metrics.port, { Authorization: 'Bearer wrong-token-wrong-token' })).status).to.equal(401);
    const ok = await scrape(metrics.port, { Authorization: `Bearer ${token}` });
    expect(ok.status).to.equal(200);
    const { samples } = parseMetrics(ok.text);
    expect(valueOf(samples, 'stablegate_pool_addresses_by_organization', { organization: org.organizationId, protocol: 'evm', status: 'available' })).to.equal(2);
  });

  it('listens on every interface when a token is set', async function () {
    expect((await scrape(metrics.port, { Authorization: `Bearer ${token}` }, externalIp())).status).to.equal(200);
    expect(() => testConfig({ METRICS_TOKEN: 'short' })).to.throw(/METRICS_TOKEN must be at least 16/);
  });
});

describe('every process serves /metrics', function () {
  this.timeout(90_000);
  for (const entry of ['api/main.ts', 'workers/main.ts']) {
    it(`${entry} on METRICS_PORT`, async () => {
      const env = { DATABASE_URL: testConfig().databaseUrl, REDIS_URL: testConfig().redisUrl, REDIS_PREFIX: `${testConfig().redisPrefix}_proc`, PORT: '0', METRICS_PORT: '0', NETWORK: 'local', START_LOCAL_CHAIN: 'false', LOG_LEVEL: 'info', ...tokenEnv() };
      const proc = spawnEntry(entry, env);
      try {
        const line = await proc.waitFor(/metrics on http:\/\/127\.0\.0\.1:\d+\/metrics/, 60_000);
        const port = Number(/127\.0\.0\.1:(\d+)\/metrics/.exec(line)![1]);
        const { status, text } = await scrape(port);
        expect(status).to.equal(200);
        const { samples } = parseMetrics(text);
        expect(valueOf(samples, 'stablegate_queue_jobs', { queue: 'chain-scan', state: 'waiting' })).to.be.a('number');
      } finally {
        proc.killGroup('SIGTERM');
        await proc.exited;
      }
    });
  }
});
