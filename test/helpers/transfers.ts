import { randomBytes } from 'node:crypto';
import { hexlify } from 'ethers';
import { transfers } from '../../db/schema';
import { newId } from '../../core/platform/ids';
import type { DbOrTx } from '../../db/client';
import { testDb } from './harness';
import { randomEvmAddress } from './pool';

export type TransferRow = typeof transfers.$inferInsert;

/**
 * Test fixture for domain tests of orders and deposits: a transfer row as the chain scanner
 * records it. The chain tests (test/evm) produce transfers from a real local chain instead.
 */
export async function insertTestTransfer(values: Partial<TransferRow> & Pick<TransferRow, 'chainId' | 'currency' | 'amount' | 'toAddress'>, db: DbOrTx = testDb()) {
  const row: TransferRow = {
    id: newId('trf'),
    protocol: 'evm',
    tokenAddress: randomEvmAddress(),
    fromAddress: randomEvmAddress(),
    txHash: hexlify(randomBytes(32)),
    indexInTx: 0,
    logIndex: 0,
    blockNumber: 1,
    blockHash: hexlify(randomBytes(32)),
    blockTimestamp: new Date(),
    confirmations: 1,
    status: 'pending',
    ...values,
  };
  const [inserted] = await db.insert(transfers).values(row).returning();
  return inserted;
}
