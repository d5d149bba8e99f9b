import { loadConfig } from '../core/platform/config';
import { runMigrations } from '../db/migrate';
import { describeStartupError } from '../core/platform/startup-errors';

async function main() {
  const config = loadConfig();
  await runMigrations(config.databaseUrl);
  console.log('migrations applied');
}

main().catch((err) => {
  console.error(describeStartupError(err));
  process.exit(1);
});
