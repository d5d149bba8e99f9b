import { loadConfig } from '../core/config';
import { handleShutdown, runMain } from '../core/process';
import { createService } from '../core/service';
import { startApi } from './server';

runMain(async () => {
  const config = loadConfig();
  const service = await createService(config, { kind: 'api' });
  const { ctx } = service;
  const api = await startApi(ctx);
  handleShutdown(async () => {
    await api.close();
    await service.close();
  }, ctx.logger);
});
