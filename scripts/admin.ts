import { parseArgs } from 'node:util';
import { loadConfig } from '../core/platform/config';
import { AppError } from '../core/platform/errors';
import { listAllOrganizations, operatorCallerFor, organizationOfApiKey } from '../core/organizations/operator';
import { createApiKey, createOrganization, listApiKeys, revokeApiKey } from '../core/organizations/organizations';
import { runMain } from '../core/platform/process';
import { ROLES, type Role } from '../core/organizations/roles';
import { findUserByEmail, operatorSignInLink } from '../core/users/users';
import { issueSignInLink } from '../core/users/sign-in-links';
import { createDb, type DbHandle } from '../db/client';
import { runMigrations } from '../db/migrate';

const USAGE = `Usage: npm run admin -- create-org "<name>" [--derive-from <xpub>] [--count <n>]
         create an organization and print its Owner key once; --derive-from fills its EVM and Tron
         pools from an extended public key (100 addresses each, or --count)
       npm run admin -- fill-pool <organization id> --derive-from <xpub> [--count <n>]
         derive more EVM and Tron pool addresses for an existing organization (after the ones it has)
       npm run admin -- list-orgs
       npm run admin -- create-key <organization id> --role <owner|admin|member|viewer> [--name "<name>"]
         print a new key once
       npm run admin -- list-keys <organization id>      (never shows a key's secret)
       npm run admin -- revoke-key <key id>              (at once; the last Owner key cannot be revoked)
       npm run admin -- create-user <email> --org <organization id> --role <owner|admin|member|viewer>
         add a dashboard user (or set their role) and print a one-time sign-in link (valid 24 hours)
       npm run admin -- sign-in-link <email>             a new one-time sign-in link for an existing user`;

/** A clear one-line refusal, exit code 2 (usage) or 1 (the operation failed). */
class CliError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}

const table = (rows: string[][]) => {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n') + '\n';
};

/**
 * The pools' derivation (HD keys through ethers) and Redis are loaded by the commands that use them
 * only, so the others start without them (issue 38: admin took about 8 s under load).
 */
function derivation(): typeof import('../core/pool/hd') & typeof import('../core/pool/import') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return { ...(require('../core/pool/hd') as typeof import('../core/pool/hd')), ...(require('../core/pool/import') as typeof import('../core/pool/import')) };
}

/** A refused --count, or an extended key that is not one, before anything is created. */
function checkDerivationArgs(xpub: string | undefined, count: number, nothing: string): void {
  const { assertNoSecrets, MAX_DERIVE_COUNT, XpubDeriver } = derivation();
  if (!Number.isInteger(count) || count < 1 || count > MAX_DERIVE_COUNT) throw new CliError(`--count must be an integer from 1 to ${MAX_DERIVE_COUNT}`, 2);
  if (xpub === undefined) return;
  // A private key is refused without being echoed.
  assertNoSecrets({ masterPublicKey: xpub });
  try {
    new XpubDeriver(xpub);
  } catch {
    throw new CliError(`--derive-from must be an extended public key (xpub…); ${nothing}`, 2);
  }
}

/** Derives `count` EVM and Tron addresses after the ones the organization has from this key. */
async function derivePools(handle: DbHandle, organizationId: string, xpub: string, count: number, out: (text: string) => void): Promise<void> {
  const { derivePoolAddresses, nextDerivationIndex } = derivation();
  for (const protocol of ['evm', 'tron'] as const) {
    const start = await nextDerivationIndex(handle.db, { organizationId, protocol, masterPublicKey: xpub });
    const result = await derivePoolAddresses(handle.db, { organizationId, protocol, masterPublicKey: xpub, start, count, now: new Date() });
    out(`${protocol} pool: ${result.imported} addresses derived (0/${start} … 0/${start + count - 1})${result.errors.length ? `, ${result.errors.length} skipped (held already)` : ''}\n`);
  }
}

/** Operator commands, run with the database's own credentials (never an organization's key). */
async function run(argv: string[], db: () => Promise<DbHandle>): Promise<void> {
  const { values, positionals } = (() => {
    try {
      return parseArgs({
        args: argv,
        allowPositionals: true,
        options: { 'derive-from': { type: 'string' }, count: { type: 'string' }, role: { type: 'string' }, name: { type: 'string' }, org: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      });
    } catch (err) {
      throw new CliError(`${(err as Error).message}\n${USAGE}`, 2);
    }
  })();
  const [command, ...args] = positionals;
  const out = (text: string) => process.stdout.write(text);
  if (values.help || !command) throw new CliError(USAGE, command ? 0 : 2);

  switch (command) {
    case 'create-org': {
      const name = args.join(' ').trim().slice(0, 200);
      if (!name) throw new CliError(`create-org needs a name\n${USAGE}`, 2);
      const xpub = values['derive-from'];
      const count = values.count === undefined ? 100 : Number(values.count);
      if (xpub !== undefined || values.count !== undefined) checkDerivationArgs(xpub, count, 'nothing was created');
      const handle = await db();
      const { organizationId, ownerKey } = await createOrganization(handle.db, name);
      out(`organization: ${organizationId}\nowner key (shown once): ${ownerKey.key}\n`);
      if (xpub !== undefined) {
        await derivePools(handle, organizationId, xpub, count, out);
      } else {
        // Its first order would get 503 NO_AVAILABLE_ADDRESSES: say so now, and how to fill it.
        out(
          `address pools: empty (orders and deposit references answer 503 NO_AVAILABLE_ADDRESSES until a pool has addresses). Fill them:\n` +
            `  npm run admin -- fill-pool ${organizationId} --derive-from <account-level xpub, e.g. of m/44'/60'/0'>   (EVM and Tron pools at once), or with this organization's key:\n` +
            `  POST /api/v1/address-pool/derive {"protocol":"evm","masterPublicKey":"xpub…","count":1000}   (also "tron": the same secp256k1 keys)\n` +
            `  POST /api/v1/address-pool/import  (a CSV of addresses you hold the keys of)\n`,
        );
      }
      return;
    }
    case 'fill-pool': {
      const [organizationId] = args;
      const xpub = values['derive-from'];
      if (!organizationId || xpub === undefined) throw new CliError(`fill-pool needs an organization id and --derive-from\n${USAGE}`, 2);
      const count = values.count === undefined ? 100 : Number(values.count);
      checkDerivationArgs(xpub, count, 'nothing was derived');
      const handle = await db();
      await operatorCallerFor(handle.db, organizationId); // an unknown organization is refused
      await derivePools(handle, organizationId, xpub, count, out);
      return;
    }
    case 'list-orgs': {
      const orgs = await listAllOrganizations((await db()).db);
      out(orgs.length === 0 ? 'no organizations\n' : table([['ID', 'NAME', 'CREATED'], ...orgs.map((o) => [o.id, o.name, o.createdAt.toISOString()])]));
      return;
    }
    case 'create-key': {
      const [organizationId] = args;
      const role = values.role as Role | undefined;
      if (!organizationId || !role) throw new CliError(`create-key needs an organization id and --role\n${USAGE}`, 2);
      if (!ROLES.includes(role)) throw new CliError(`--role must be one of ${ROLES.join(', ')}`, 2);
      const handle = await db();
      const caller = await operatorCallerFor(handle.db, organizationId);
      const key = await createApiKey(handle.db, caller, organizationId, { name: values.name?.trim().slice(0, 100) || `${role} key`, role });
      out(`key id: ${key.id}\nrole: ${key.role}\nkey (shown once): ${key.key}\n`);
      return;
    }
    case 'list-keys': {
      const [organizationId] = args;
      if (!organizationId) throw new CliError(`list-keys needs an organization id\n${USAGE}`, 2);
      const handle = await db();
      const keys = await listApiKeys(handle.db, await operatorCallerFor(handle.db, organizationId), organizationId);
      out(
        table([
          ['ID', 'ROLE', 'NAME', 'PREFIX', 'CREATED', 'REVOKED'],
          ...keys.map((k) => [k.id, k.role, k.name, `${k.keyPrefix}…`, k.createdAt.toISOString(), k.revokedAt ? k.revokedAt.toISOString() : '-']),
        ]),
      );
      return;
    }
    case 'revoke-key': {
      const [keyId] = args;
      if (!keyId) throw new CliError(`revoke-key needs a key id\n${USAGE}`, 2);
      const handle = await db();
      const organizationId = await organizationOfApiKey(handle.db, keyId);
      const view = await revokeApiKey(handle.db, await operatorCallerFor(handle.db, organizationId), keyId);
      await announceRevocation(keyId);
      out(`revoked: ${view.id} (${view.role}, ${view.name}) of ${view.organizationId} at ${view.revokedAt?.toISOString()}\n`);
      return;
    }
    case 'create-user': {
      const [email] = args;
      const role = values.role as Role | undefined;
      if (!email || !values.org || !role) throw new CliError(`create-user needs an e-mail, --org and --role\n${USAGE}`, 2);
      if (!ROLES.includes(role)) throw new CliError(`--role must be one of ${ROLES.join(', ')}`, 2);
      const handle = await db();
      const { user, token } = await operatorSignInLink(handle.db, { organizationId: values.org, email, role, now: new Date() });
      out(`user: ${user.id} (${user.email}), ${role} of ${values.org}\none-time sign-in link (24 hours): ${loadConfig().publicBaseUrl}/dashboard/link/${token}\n`);
      return;
    }
    case 'sign-in-link': {
      const [email] = args;
      if (!email) throw new CliError(`sign-in-link needs an e-mail\n${USAGE}`, 2);
      const handle = await db();
      const user = await findUserByEmail(handle.db, email);
      if (!user) throw new CliError(`no user with the e-mail ${email}`);
      const token = await issueSignInLink(handle.db, user.id, 'sign-in', new Date());
      out(`one-time sign-in link (24 hours): ${loadConfig().publicBaseUrl}/dashboard/link/${token}\n`);
      return;
    }
    default:
      throw new CliError(`unknown command "${command}"\n${USAGE}`, 2);
  }
}

/** API instances remember keys they have seen: tell them (api/key-cache.ts) as the API itself does. */
async function announceRevocation(keyId: string): Promise<void> {
  const config = loadConfig();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createProducerRedis, waitForRedis } = require('../core/platform/redis') as typeof import('../core/platform/redis');
  const redis = createProducerRedis(config.redisUrl);
  redis.on('error', () => {});
  try {
    await waitForRedis(redis, 3000);
    await redis.publish(`${config.redisPrefix}:api-keys:revoked`, keyId);
  } catch {
    process.stderr.write('warning: Redis unreachable, running API instances forget the key within 10 seconds\n');
  } finally {
    redis.disconnect();
  }
}

runMain(async () => {
  let handle: DbHandle | null = null;
  const db = async () => {
    if (!handle) {
      const config = loadConfig();
      await runMigrations(config.databaseUrl);
      handle = createDb(config.databaseUrl, { max: 1 });
    }
    return handle;
  };
  try {
    await run(process.argv.slice(2), db);
  } catch (err) {
    if (err instanceof CliError) {
      (err.exitCode === 0 ? process.stdout : process.stderr).write(`${err.message}\n`);
      process.exitCode = err.exitCode;
    } else if (err instanceof AppError) {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = 1;
    } else throw err;
  } finally {
    await (handle as DbHandle | null)?.close();
  }
});
