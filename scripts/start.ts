import { loadConfig } from '../core/config';
import { countOrganizations, createOrganization } from '../core/organizations';
import { handleShutdown, runMain } from '../core/process';
import { createService } from '../core/service';
import { startApi } from '../api/server';
import { startWorkerProcess } from '../workers/runtime';

/** `npm start`: API and workers in one process, on local defaults. */
runMain(async () => {
  const config = loadConfig();
  const { ctx, dbHandle } = await createService(config);

  // First start on an empty database: a local organization, so a newcomer can call the API at once.
  if ((await countOrganizations(ctx.db)) === 0) {
    const { organizationId, ownerKey } = await createOrganization(ctx.db, 'Local organization');
    // The one exception to "no secret in output": printed once, on the terminal, never logged.
    process.stdout.write(
      `\n  Created organization ${organizationId}\n  Owner API key (shown once, store it now): ${ownerKey.key}\n` +
        `  Try: curl -H "X-API-Key: ${ownerKey.key}" http://localhost:${config.port}/api/v1/organizations\n\n`,
    );
  }

  const workers = await startWorkerProcess(ctx);
  const api = await startApi(ctx);
  handleShutdown(async () => {
    await api.close();
    await workers.close();
    await dbHandle.close();
  }, ctx.logger);
});
