import { loadConfig } from '../core/config';
import { handleShutdown, runMain } from '../core/process';
import { createService } from '../core/service';
import { startWorkerProcess } from './runtime';

runMain(async () => {
  const config = loadConfig();
  const { ctx, dbHandle } = await createService(config, { kind: 'worker' });
  const workers = await startWorkerProcess(ctx);
  handleShutdown(async () => {
    await workers.close();
    await dbHandle.close();
  }, ctx.logger);
});
