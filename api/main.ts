import { loadConfig } from '../core/platform/config';
import { runMain, shutdownInReverse } from '../core/platform/process';
import { createService } from '../core/service/service';
import { startMetricsServer } from '../core/metrics/server';
import { startHeadLooks } from '../core/detection/head-looks';
import { startApi } from './server';

runMain(async (main) => {
  const config = loadConfig();
  const service = await createService(config, { kind: 'api' });
  const { ctx } = service;
  main.useLogger(ctx.logger);
  const shutdown = shutdownInReverse(ctx.logger, config.shutdownTimeoutMs);
  shutdown.add(() => service.close());
  // Both ports are bound before either is announced: a busy one stops the process having said nothing.
  const api = await startApi(ctx, { announce: false });
  shutdown.atSignal(() => api.drain());
  shutdown.add((deadline) => api.close(deadline));
  const metrics = await startMetricsServer(ctx, Object.values(api.queues), { announce: false });
  shutdown.add(() => metrics.close());
  // The API hands addresses out: its own looks at the chains back each hand-over even while every
  // worker is down (core/detection/head-looks.ts).
  const looks = startHeadLooks(ctx);
  shutdown.add(() => looks.close());
  api.announce();
  metrics.announce();
});
