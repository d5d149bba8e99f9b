import { loadConfig } from '../core/config';
import { createOrganization } from '../core/organizations';
import { runMain } from '../core/process';
import { createDb } from '../db/client';
import { runMigrations } from '../db/migrate';

const USAGE = 'Usage: npm run admin -- create-org "<name>"';

/** Operator commands. `create-org` prints the organization id and its Owner key, once. */
runMain(async () => {
  const [command, ...args] = process.argv.slice(2);
  if (command !== 'create-org' || !args[0]?.trim()) {
    console.error(USAGE);
    process.exit(2);
  }
  const config = loadConfig();
  await runMigrations(config.databaseUrl);
  const handle = createDb(config.databaseUrl, { max: 1 });
  try {
    const { organizationId, ownerKey } = await createOrganization(handle.db, args.join(' ').trim().slice(0, 200));
    process.stdout.write(`organization: ${organizationId}\nowner key (shown once): ${ownerKey.key}\n`);
  } finally {
    await handle.close();
  }
});
