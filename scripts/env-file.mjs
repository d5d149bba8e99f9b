// Loaded first by the npm scripts that start the service or its tools (never by npm test): reads
// .env (or the file ENV_FILE names) when there is one; a missing file is fine. Variables already
// set in the environment win over the file.
import { config } from 'dotenv';

config({ path: process.env.ENV_FILE || '.env', quiet: true });
