import fs from 'node:fs';
import { expect } from 'chai';
import { compileTestTokenArtifact, renderTestTokenArtifact, TEST_TOKEN_ARTIFACT_PATH } from '../../scripts/local-chain/contracts/compile';

/**
 * The test tokens are deployed from a committed compiled artifact (no compile at start). It must be
 * exactly what its Solidity source compiles to with the pinned solc: rebuild it with
 * `npm run build:test-tokens` after editing TestToken.sol.
 */
describe('committed test-token artifact', function () {
  this.timeout(60_000);

  it('is what scripts/local-chain/contracts/TestToken.sol compiles to with the pinned solc', () => {
    const committed = fs.readFileSync(TEST_TOKEN_ARTIFACT_PATH, 'utf8');
    const built = compileTestTokenArtifact();
    const stored = JSON.parse(committed) as typeof built;
    expect(stored.compiler, 'solc version (package.json pins it)').to.equal(built.compiler);
    expect(stored.bytecode, 'bytecode out of date: run npm run build:test-tokens').to.equal(built.bytecode);
    expect(stored.abi, 'ABI out of date: run npm run build:test-tokens').to.deep.equal(built.abi);
    expect(committed).to.equal(renderTestTokenArtifact(built));
  });
});
