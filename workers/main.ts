import { loadConfig } from '../core/config';
import { handleShutdown, runMain } from '../core/process';
import { createService } from '../core/service';
import { startWorkerProcess } from './runtime';

runMain(async () => {
  const config = loadConfig();
  const service = await createService(config, { kind: 'worker' });
  const { ctx } = service;
  const workers = await startWorkerProcess(ctx);
  handleShutdown(async () => {
    await workers.close();
    await service.close();
  }, ctx.logger);
});
