import { ContractFactory, Interface, type Signer } from 'ethers';
import type { Currency } from '../../registry';

/**
 * Minimal ERC-20 test tokens for the local chain and the tests, compiled at run time with the npm
 * `solc` package (no compiled artifact is committed). `mint` is open: these tokens are worthless.
 */
export const TEST_TOKEN_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract TestToken {
    string public name;
    string public symbol;
    uint8 public decimals;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(string memory name_, string memory symbol_, uint8 decimals_) {
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
    }

    function mint(address to, uint256 value) external {
        totalSupply += value;
        balanceOf[to] += value;
        emit Transfer(address(0), to, value);
    }

    /// One Transfer event per recipient (benchmarks create many transfers per block with it).
    function mintMany(address[] calldata to, uint256 value) external {
        for (uint256 i = 0; i < to.length; i++) {
            totalSupply += value;
            balanceOf[to[i]] += value;
            emit Transfer(address(0), to[i], value);
        }
    }

    function transfer(address to, uint256 value) external returns (bool) {
        _transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "allowance");
        allowance[from][msg.sender] = allowed - value;
        _transfer(from, to, value);
        return true;
    }

    function _transfer(address from, address to, uint256 value) internal {
        require(balanceOf[from] >= value, "balance");
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
    }
}
`;

export const TEST_TOKENS: { currency: Currency; name: string; decimals: number }[] = [
  { currency: 'USDT', name: 'Tether USD (test)', decimals: 6 },
  { currency: 'USDC', name: 'USD Coin (test)', decimals: 6 },
  { currency: 'DAI', name: 'Dai Stablecoin (test)', decimals: 18 },
];

export interface CompiledToken {
  abi: unknown[];
  bytecode: string;
}

let compiled: CompiledToken | null = null;

/** Compiles the test token once per process (a second or two). */
export function compileTestToken(): CompiledToken {
  if (compiled) return compiled;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const solc = require('solc') as { compile(input: string): string };
  const input = {
    language: 'Solidity',
    sources: { 'TestToken.sol': { content: TEST_TOKEN_SOURCE } },
    settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: 'cancun', outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`Test token does not compile: ${errors.map((e) => e.formattedMessage).join('\n')}`);
  const c = output.contracts['TestToken.sol'].TestToken;
  compiled = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  return compiled;
}

export const TEST_TOKEN_ABI = new Interface([
  'function mint(address to, uint256 value)',
  'function mintMany(address[] to, uint256 value)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function balanceOf(address) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** Deploys USDT (6), USDC (6) and DAI (18) from a funded signer; returns their addresses. */
export async function deployTestTokens(signer: Signer): Promise<Record<Currency, string>> {
  const { abi, bytecode } = compileTestToken();
  const factory = new ContractFactory(abi as never, bytecode, signer);
  const out = {} as Record<Currency, string>;
  for (const t of TEST_TOKENS) {
    const contract = await factory.deploy(t.name, t.currency, t.decimals);
    await contract.waitForDeployment();
    out[t.currency] = await contract.getAddress();
  }
  return out;
}
