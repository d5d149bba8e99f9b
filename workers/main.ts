import { loadConfig } from '../core/platform/config';
import { runMain, shutdownInReverse } from '../core/platform/process';
import { createService } from '../core/service/service';
import { startMetricsServer } from '../core/metrics/server';
import type { CountableQueue } from '../core/metrics/collectors';
import { startWorkerProcess } from './runtime';

runMain(async (main) => {
  const config = loadConfig();
  const service = await createService(config, { kind: 'worker' });
  const { ctx } = service;
  main.useLogger(ctx.logger);
  const shutdown = shutdownInReverse(ctx.logger, config.shutdownTimeoutMs);
  shutdown.add(() => service.close());
  // The port is bound before the workers start: a busy METRICS_PORT stops the process before it
  // has announced or taken any job. The queues' depths are read at scrape time.
  const queues: CountableQueue[] = [];
  const metrics = await startMetricsServer(ctx, queues, { announce: false });
  shutdown.add(() => metrics.close());
  const workers = await startWorkerProcess(ctx, { recycleDatabase: (reason) => service.dbHandle.recycle(reason) });
  shutdown.add((deadline) => workers.close(deadline));
  queues.push(...Object.values(workers.queues));
  metrics.announce();
});
