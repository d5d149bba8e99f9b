import { loadConfig } from '../core/config';
import { handleShutdown, runMain } from '../core/process';
import { createService } from '../core/service';
import { startApi } from './server';
import { startMetricsServer } from '../core/metrics/server';

runMain(async () => {
  const config = loadConfig();
  const { ctx, dbHandle } = await createService(config, { kind: 'api' });
  const api = await startApi(ctx);
  const metrics = await startMetricsServer(ctx, Object.values(api.queues));
  handleShutdown(async () => {
    await api.close();
    await metrics.close();
    await dbHandle.close();
  }, ctx.logger);
});
