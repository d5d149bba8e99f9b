import { loadConfig } from '../core/config';
import { handleShutdown, runMain } from '../core/process';
import { createService } from '../core/service';
import { startApi } from './server';

runMain(async () => {
  const config = loadConfig();
  const { ctx, dbHandle } = await createService(config, { kind: 'api' });
  const api = await startApi(ctx);
  handleShutdown(async () => {
    await api.close();
    await dbHandle.close();
  }, ctx.logger);
});
