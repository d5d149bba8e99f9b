import type { Tx } from '../../db/client';
import type { ServiceContext } from '../context';

/** STAND-IN until the deposits branch lands (it owns this file; take theirs on merge). */
const missing = (name: string) => new Error(`${name} is provided by the deposits branch (not merged yet)`);
export async function recordDeposit(_tx: Tx, _ctx: ServiceContext, _transferId: string): Promise<{ depositId: string } | null> {
  throw missing('recordDeposit');
}
export async function confirmDeposit(_tx: Tx, _ctx: ServiceContext, _transferId: string): Promise<boolean> {
  throw missing('confirmDeposit');
}
export async function completeDeposit(_tx: Tx, _ctx: ServiceContext, _transferId: string): Promise<boolean> {
  throw missing('completeDeposit');
}
export async function dropDeposit(_tx: Tx, _ctx: ServiceContext, _transferId: string): Promise<boolean> {
  throw missing('dropDeposit');
}
