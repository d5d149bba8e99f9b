import { loadConfig } from '../core/config';
import { handleShutdown, runMain } from '../core/process';
import { createService } from '../core/service';
import { startWorkerProcess } from './runtime';
import { startMetricsServer } from '../core/metrics/server';

runMain(async () => {
  const config = loadConfig();
  const { ctx, dbHandle } = await createService(config, { kind: 'worker' });
  const workers = await startWorkerProcess(ctx);
  const metrics = await startMetricsServer(ctx, Object.values(workers.queues));
  handleShutdown(async () => {
    await workers.close();
    await metrics.close();
    await dbHandle.close();
  }, ctx.logger);
});
