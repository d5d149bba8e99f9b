import { expect } from 'chai';
import { Queue } from 'bullmq';
import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';
import { getCheckpoint } from '../../core/chains/checkpoints';
import { headWakeupJobId } from '../../core/jobs/catalog';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { capturedLogLines, knownSecrets, testConfig, testContext, testRedis, TEST_REDIS_PREFIX } from '../helpers/harness';
import { resetCheckpointToHead, startRpcProxy, startTestChain, useTestChain, type RpcProxy, type TestChain } from '../helpers/anvil';
import { eventually } from '../helpers/wait';

/**
 * New heads pushed over WebSocket (eth_subscribe newHeads; anvil serves ws on its HTTP port)
 * wake the chain's scan and confirmations as jobs named by chain and head; polling carries on
 * while the socket is down, and the subscription comes back by itself.
 */
describe('new heads over WebSocket wake the chain work; a dropped socket falls back to polling and recovers (anvil)', function () {
  this.timeout(120_000);
  let chain: TestChain;
  let proxy: RpcProxy;
  let workers: RunningWorkers | null = null;
  let scanQueue: Queue;
  let confirmationsQueue: Queue;
  // A prefix of its own: the worker process registers every job scheduler (order expiry, relay…),
  // whose queued runs must not land in the queues other suites share.
  const prefix = `${TEST_REDIS_PREFIX}heads`;

  before(async () => {
    chain = await startTestChain();
    proxy = await startRpcProxy(Number(new URL(chain.url).port));
    scanQueue = new Queue('chain-scan', { connection: testRedis(), prefix });
    confirmationsQueue = new Queue('chain-confirmations', { connection: testRedis(), prefix });
  });
  after(async () => {
    await workers?.close();
    await scanQueue?.close();
    await confirmationsQueue?.close();
    await proxy?.close();
    await chain?.stop();
  });

  const logCount = (msg: string) => capturedLogLines.filter((l) => l.includes(msg) && l.includes(LOCAL_CHAIN_ID)).length;
  const headJob = (queue: Queue, height: number) => queue.getJob(headWakeupJobId(queue.name as 'chain-scan' | 'chain-confirmations', LOCAL_CHAIN_ID, height));

  it('enqueues one scan per pushed head, polls while the socket is down, and resubscribes when it returns', async () => {
    // Polling slow enough (3 s) that only a pushed head makes a scan run at once.
    const ctx = testContext(testConfig({ REDIS_PREFIX: prefix, WORKER_QUEUES: 'chain-scan,chain-confirmations', CHAIN_SCAN_INTERVAL_MS: '3000', CONFIRMATIONS_INTERVAL_MS: '3000' }));
    useTestChain(ctx.registry, chain);
    ctx.registry.setWsUrls(LOCAL_CHAIN_ID, [proxy.url.replace(/^http/, 'ws')]);
    await resetCheckpointToHead(ctx, chain);
    const connectedBefore = logCount('head subscription connected');
    workers = await startWorkerProcess(ctx);
    await eventually(() => logCount('head subscription connected') > connectedBefore, 20_000, 'the head subscription');

    await chain.mine(1);
    const pushed = await chain.head();
    await eventually(() => headJob(scanQueue, pushed), 10_000, `a scan job for head ${pushed}`);
    await eventually(async () => (await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber >= pushed, 10_000, 'the checkpoint at the pushed head');
    // The head's confirmation count follows its scan (same head, its own deterministic id).
    await eventually(() => headJob(confirmationsQueue, pushed), 10_000, `a confirmations job for head ${pushed}`);

    // The socket drops: logged, and the repeatable scan still follows the chain.
    const lostBefore = logCount('head subscription lost');
    await proxy.stop();
    await eventually(() => logCount('head subscription lost') > lostBefore, 10_000, 'the drop logged');
    await chain.mine(1);
    const polled = await chain.head();
    await eventually(async () => (await getCheckpoint(ctx.db, LOCAL_CHAIN_ID))!.blockNumber >= polled, 20_000, 'the checkpoint by polling');
    expect(await headJob(scanQueue, polled)).to.equal(undefined);

    // The provider returns: the subscription reconnects by itself and pushes heads again.
    const connectedAgain = logCount('head subscription connected');
    await proxy.start();
    await eventually(() => logCount('head subscription connected') > connectedAgain, 30_000, 'the subscription back');
    await chain.mine(1);
    const pushedAgain = await chain.head();
    await eventually(() => headJob(scanQueue, pushedAgain), 10_000, `a scan job for head ${pushedAgain}`);

    // Closing the worker process (what SIGTERM does, workers/main.ts) closes its socket.
    expect(proxy.connections()).to.equal(1);
    const running = workers;
    workers = null;
    await running.close();
    await eventually(() => proxy.connections() === 0, 5000, 'the WebSocket closed on shutdown');
  });
  it('names providers by their origin only: credentials in the user part, path and query of RPC and WebSocket URLs never reach a log line', async () => {
    // Provider URLs as hosted providers hand them out. anvil answers 404 on any path but its root, so
    // the path-keyed URLs fail (their errors are logged), and the root one with user and query connects.
    const port = new URL(proxy.url).port;
    const secrets = ['RPCUSERPW-7f3a', 'RPCPATHKEY-9c1d', 'RPCQUERYKEY-44be', 'WSUSERPW-d2e8', 'WSPATHKEY-0a7c', 'WSQUERYKEY-51f9'];
    for (const s of secrets) knownSecrets.add(s);
    const [rpcUser, rpcPath, rpcQuery, wsUser, wsPath, wsQuery] = secrets;
    const ctx = testContext(testConfig({ REDIS_PREFIX: prefix, WORKER_QUEUES: 'chain-scan', CHAIN_SCAN_INTERVAL_MS: '200' }));
    useTestChain(ctx.registry, chain, [`http://user:${rpcUser}@127.0.0.1:${port}/v3/${rpcPath}?key=${rpcQuery}`]);
    ctx.registry.setWsUrls(LOCAL_CHAIN_ID, [`ws://127.0.0.1:${port}/v3/${wsPath}`, `ws://user:${wsUser}@127.0.0.1:${port}/?key=${wsQuery}`]);
    await resetCheckpointToHead(ctx, chain);
    await proxy.start().catch(() => {});
    const mark = capturedLogLines.length;
    const since = () => capturedLogLines.slice(mark);
    workers = await startWorkerProcess(ctx);
    await chain.mine(1);
    await eventually(() => since().some((l) => l.includes('head subscription connected')), 20_000, 'the subscription over the root URL');
    await eventually(() => since().some((l) => l.includes('head subscription lost')), 20_000, 'the path URL refused and logged');
    await eventually(() => since().some((l) => l.includes('No RPC provider of')), 20_000, 'a failed scan logged with its provider error');
    const running = workers;
    workers = null;
    await running.close();

    const lines = since();
    for (const s of secrets) expect(lines.join(''), `${s} in the logs`).to.not.include(s);
    // The provider is still named: by its origin.
    const connected = JSON.parse(lines.find((l) => l.includes('head subscription connected'))!);
    expect(connected.provider).to.equal(`ws://127.0.0.1:${port}`);
    expect(lines.join('')).to.include(`http://127.0.0.1:${port}`);
  });
});
