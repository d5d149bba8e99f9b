import fs from 'node:fs';
import path from 'node:path';

/**
 * Compiles the test token with the npm `solc` package (a dev dependency, pinned in package.json;
 * the source's pragma pins the same version). The settings make the output depend on the source
 * text and the compiler only: a fixed source name instead of a path, and no metadata hash in the
 * bytecode (`bytecodeHash: none`), so every machine builds the same bytes.
 */
export const TEST_TOKEN_SOURCE_PATH = path.join(__dirname, 'TestToken.sol');
export const TEST_TOKEN_ARTIFACT_PATH = path.join(__dirname, 'TestToken.json');

const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: 'cancun',
  metadata: { bytecodeHash: 'none' },
  outputSelection: { '*': { TestToken: ['abi', 'evm.bytecode.object'] } },
} as const;

export interface TestTokenArtifact {
  contractName: 'TestToken';
  sourceName: 'TestToken.sol';
  compiler: string;
  settings: Omit<typeof SETTINGS, 'outputSelection'>;
  abi: unknown[];
  bytecode: string;
}

export function compileTestTokenArtifact(): TestTokenArtifact {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require('solc') as { compile(input: string): string; version(): string };
  const input = {
    language: 'Solidity',
    sources: { 'TestToken.sol': { content: fs.readFileSync(TEST_TOKEN_SOURCE_PATH, 'utf8') } },
    settings: SETTINGS,
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts?: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0 || !output.contracts) {
    throw new Error(`TestToken.sol does not compile with solc ${solc.version()}:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  }
  const contract = output.contracts['TestToken.sol'].TestToken;
  const { outputSelection: _omitted, ...settings } = SETTINGS;
  return {
    contractName: 'TestToken',
    sourceName: 'TestToken.sol',
    compiler: solc.version(),
    settings,
    abi: contract.abi,
    bytecode: `0x${contract.evm.bytecode.object}`,
  };
}

/** The artifact file's exact text (what `npm run build:test-tokens` writes and the test compares). */
export function renderTestTokenArtifact(artifact: TestTokenArtifact): string {
  return `${JSON.stringify(artifact, null, 2)}\n`;
}
