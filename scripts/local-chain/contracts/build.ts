import fs from 'node:fs';
import { compileTestTokenArtifact, renderTestTokenArtifact, TEST_TOKEN_ARTIFACT_PATH } from './compile';

/** `npm run build:test-tokens`: recompiles TestToken.sol into the committed TestToken.json. */
const artifact = compileTestTokenArtifact();
const text = renderTestTokenArtifact(artifact);
const before = fs.existsSync(TEST_TOKEN_ARTIFACT_PATH) ? fs.readFileSync(TEST_TOKEN_ARTIFACT_PATH, 'utf8') : '';
fs.writeFileSync(TEST_TOKEN_ARTIFACT_PATH, text);
process.stdout.write(`${before === text ? 'unchanged' : 'wrote'} ${TEST_TOKEN_ARTIFACT_PATH} (solc ${artifact.compiler}, ${(artifact.bytecode.length - 2) / 2} bytes)\n`);
