import { expect } from 'chai';
import { Cluster } from 'ioredis';
import request from 'supertest';
import { closeQueues, createQueues } from '../../core/jobs/catalog';
import { createProducerRedis, deleteKeysWithPrefix, queuePrefixOf, redisTargetOf } from '../../core/platform/redis';
import { startApi, type RunningApi } from '../../api/server';
import { signInLimits } from '../../api/pages/dashboard/sign-in-limits';
import { startWorkerProcess, type RunningWorkers } from '../../workers/runtime';
import { createTestOrg, testConfig, testContext, testLogger, TEST_REDIS_PREFIX } from '../helpers/harness';
import { startRedisCluster, type LocalRedisCluster } from '../helpers/redis-cluster';
import { startReceiver, type Receiver } from '../helpers/webhooks';
import { eventually } from '../helpers/wait';

/**
 * The service on a Redis Cluster (REDIS_CLUSTER_NODES): a local 3-master cluster started by the
 * test from the machine's redis-server. BullMQ's keys carry a hash tag, so a queue's keys share a
 * slot; rate limits and API key revocations work across the cluster as on one Redis.
 */
describe('Redis Cluster (REDIS_CLUSTER_NODES)', function () {
  this.timeout(90_000);
  let cluster: LocalRedisCluster;
  let receiver: Receiver;
  const prefix = `${TEST_REDIS_PREFIX}cl`;
  const running: { close(): Promise<void> }[] = [];

  before(async () => {
    cluster = await startRedisCluster(3);
    receiver = await startReceiver();
  });

  after(async () => {
    for (const r of running.reverse()) await r.close().catch(() => {});
    await receiver?.close();
    await cluster?.stop();
  });

  const clusterConfig = (env: Record<string, string> = {}) =>
    testConfig({ REDIS_CLUSTER_NODES: cluster.nodes.join(','), REDIS_PREFIX: prefix, WEBHOOK_ALLOW_INSECURE: 'true', ...env });

  it('reads the seed nodes and hash-tags the queue prefix; refuses a malformed list', () => {
    const config = clusterConfig();
    expect(config.redisClusterNodes).to.deep.equal(cluster.nodes.map((n) => `redis://${n}`));
    expect(queuePrefixOf(config)).to.equal(`{${prefix}}`);
    expect(queuePrefixOf(testConfig())).to.equal(testConfig().redisPrefix);
    expect(() => testConfig({ REDIS_CLUSTER_NODES: '127.0.0.1' })).to.throw(/REDIS_CLUSTER_NODES must list host:port/);
    expect(() => testConfig({ REDIS_CLUSTER_NODES: 'http://127.0.0.1:7000' })).to.throw(/REDIS_CLUSTER_NODES/);
  });

  it('runs the queues on the cluster: a webhook test event goes from the API through BullMQ to the receiver, every queue key in one slot', async () => {
    const config = clusterConfig({ WORKER_QUEUES: 'webhook-relay,webhook-delivery', WEBHOOK_RELAY_INTERVAL_MS: '200', PORT: '0' });
    const workers: RunningWorkers = await startWorkerProcess(testContext(config));
    running.push(workers);
    const api: RunningApi = await startApi(testContext(config));
    running.push(api);
    const org = await createTestOrg('cluster queues');
    const base = `http://127.0.0.1:${api.port}`;
    const endpoint = await request(base).post('/api/v1/webhooks/endpoints').set('X-API-Key', org.keys.admin).send({ url: receiver.url, events: ['order.completed'] });
    expect(endpoint.status, JSON.stringify(endpoint.body)).to.equal(201);
    const sent = await request(base).post(`/api/v1/webhooks/endpoints/${endpoint.body.id}/test`).set('X-API-Key', org.keys.admin).send({});
    expect(sent.status, JSON.stringify(sent.body)).to.equal(201);
    await eventually(() => receiver.requests.some((r) => r.headers['x-service-event-id'] === sent.body.id), 30_000, 'the test event at the receiver');

    // BullMQ's keys of every queue, found on whichever master holds them: one slot, one node.
    const redis = createProducerRedis(redisTargetOf(config)) as Cluster;
    try {
      await eventually(() => redis.status === 'ready', 10_000, 'the cluster connection');
      const keysPerNode = await Promise.all(redis.nodes('master').map((node) => node.keys(`{${prefix}}:*`)));
      const keys = keysPerNode.flat();
      expect(keys.length).to.be.above(0);
      expect(keys.some((k) => k.startsWith(`{${prefix}}:webhook-delivery:`))).to.equal(true);
      expect(keysPerNode.filter((k) => k.length > 0)).to.have.length(1);
      const slots = new Set(await Promise.all(keys.slice(0, 50).map((k) => redis.cluster('KEYSLOT', k))));
      expect(slots.size).to.equal(1);
    } finally {
      redis.disconnect();
    }
  });

  it('keeps rate limits across API instances and announces key revocations through the cluster', async () => {
    const config = clusterConfig({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PER_MINUTE: '4', PORT: '0' });
    const first = await startApi(testContext(config));
    running.push(first);
    const second = await startApi(testContext(config));
    running.push(second);
    const [a, b] = [`http://127.0.0.1:${first.port}`, `http://127.0.0.1:${second.port}`];
    const org = await createTestOrg('cluster limits');

    // A key used on the second instance (remembered there), then revoked through the first.
    const created = await request(a).post(`/api/v1/organizations/${org.organizationId}/api-keys`).set('X-API-Key', org.keys.owner).send({ name: 'short-lived', role: 'member' });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect((await request(b).get('/api/v1/orders').set('X-API-Key', created.body.key)).status).to.equal(200);
    expect((await request(a).delete(`/api/v1/api-keys/${created.body.id}`).set('X-API-Key', org.keys.owner)).status).to.be.within(200, 204);
    await eventually(async () => (await request(b).get('/api/v1/orders').set('X-API-Key', created.body.key)).status === 401, 10_000, 'the revoked key refused on the other instance');

    // 4 a minute per key, counted in the cluster whichever instance answers.
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await request(i % 2 ? b : a).get('/api/v1/orders').set('X-API-Key', org.keys.viewer)).status);
    expect(statuses.slice(0, 4)).to.deep.equal([200, 200, 200, 200]);
    expect(statuses.slice(4)).to.deep.equal([429, 429]);

    const redis = createProducerRedis(redisTargetOf(config));
    try {
      await eventually(() => redis.status === 'ready', 10_000, 'the cluster connection');
      expect(await deleteKeysWithPrefix(redis, prefix)).to.be.above(0);
    } finally {
      redis.disconnect();
    }
  });

  it('delays sign-ins after failures on the cluster, whose keys lie in different slots, and clears them on success', async () => {
    const config = clusterConfig();
    const redis = createProducerRedis(redisTargetOf(config));
    try {
      await eventually(() => redis.status === 'ready', 10_000, 'the cluster connection');
      const limits = signInLimits({ redis, keyPrefix: `${prefix}:signin` });
      const [ip, email] = ['203.0.113.7', 'owner@shop.example'];
      expect(await limits.wait(ip, email)).to.equal(0);
      // Five failures are free per account and IP; the sixth delays the next attempt.
      for (let i = 0; i < 6; i++) await limits.failed(ip, email);
      expect(await limits.wait(ip, email)).to.be.above(0);
      await limits.succeeded(ip, email);
      expect(await limits.wait(ip, email)).to.equal(0);
    } finally {
      redis.disconnect();
    }
  });
});
