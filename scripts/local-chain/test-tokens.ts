import { ContractFactory, Interface, type JsonRpcSigner } from 'ethers';
import type { Currency } from '../../core/chains/registry';
import type { TestTokenArtifact } from './contracts/compile';
import artifact from './contracts/TestToken.json';

/**
 * The local chain's USDT, USDC and DAI: one minimal ERC-20 (contracts/TestToken.sol) deployed three
 * times from its committed compiled artifact, so nothing is compiled at start. `mint` is open:
 * these tokens are worthless.
 */
export const TEST_TOKEN_ARTIFACT = artifact as TestTokenArtifact;

export interface TestTokenSpec {
  currency: Currency;
  name: string;
  decimals: number;
}

export const TEST_TOKENS: TestTokenSpec[] = [
  { currency: 'USDT', name: 'Tether USD (test)', decimals: 6 },
  { currency: 'USDC', name: 'USD Coin (test)', decimals: 6 },
  { currency: 'DAI', name: 'Dai Stablecoin (test)', decimals: 18 },
];

export const TEST_TOKEN_ABI = new Interface([
  'function mint(address to, uint256 value)',
  'function mintMany(address[] to, uint256 value)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function balanceOf(address) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/**
 * Deploys USDT (6), USDC (6) and DAI (18), or the tokens given (a chains file's chain: an 18-decimal
 * USDT, an EURC), from a funded signer; returns their addresses. They are sent at once and, on a
 * chain that mines on a timer, mined at once (not one block time each).
 */
export async function deployTestTokens(signer: JsonRpcSigner, tokens: readonly TestTokenSpec[] = TEST_TOKENS): Promise<Record<Currency, string>> {
  const factory = new ContractFactory(TEST_TOKEN_ARTIFACT.abi as never, TEST_TOKEN_ARTIFACT.bytecode, signer);
  const nonce = await signer.getNonce('pending');
  const contracts = await Promise.all(tokens.map((t, i) => factory.deploy(t.name, t.currency, t.decimals, { nonce: nonce + i })));
  const last = contracts[contracts.length - 1].deploymentTransaction()!;
  if (!(await signer.provider.getTransactionReceipt(last.hash))) await signer.provider.send('evm_mine', []);
  const out = {} as Record<Currency, string>;
  for (const [i, t] of tokens.entries()) {
    await contracts[i].waitForDeployment();
    out[t.currency] = await contracts[i].getAddress();
  }
  return out;
}
