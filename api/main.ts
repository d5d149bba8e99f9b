import { loadConfig } from '../core/platform/config';
import { runMain, shutdownInReverse } from '../core/platform/process';
import { createService } from '../core/service/service';
import { startMetricsServer } from '../core/metrics/server';
import { startApi } from './server';

runMain(async () => {
  const config = loadConfig();
  const service = await createService(config, { kind: 'api' });
  const { ctx } = service;
  const shutdown = shutdownInReverse(ctx.logger, config.shutdownTimeoutMs);
  shutdown.add(() => service.close());
  const api = await startApi(ctx);
  shutdown.atSignal(() => api.drain());
  shutdown.add((deadline) => api.close(deadline));
  const metrics = await startMetricsServer(ctx, Object.values(api.queues));
  shutdown.add(() => metrics.close());
});
