import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client';
import { depositBindingChains, depositBindings } from '../../db/schema';
import type { ChainRegistry, Protocol } from '../chains/registry';
import type { ServiceContext } from '../service/context';
import { AppError, isUniqueViolation } from '../platform/errors';
import { newId } from '../platform/ids';
import { normalizeAddress } from '../chains/addresses';
import { allocatePoolAddress, releasePoolAddress } from '../pool/allocation';
import { cooldownMinutesFor } from '../pool/cooldown';
import { assertNoSeedPhrase } from '../pool/secret-scan';
import type { BindingView, MonitoringTarget, Registration } from '../views/deposit-reference';

/**
 * Deposit references (spec "Deposit reference (binding)"). A reference is bound to one pool
 * address per protocol family and is monitored on every enabled chain of that family, for every
 * currency offered there; it never expires. Description B registers the reference per
 * (currency, chain): those registrations share the family's binding and its address.
 */

export type BindingRow = typeof depositBindings.$inferSelect;

export function monitoringOf(registry: ChainRegistry, protocol: Protocol): { monitoredChains: string[]; monitoringTargets: MonitoringTarget[] } {
  const chains = registry.enabledChainsOf(protocol);
  return {
    monitoredChains: chains.map((c) => c.chainId),
    monitoringTargets: chains.flatMap((c) => registry.offeredTokens(c).map((t) => ({ chain: c.chainId, contract: t.address!, token: t.currency }))),
  };
}

export function bindingView(registry: ChainRegistry, row: BindingRow, registrations: Registration[] = []): BindingView {
  const protocol = row.protocol as Protocol;
  return {
    bindingId: row.id,
    depositReference: row.depositReference,
    protocol,
    address: row.address,
    metadata: (row.metadata ?? {}) as Record<string, unknown>,
    createdAt: row.createdAt,
    ...monitoringOf(registry, protocol),
    registrations,
  };
}

/** Binding on a family with no enabled chain would accept what can never be seen (design.md §3). */
function requireEnabledProtocol(registry: ChainRegistry, protocol: Protocol): void {
  if (registry.enabledChainsOf(protocol).length === 0) {
    throw new AppError('INVALID_CHAIN', `Protocol "${protocol}" is not enabled on this deployment yet: no ${protocol} chain is monitored`);
  }
}

const notFoundError = (depositReference: string, more = '') =>
  new AppError('DEPOSIT_REFERENCE_NOT_FOUND', `Deposit reference "${depositReference}" not found${more}`);

/** The open (not unbound) bindings of one reference or several, optionally of one family. */
export function openBindingsFilter(organizationId: string, depositReference: string | string[], protocol?: Protocol) {
  return and(
    eq(depositBindings.organizationId, organizationId),
    Array.isArray(depositReference) ? inArray(depositBindings.depositReference, depositReference) : eq(depositBindings.depositReference, depositReference),
    isNull(depositBindings.unboundAt),
    protocol ? eq(depositBindings.protocol, protocol) : undefined,
  );
}

export async function findOpenBindings(db: DbOrTx, organizationId: string, depositReference: string, protocol?: Protocol): Promise<BindingRow[]> {
  return db
    .select()
    .from(depositBindings)
    .where(
      openBindingsFilter(organizationId, depositReference, protocol),
    )
    .orderBy(asc(depositBindings.createdAt), asc(depositBindings.id));
}

export async function openRegistrations(db: DbOrTx, bindingIds: string[]): Promise<Map<string, Registration[]>> {
  const out = new Map<string, Registration[]>();
  if (bindingIds.length === 0) return out;
  const rows = await db
    .select()
    .from(depositBindingChains)
    .where(and(inArray(depositBindingChains.bindingId, bindingIds), isNull(depositBindingChains.removedAt)))
    .orderBy(asc(depositBindingChains.createdAt), asc(depositBindingChains.id));
  for (const r of rows) {
    const list = out.get(r.bindingId) ?? [];
    list.push({ chainId: r.chainId, currency: r.currency, createdAt: r.createdAt });
    out.set(r.bindingId, list);
  }
  return out;
}

/** Takes a pool address for a new binding (503 NO_AVAILABLE_ADDRESSES rolls everything back). */
async function createBinding(
  tx: Tx,
  input: { organizationId: string; depositReference: string; protocol: Protocol; metadata: Record<string, unknown>; now: Date },
): Promise<BindingRow> {
  const id = newId('dr');
  const allocation = await allocatePoolAddress(tx, {
    organizationId: input.organizationId,
    protocol: input.protocol,
    holder: { kind: 'deposit', depositBindingId: id },
    now: input.now,
  });
  const [row] = await tx
    .insert(depositBindings)
    .values({
      id,
      organizationId: input.organizationId,
      depositReference: input.depositReference,
      protocol: input.protocol,
      poolAddressId: allocation.poolAddressId,
      address: allocation.address,
      metadata: input.metadata,
      createdAt: input.now,
    })
    .returning();
  return row;
}

/**
 * Serializes binding work on one (organization, reference, family) for the rest of the transaction:
 * a concurrent bind of the same reference waits, then finds the first one's binding instead of
 * taking a second address (and emptying the pool for others).
 */
async function lockReference(tx: Tx, organizationId: string, depositReference: string, protocol: Protocol): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`deposit-binding:${organizationId}:${protocol}:${depositReference}`}, 0))`);
}

/**
 * Runs a binding transaction. Besides the advisory lock, the partial unique index
 * deposit_bindings_open_uq is the last guard: should a transaction still lose a race, it rolls back
 * (its address allocation with it) and runs again, now finding the winner's binding.
 */
async function withBindingRace<T>(ctx: ServiceContext, work: (tx: Tx) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await ctx.db.transaction(work);
    } catch (err) {
      if (attempt < 3 && isUniqueViolation(err, 'deposit_bindings_open_uq')) continue;
      throw err;
    }
  }
}

/**
 * Description A's bind: one address per reference and protocol family. An open binding of the same
 * reference and family is returned as it is (created: false; metadata unchanged).
 */
export async function bindDepositReference(
  ctx: ServiceContext,
  organizationId: string,
  input: { depositReference: string; protocol: Protocol; metadata?: Record<string, unknown> },
): Promise<{ binding: BindingView; created: boolean }> {
  requireEnabledProtocol(ctx.registry, input.protocol);
  assertNoSeedPhrase({ depositReference: input.depositReference, metadata: input.metadata });
  return withBindingRace(ctx, async (tx) => {
    await lockReference(tx, organizationId, input.depositReference, input.protocol);
    const [existing] = await findOpenBindings(tx, organizationId, input.depositReference, input.protocol);
    if (existing) {
      const regs = await openRegistrations(tx, [existing.id]);
      return { binding: bindingView(ctx.registry, existing, regs.get(existing.id)), created: false };
    }
    const row = await createBinding(tx, { organizationId, ...input, metadata: input.metadata ?? {}, now: ctx.clock.now() });
    return { binding: bindingView(ctx.registry, row), created: true };
  });
}

/**
 * Description B's registration of a reference on one (currency, chain). The first registration on
 * a family binds an address; another chain of the same family reuses it. The same reference on
 * the same chain again is 409 DUPLICATE_DEPOSIT_REFERENCE. Metadata is the reference's (per
 * family binding): it is set when the family is first bound and left unchanged afterwards.
 */
export async function registerDepositReference(
  ctx: ServiceContext,
  organizationId: string,
  input: { depositReference: string; currency: string; chainId: string; metadata?: Record<string, unknown> },
): Promise<{ binding: BindingView; registration: Registration }> {
  const chain = ctx.registry.requireOfferedChain(input.chainId);
  ctx.registry.requireToken(chain, input.currency);
  assertNoSeedPhrase({ depositReference: input.depositReference, metadata: input.metadata });
  const duplicate = () =>
    new AppError('DUPLICATE_DEPOSIT_REFERENCE', `Deposit reference "${input.depositReference}" already exists on ${chain.chainId}`, undefined, {
      depositReference: input.depositReference,
      chainId: chain.chainId,
    });
  try {
    return await withBindingRace(ctx, async (tx) => {
      await lockReference(tx, organizationId, input.depositReference, chain.protocol);
      const now = ctx.clock.now();
      const [existing] = await findOpenBindings(tx, organizationId, input.depositReference, chain.protocol);
      const binding =
        existing ??
        (await createBinding(tx, {
          organizationId,
          depositReference: input.depositReference,
          protocol: chain.protocol,
          metadata: input.metadata ?? {},
          now,
        }));
      const regs = (await openRegistrations(tx, [binding.id])).get(binding.id) ?? [];
      if (regs.some((r) => r.chainId === chain.chainId)) throw duplicate();
      const [reg] = await tx
        .insert(depositBindingChains)
        .values({ bindingId: binding.id, chainId: chain.chainId, currency: input.currency, createdAt: now })
        .returning();
      const registration = { chainId: reg.chainId, currency: reg.currency, createdAt: reg.createdAt };
      return { binding: bindingView(ctx.registry, binding, [...regs, registration]), registration };
    });
  } catch (err) {
    if (isUniqueViolation(err, 'deposit_binding_chains_open_uq')) throw duplicate();
    throw err;
  }
}

export interface UnbindResult {
  depositReference: string;
  /** Addresses whose binding ended (each sent to cooldown). */
  unboundAddresses: number;
  addresses: { protocol: Protocol; address: string }[];
}

/** Ends a binding: its registrations, its address assignment, and the address's cooldown. */
async function endBinding(tx: Tx, ctx: ServiceContext, binding: BindingRow, now: Date, cooldownMinutes: number): Promise<boolean> {
  const ended = await tx
    .update(depositBindings)
    .set({ unboundAt: now })
    .where(and(eq(depositBindings.id, binding.id), isNull(depositBindings.unboundAt)))
    .returning({ id: depositBindings.id });
  if (ended.length === 0) return false;
  await tx
    .update(depositBindingChains)
    .set({ removedAt: now })
    .where(and(eq(depositBindingChains.bindingId, binding.id), isNull(depositBindingChains.removedAt)));
  await releasePoolAddress(tx, {
    poolAddressId: binding.poolAddressId,
    now,
    cooldownMinutes,
    minimumCooldownSeconds: ctx.registry.minimumCooldownSeconds(binding.protocol as Protocol),
  });
  return true;
}

/**
 * Unbinds a reference: all its families (or one, with `protocol`). With `chainId` (description B)
 * only that chain's registration is removed, and the family's address is freed only when no chain
 * of the family remains registered. A family-wide binding (POST /deposits/bind) has no per-chain
 * registrations: removing one chain from it is 409 CONFLICT (unbind it without chainId).
 */
export async function unbindDepositReference(
  ctx: ServiceContext,
  organizationId: string,
  input: { depositReference: string; protocol?: Protocol; chainId?: string },
): Promise<UnbindResult> {
  let protocol = input.protocol;
  if (input.chainId !== undefined) {
    const chain = ctx.registry.get(input.chainId);
    if (!chain) throw new AppError('INVALID_CHAIN', `Unknown chainId "${input.chainId}"`);
    protocol = chain.protocol;
  }
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now();
    const bindings = await lockOpenBindings(tx, organizationId, input.depositReference, protocol);
    if (bindings.length === 0) throw notFoundError(input.depositReference);
    const cooldown = await cooldownMinutesFor(tx, organizationId, 'unbind');
    const result: UnbindResult = { depositReference: input.depositReference, unboundAddresses: 0, addresses: [] };

    if (input.chainId !== undefined) {
      const binding = bindings[0];
      const regs = (await openRegistrations(tx, [binding.id])).get(binding.id) ?? [];
      if (regs.length === 0) {
        throw new AppError(
          'CONFLICT',
          `Deposit reference "${input.depositReference}" is bound on every ${binding.protocol} chain (POST /deposits/bind); unbind it without chainId`,
        );
      }
      if (!regs.some((r) => r.chainId === input.chainId)) throw notFoundError(input.depositReference, ` on ${input.chainId}`);
      await tx
        .update(depositBindingChains)
        .set({ removedAt: now })
        .where(and(eq(depositBindingChains.bindingId, binding.id), eq(depositBindingChains.chainId, input.chainId), isNull(depositBindingChains.removedAt)));
      if (regs.length > 1) return result;
    }
    for (const binding of bindings) {
      if (await endBinding(tx, ctx, binding, now, cooldown)) {
        result.unboundAddresses += 1;
        result.addresses.push({ protocol: binding.protocol as Protocol, address: binding.address });
      }
    }
    return result;
  });
}

/** Description A's unbind by {address, protocol}: ends the binding holding that address. */
export async function unbindDepositAddress(ctx: ServiceContext, organizationId: string, input: { address: string; protocol: Protocol }): Promise<UnbindResult> {
  return ctx.db.transaction(async (tx) => {
    // Bindings store the normalised form (normalizeAddress, the one authority): compare in it, so an
    // EVM address in any case matches and a wrongly-cased base58 address (another address) does not.
    const address = normalizeAddress(input.protocol, input.address);
    if (address === null) throw new AppError('DEPOSIT_REFERENCE_NOT_FOUND', `No deposit reference is bound to ${input.protocol} address ${input.address}`);
    const addressMatch = eq(depositBindings.address, address);
    const [binding] = await tx
      .select()
      .from(depositBindings)
      .where(and(eq(depositBindings.organizationId, organizationId), eq(depositBindings.protocol, input.protocol), addressMatch, isNull(depositBindings.unboundAt)))
      .for('update');
    if (!binding) throw new AppError('DEPOSIT_REFERENCE_NOT_FOUND', `No deposit reference is bound to ${input.protocol} address ${input.address}`);
    const ended = await endBinding(tx, ctx, binding, ctx.clock.now(), await cooldownMinutesFor(tx, organizationId, 'unbind'));
    return {
      depositReference: binding.depositReference,
      unboundAddresses: ended ? 1 : 0,
      addresses: ended ? [{ protocol: binding.protocol as Protocol, address: binding.address }] : [],
    };
  });
}

async function lockOpenBindings(tx: Tx, organizationId: string, depositReference: string, protocol?: Protocol): Promise<BindingRow[]> {
  return tx
    .select()
    .from(depositBindings)
    .where(
      openBindingsFilter(organizationId, depositReference, protocol),
    )
    .orderBy(asc(depositBindings.createdAt), asc(depositBindings.id))
    .for('update');
}
