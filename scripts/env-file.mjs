// Loaded first by the npm scripts that start the service or its tools (never by npm test): reads
// .env when there is one (a missing .env is fine), or the file ENV_FILE names, which must exist:
// a mistyped ENV_FILE would otherwise run migrate, admin or pay against the default database.
// Variables already set in the environment win over the file.
import { existsSync } from 'node:fs';
import { config } from 'dotenv';

const named = process.env.ENV_FILE;
if (named && !existsSync(named)) {
  process.stderr.write(`ENV_FILE names ${named}, which does not exist (relative paths are from ${process.cwd()}): nothing was run. Fix the path or unset ENV_FILE to read .env.\n`);
  process.exit(1);
}
config({ path: named || '.env', quiet: true });
