import { and, eq, inArray, sql, type Placeholder, type SQL } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client';
import { organizationConfig } from '../../db/schema';
import { isEmailAddress } from '../platform/config';
import { AppError, notFound, validationError } from '../platform/errors';
import { addAlertRecipients, recipientStates, type RecipientState } from './alert-recipients';

/**
 * Organization configuration keys (the spec's "Configuration keys that appear" plus ours).
 * Every key is declared here once with its type, bounds and default; unknown keys are 404.
 */
export type ConfigValue = number | string | null;

interface KeyBase {
  key: string;
  description: string;
}
interface IntegerKey extends KeyBase {
  type: 'integer';
  min: number;
  max: number;
  default: number | null;
}
interface UrlKey extends KeyBase {
  type: 'url';
  default: null;
}
/** A count (integer) or a percentage (string "N%"), e.g. the low-pool alert thresholds. */
interface ThresholdKey extends KeyBase {
  type: 'threshold';
  default: number | string;
}
/** A comma-separated list of e-mail addresses (stored normalised: trimmed, lower-case, no duplicates). */
interface EmailListKey extends KeyBase {
  type: 'emails';
  default: null;
}
/**
 * A decimal string (an amount in token units, a percentage), stored as that string normalised (no
 * leading zeros, no trailing fractional zeros). A key whose default is null may be set to null
 * (off); `min` is exclusive when `aboveMin` (a positive amount).
 */
interface DecimalKey extends KeyBase {
  type: 'decimal';
  min: string;
  aboveMin?: boolean;
  /** Inclusive upper bound. */
  max: string;
  /** At most this many fractional digits. */
  maxDecimals: number;
  default: string | null;
}
/** A comma-separated list of routes `CURRENCY@chainId` (stored normalised: trimmed, no duplicates). */
interface RouteListKey extends KeyBase {
  type: 'routes';
  default: null;
}
export type ConfigKeyDefinition = IntegerKey | UrlKey | ThresholdKey | EmailListKey | DecimalKey | RouteListKey;

/** The routes a USD order offers when its creator names none (core/orders/routes.ts); null: every one the deployment has. */
export const USD_ROUTES_KEY = 'usd_routes';
const ROUTE_ENTRY = /^[A-Z0-9]{2,12}@[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_ROUTES = 100;

/** The largest amount of one order, in token units (checked by the creation statements, core/orders/orders.ts). */
export const MAX_ORDER_AMOUNT_KEY = 'max_order_amount';

/** At most this many addresses in an e-mail list key. */
export const MAX_ALERT_EMAILS = 10;

/** Low-pool alert threshold per protocol: an address count or a percentage of the pool ("10%"). */
const lowThresholdKey = (protocol: string): ThresholdKey => ({
  key: `address_pool.low_threshold.${protocol}`,
  type: 'threshold',
  default: '10%',
  description: `alert.address_pool_low fires when available ${protocol} addresses fall below this: a count (e.g. 100) or a percentage of the ${protocol} pool (e.g. "10%"); 0 turns the alert off.`,
});

export const CONFIG_KEYS: ConfigKeyDefinition[] = [
  {
    key: 'address_pool.cooldown_minutes',
    type: 'integer',
    min: 0,
    max: 10_080,
    default: 30,
    description: 'Minutes an address released by a finished order waits before it can be allocated again.',
  },
  {
    key: 'address_pool.unbind_cooldown_minutes',
    type: 'integer',
    min: 0,
    max: 525_600,
    default: null,
    description:
      'Override: minutes an address released by unbinding a deposit reference waits before reuse. Unset (null): address_pool.cooldown_minutes, as the spec says. Payers keep "permanent" addresses, so a longer value is safer.',
  },
  {
    key: 'payment_window_minutes',
    type: 'integer',
    min: 1,
    max: 10_080,
    default: 10,
    description: 'Default payment window of new orders, in minutes.',
  },
  {
    key: MAX_ORDER_AMOUNT_KEY,
    type: 'decimal',
    min: '0',
    aboveMin: true,
    max: '1000000000000',
    maxDecimals: 18,
    default: '1000000',
    description:
      'Largest amount one order may have, in token units (a decimal string, e.g. "50000"; the same number for every token). A larger amount is refused with INVALID_AMOUNT: it is usually base units sent by mistake ("10000000" meant as 10 USDT).',
  },
  {
    key: 'confirmations.orders',
    type: 'integer',
    min: 1,
    max: 1000,
    default: null,
    description:
      "Confirmations a payment needs before it completes an order. Raises the chain's value (ethereum-local 3, Sepolia 3, …); a value below the chain's is ignored. Applies to orders created afterwards.",
  },
  {
    key: 'confirmations.deposits',
    type: 'integer',
    min: 1,
    max: 1000,
    default: null,
    description:
      "Confirmations a deposit needs before it is confirmed. Raises the chain's value (3 to 10 by chain); a value below the chain's is ignored. Applies to deposits detected afterwards.",
  },
  {
    key: 'default_order_success_url',
    type: 'url',
    default: null,
    description: 'Where payers are sent after a completed order that has no successUrl.',
  },
  {
    key: 'default_order_cancel_url',
    type: 'url',
    default: null,
    description: 'Where payers are sent after an expired order that has no cancelUrl.',
  },
  lowThresholdKey('evm'),
  lowThresholdKey('tron'),
  lowThresholdKey('solana'),
  {
    key: 'alerts.email',
    type: 'emails',
    default: null,
    description: `Comma-separated e-mail addresses (at most ${MAX_ALERT_EMAILS}) that receive alert.* events by e-mail as well as by webhook, when the deployment has SMTP_URL set; null or "" turns it off. Each new address first gets one confirmation e-mail and receives alerts only once it confirmed through its link (recipients shows which did).`,
  },
  {
    key: 'underpayment_tolerance.percent',
    type: 'decimal',
    min: '0',
    max: '100',
    maxDecimals: 4,
    default: null,
    description:
      'Off by default (null). A percentage of the order amount, e.g. "0.5": an order whose confirmed payments fall short by at most this much completes, marked underpaid (an exchange that keeps its withdrawal fee). With underpayment_tolerance.amount too, the larger allowance applies. Read when the order is decided.',
  },
  {
    key: 'underpayment_tolerance.amount',
    type: 'decimal',
    min: '0',
    max: '1000000000',
    maxDecimals: 18,
    default: null,
    description:
      'Off by default (null). An amount in token units of the order\'s own token, e.g. "0.05": an order whose confirmed payments fall short by at most this much completes, marked underpaid. With underpayment_tolerance.percent too, the larger allowance applies. Read when the order is decided.',
  },
  {
    key: 'late_payment_window_minutes',
    type: 'integer',
    min: 0,
    // At most a day: a late payment is found through the expired order being its previous holder,
    // which the evidence names for a day after the order ended (CANDIDATE_PREVIOUS_WINDOW_MS).
    max: 1_440,
    default: 0,
    description:
      'Off by default (0). Minutes after an order\'s grace during which payments to the expired order\'s address are recorded against it as paidLate (unattributed with reason paid_late: visible, never credited automatically; the merchant attributes or refunds them), and the address is not handed out again until the window ends (on Solana in addresses scan mode it stays watched). At most 1440 (a day). Applies to orders that expire afterwards.',
  },
  {
    key: USD_ROUTES_KEY,
    type: 'routes',
    default: null,
    description:
      'Off by default (null: every USD stablecoin on every enabled chain). The routes a USD-priced order offers its payer when it names none: comma-separated token@chain pairs, e.g. "USDT@tron-mainnet,USDC@base-mainnet,USDC@solana-mainnet". Pairs this deployment does not offer are skipped.',
  },
];

const BY_KEY: ReadonlyMap<string, ConfigKeyDefinition> = new Map(CONFIG_KEYS.map((k) => [k.key, k]));

export function configKeyDefinition(key: string): ConfigKeyDefinition {
  const def = BY_KEY.get(key);
  if (!def) throw notFound(`Configuration key "${key}"`);
  return def;
}

export function validateConfigValue(def: ConfigKeyDefinition, value: unknown): ConfigValue {
  if (def.type === 'integer') {
    const n = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < def.min || n > def.max) {
      throw validationError(`${def.key} must be an integer from ${def.min} to ${def.max}`, [
        { field: 'value', message: `must be an integer from ${def.min} to ${def.max}` },
      ]);
    }
    return n;
  }
  if (def.type === 'threshold') {
    if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 100_000_000) return value;
    if (typeof value === 'string' && /^\d+$/.test(value.trim()) && Number(value) <= 100_000_000) return Number(value);
    if (typeof value === 'string' && /^(100|[0-9]{1,2})(\.[0-9]{1,2})?%$/.test(value.trim()) && parseFloat(value) <= 100) return value.trim();
    throw validationError(`${def.key} must be a count (integer ≥ 0) or a percentage like "10%"`, [
      { field: 'value', message: 'must be an integer count or a percentage string like "10%"' },
    ]);
  }
  if (def.type === 'emails') return validateEmailList(def.key, value);
  if (def.type === 'routes') return validateRouteList(def.key, value);
  if (def.type === 'decimal') return validateDecimal(def, value);
  if (value === null || value === '') return null;
  if (typeof value !== 'string' || !isHttpUrl(value)) {
    throw validationError(`${def.key} must be an absolute http(s) URL`, [{ field: 'value', message: 'must be an absolute http(s) URL' }]);
  }
  return value;
}

function validateDecimal(def: DecimalKey, value: unknown): string | null {
  if (def.default === null && (value === null || value === '')) return null;
  // A JSON integer is taken as its digits; a JSON fraction is refused (it may already have lost digits).
  const text = typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : typeof value === 'string' ? value.trim() : null;
  const shape = new RegExp(`^\\d+(\\.\\d{1,${def.maxDecimals}})?$`);
  const range = `${def.aboveMin ? 'above' : 'from'} ${def.min} ${def.aboveMin ? 'and at most' : 'to'} ${def.max}`;
  const message = `must be a decimal string ${range} with at most ${def.maxDecimals} decimals, e.g. "${def.aboveMin ? '2500.50' : '0.5'}"${def.default === null ? ', or null to turn it off' : ''}`;
  const wrong = () => validationError(`${def.key} ${message}`, [{ field: 'value', message }]);
  if (text === null || !shape.test(text)) throw wrong();
  const normalised = normaliseDecimal(text);
  const low = compareDecimals(normalised, def.min);
  if (low < 0 || (def.aboveMin && low === 0) || compareDecimals(normalised, def.max) > 0) throw wrong();
  return normalised;
}

/** "007.500" → "7.5", "0.0" → "0". */
function normaliseDecimal(text: string): string {
  const [whole, fraction = ''] = text.split('.');
  const w = whole.replace(/^0+(?=\d)/, '');
  const f = fraction.replace(/0+$/, '');
  return f ? `${w}.${f}` : w;
}

/** Compares two non-negative decimal strings exactly. */
function compareDecimals(a: string, b: string): number {
  const [aw, af = ''] = a.split('.');
  const [bw, bf = ''] = b.split('.');
  const width = Math.max(af.length, bf.length);
  const x = BigInt(aw + af.padEnd(width, '0'));
  const y = BigInt(bw + bf.padEnd(width, '0'));
  return x < y ? -1 : x > y ? 1 : 0;
}

function validateEmailList(key: string, value: unknown): string | null {
  if (value === null || (typeof value === 'string' && value.trim() === '')) return null;
  const problem = (message: string) => validationError(`${key} ${message}`, [{ field: 'value', message }]);
  if (typeof value !== 'string') throw problem('must be a comma-separated string of e-mail addresses');
  const addresses = [...new Set(value.split(',').map((a) => a.trim().toLowerCase()))];
  if (addresses.some((a) => a === '')) throw problem('has an empty entry (a stray comma?)');
  const bad = addresses.findIndex((a) => !isEmailAddress(a));
  if (bad >= 0) throw problem(`entry ${bad + 1} is not an e-mail address`);
  // Source routes (user%host@relay, host!user@relay) have a relay forward the mail to another
  // address than the one that was checked and confirmed.
  const routed = addresses.findIndex((a) => /[%!]/.test(a.slice(0, a.lastIndexOf('@'))));
  if (routed >= 0) throw problem(`entry ${routed + 1} is a source-routed address (% or ! before the @): give the final address`);
  if (addresses.length > MAX_ALERT_EMAILS) throw problem(`may hold at most ${MAX_ALERT_EMAILS} addresses`);
  return addresses.join(',');
}

function validateRouteList(key: string, value: unknown): string | null {
  if (value === null || (typeof value === 'string' && value.trim() === '')) return null;
  const problem = (message: string) => validationError(`${key} ${message}`, [{ field: 'value', message }]);
  if (typeof value !== 'string') throw problem('must be a comma-separated string of token@chain pairs, e.g. "USDT@tron-mainnet,USDC@base-mainnet"');
  const routes = [...new Set(value.split(',').map((r) => r.trim()))];
  const bad = routes.findIndex((r) => !ROUTE_ENTRY.test(r));
  if (bad >= 0) throw problem(`entry ${bad + 1} ("${routes[bad]}") is not a token@chain pair such as USDT@tron-mainnet`);
  if (routes.length > MAX_ROUTES) throw problem(`may hold at most ${MAX_ROUTES} routes`);
  return routes.join(',');
}

/** A stored route list (usd_routes) as pairs; null: the key is off. */
export function routeList(value: ConfigValue): { currency: string; chainId: string }[] | null {
  if (typeof value !== 'string' || value === '') return null;
  return value.split(',').map((entry) => {
    const [currency, chainId] = entry.split('@');
    return { currency, chainId };
  });
}

export function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && !!u.hostname && value.length <= 2048;
  } catch {
    return false;
  }
}

export interface ConfigEntry {
  key: string;
  value: ConfigValue;
  default: ConfigValue;
  isDefault: boolean;
  description: string;
  updatedAt: Date | null;
  /** alerts.email only: each address and whether it confirmed (alert e-mails go to confirmed ones only). */
  recipients?: RecipientState[];
}

/** The addresses of an alerts.email value. */
export function alertEmailList(value: ConfigValue): string[] {
  return typeof value === 'string' && value !== '' ? value.split(',') : [];
}

/** An entry with what the API shows beside its value (alerts.email: its recipients' confirmation). */
async function withRecipients(db: DbOrTx, organizationId: string, entry: ConfigEntry): Promise<ConfigEntry> {
  if (entry.key !== 'alerts.email') return entry;
  return { ...entry, recipients: await recipientStates(db, organizationId, alertEmailList(entry.value)) };
}

export async function listConfig(db: DbOrTx, organizationId: string): Promise<ConfigEntry[]> {
  const rows = await db.select().from(organizationConfig).where(eq(organizationConfig.organizationId, organizationId));
  const stored = new Map(rows.map((r) => [r.key, r]));
  return Promise.all(CONFIG_KEYS.map((def) => withRecipients(db, organizationId, toEntry(def, stored.get(def.key)))));
}

export async function getConfigEntry(db: DbOrTx, organizationId: string, key: string): Promise<ConfigEntry> {
  const def = configKeyDefinition(key);
  const [row] = await db
    .select()
    .from(organizationConfig)
    .where(and(eq(organizationConfig.organizationId, organizationId), eq(organizationConfig.key, key)));
  return withRecipients(db, organizationId, toEntry(def, row));
}

/**
 * An integer key's effective value as an SQL expression (its setting, else the declared default),
 * for statements that read configuration without a round trip of their own.
 */
export function integerConfigSql(organizationId: string | Placeholder, key: string): SQL {
  const def = configKeyDefinition(key);
  if (def.type !== 'integer') throw new Error(`Configuration key "${key}" is not an integer key`);
  return sql`coalesce((select (value #>> '{}')::int from organization_config where organization_id = ${organizationId} and key = ${key}), ${def.default}::int)`;
}

/** The effective values of some keys for an organization, in one query (its settings, else the defaults). */
export async function getConfigValues(db: DbOrTx, organizationId: string, keys: readonly string[]): Promise<Map<string, ConfigValue>> {
  const defs = keys.map(configKeyDefinition);
  const rows = await db
    .select({ key: organizationConfig.key, value: organizationConfig.value })
    .from(organizationConfig)
    .where(and(eq(organizationConfig.organizationId, organizationId), inArray(organizationConfig.key, [...keys])));
  const stored = new Map(rows.map((r) => [r.key, r.value as ConfigValue]));
  return new Map(defs.map((d) => [d.key, stored.has(d.key) ? stored.get(d.key)! : d.default]));
}

/** A decimal key's effective value as an SQL numeric expression (its setting, else the declared default). */
export function decimalConfigSql(organizationId: string | Placeholder, key: string): SQL {
  const def = configKeyDefinition(key);
  if (def.type !== 'decimal') throw new Error(`Configuration key "${key}" is not a decimal key`);
  return sql`coalesce((select (value #>> '{}')::numeric from organization_config where organization_id = ${organizationId} and key = ${key}), ${def.default}::numeric)`;
}

/** The effective value of a key for an organization (its setting, else the default). */
export async function getConfigValue<T extends ConfigValue = ConfigValue>(db: DbOrTx, organizationId: string, key: string): Promise<T> {
  return (await getConfigEntry(db, organizationId, key)).value as T;
}

export async function setConfigValue(db: DbOrTx, organizationId: string, key: string, value: unknown): Promise<ConfigEntry> {
  const def = configKeyDefinition(key);
  const checked = validateConfigValue(def, value);
  const [row] = await db
    .insert(organizationConfig)
    .values({ organizationId, key, value: checked as never, updatedAt: sql`now()` as never })
    .onConflictDoUpdate({
      target: [organizationConfig.organizationId, organizationConfig.key],
      set: { value: checked as never, updatedAt: sql`now()` },
    })
    .returning();
  if (!row) throw new AppError('INTERNAL_ERROR', 'Configuration was not saved');
  // New alert recipients start unconfirmed: the alert-email job sends each its confirmation e-mail.
  if (key === 'alerts.email') await addAlertRecipients(db, organizationId, alertEmailList(checked));
  return withRecipients(db, organizationId, toEntry(def, row));
}

/** Removes the organization's setting of a known key: its default applies again (idempotent). */
export async function resetConfigValue(db: DbOrTx, organizationId: string, key: string): Promise<ConfigEntry> {
  const def = configKeyDefinition(key);
  await db.delete(organizationConfig).where(and(eq(organizationConfig.organizationId, organizationId), eq(organizationConfig.key, key)));
  return withRecipients(db, organizationId, toEntry(def));
}

function toEntry(def: ConfigKeyDefinition, row?: typeof organizationConfig.$inferSelect): ConfigEntry {
  const value = row ? (row.value as ConfigValue) : def.default;
  return {
    key: def.key,
    value,
    default: def.default,
    isDefault: !row,
    description: def.description,
    updatedAt: row?.updatedAt ?? null,
  };
}
