import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { closedPort } from './processes';

const run = promisify(execFile);

export interface LocalRedisCluster {
  /** The seed nodes as REDIS_CLUSTER_NODES takes them. */
  nodes: string[];
  ports: number[];
  stop(): Promise<void>;
}

async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => (s.end(), resolve(true)));
    s.on('error', () => resolve(false));
  });
}

/**
 * A Redis Cluster of its own for a test: `size` masters (no replicas) from the machine's
 * redis-server on free ports, in a temporary directory, joined with `redis-cli --cluster create`.
 * Never touches the shared Redis on 6379.
 */
export async function startRedisCluster(size = 3): Promise<LocalRedisCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sg-redis-cluster-'));
  const ports: number[] = [];
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < size; i++) {
      const port = await closedPort();
      ports.push(port);
      children.push(
        spawn(
          'redis-server',
          ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '5000', '--dir', dir, '--save', '', '--appendonly', 'no', '--maxmemory-policy', 'noeviction'],
          { stdio: 'ignore' },
        ),
      );
    }
    for (const port of ports) {
      for (let i = 0; !(await answers(port)); i++) {
        if (i > 100) throw new Error(`redis-server on ${port} did not start`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes']);
    // Every node agrees the slots are covered before the cluster is used.
    for (const port of ports) {
      for (let i = 0; ; i++) {
        const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
        if (/cluster_state:ok/.test(stdout)) break;
        if (i > 100) throw new Error(`cluster not ready on ${port}: ${stdout}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return { nodes: ports.map((p) => `127.0.0.1:${p}`), ports, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
