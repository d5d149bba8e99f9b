import { loadConfig } from '../core/platform/config';
import { runMain, shutdownInReverse } from '../core/platform/process';
import { createService } from '../core/service/service';
import { startMetricsServer } from '../core/metrics/server';
import { startWorkerProcess } from './runtime';

runMain(async () => {
  const config = loadConfig();
  const service = await createService(config, { kind: 'worker' });
  const { ctx } = service;
  const shutdown = shutdownInReverse(ctx.logger, config.shutdownTimeoutMs);
  shutdown.add(() => service.close());
  const workers = await startWorkerProcess(ctx);
  shutdown.add((deadline) => workers.close(deadline));
  const metrics = await startMetricsServer(ctx, Object.values(workers.queues));
  shutdown.add(() => metrics.close());
});
