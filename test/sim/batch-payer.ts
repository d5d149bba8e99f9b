import { ContractFactory, Interface, type Signer } from 'ethers';

/**
 * A small batch-transfer contract for the simulation: several token transfers (possibly in
 * several tokens, to several pool addresses) in one transaction, as exchanges and payroll tools
 * send them. Compiled at run time with the npm `solc` package, like the test tokens.
 */
export const BATCH_PAYER_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface ITransfer {
    function transfer(address to, uint256 value) external returns (bool);
}

contract BatchPayer {
    /// Pays out of this contract's own balances (the simulation mints to it first).
    function pay(address[] calldata tokens, address[] calldata to, uint256[] calldata amounts) external {
        require(tokens.length == to.length && to.length == amounts.length, "lengths");
        for (uint256 i = 0; i < to.length; i++) {
            require(ITransfer(tokens[i]).transfer(to[i], amounts[i]), "transfer");
        }
    }
}
`;

export const BATCH_PAYER_ABI = new Interface(['function pay(address[] tokens, address[] to, uint256[] amounts)']);

export async function deployBatchPayer(signer: Signer): Promise<string> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require('solc') as { compile(input: string): string };
  const input = {
    language: 'Solidity',
    sources: { 'BatchPayer.sol': { content: BATCH_PAYER_SOURCE } },
    settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`BatchPayer does not compile: ${errors.map((e) => e.formattedMessage).join('\n')}`);
  const c = output.contracts['BatchPayer.sol'].BatchPayer;
  const contract = await new ContractFactory(c.abi as never, `0x${c.evm.bytecode.object}`, signer).deploy();
  await contract.waitForDeployment();
  return contract.getAddress();
}
