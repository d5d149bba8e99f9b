import fs from 'node:fs';
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import Ajv, { type ErrorObject } from 'ajv';
import { isMap, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { ConfigError } from '../platform/config';
import { StringEnum } from '../platform/wire-schema';
import { checkAddress } from './addresses';
import { CURRENCY_SYMBOL, type ChainDefinition, type FinalityRule, type TokenInfo } from './chain';

/**
 * The operator's chains file (CHAINS_FILE, YAML or JSON): EVM chains and tokens added without code,
 * built-in chains or tokens turned off. Read and checked once, when a process builds its registry at
 * start-up; every problem names the file's line and the field, and all are reported together.
 * The registry (./registry.ts) applies the result; this module only reads and checks.
 */

/** Field options of the file's schema: what a value must be, for the problem's text. */
interface FieldOptions {
  mustBe?: string;
}

const CHAIN_ID = Type.String({ pattern: '^[a-z0-9]+(-[a-z0-9]+)*$', maxLength: 64, mustBe: 'lowercase letters, digits and dashes, e.g. bsc-mainnet' });
// Not USD: that is the pricing currency of USD orders (core/chains/chain.ts), never a token.
const SYMBOL = Type.String({ pattern: `^(?!USD$)${CURRENCY_SYMBOL.source.slice(1)}`, mustBe: 'a token symbol of 2 to 12 uppercase letters or digits other than USD, e.g. EURC' });
const PEG = Type.String({ pattern: '^[A-Z]{3}$', mustBe: 'a fiat currency code of 3 uppercase letters, e.g. USD or EUR' });
const DECIMALS = Type.Integer({ minimum: 0, maximum: 36 });
const ADDRESS = Type.String({ minLength: 1 });

const FILE_SCHEMA = Type.Object(
  {
    chains: Type.Optional(
      Type.Array(
        Type.Object(
          {
            chainId: CHAIN_ID,
            protocol: Type.Optional(StringEnum(['evm'])),
            name: Type.String({ minLength: 1, maxLength: 100 }),
            network: StringEnum(['local', 'testnet', 'mainnet']),
            evmChainId: Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }),
            rpcUrls: Type.Array(Type.String({ pattern: '^https?://\\S+$', mustBe: 'an http(s) URL' }), { minItems: 1 }),
            blockTimeMs: Type.Integer({ minimum: 1, maximum: 600_000 }),
            orderConfirmations: Type.Integer({ minimum: 1, maximum: 10_000 }),
            depositConfirmations: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
            finality: Type.Object(
              { kind: StringEnum(['depth', 'finalized-tag']), blocks: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })) },
              { additionalProperties: false },
            ),
            // A key that is not a symbol is an additional property: named by describe().
            tokens: Type.Record(SYMBOL, Type.Object({ address: ADDRESS, decimals: DECIMALS, peg: Type.Optional(PEG) }, { additionalProperties: false }), { additionalProperties: false }),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    tokens: Type.Optional(
      Type.Array(Type.Object({ chainId: CHAIN_ID, currency: SYMBOL, address: ADDRESS, decimals: DECIMALS, peg: Type.Optional(PEG) }, { additionalProperties: false })),
    ),
    disable: Type.Optional(Type.Array(Type.Object({ chainId: CHAIN_ID, currency: Type.Optional(SYMBOL) }, { additionalProperties: false }))),
  },
  { additionalProperties: false },
);
type FileContent = Static<typeof FILE_SCHEMA>;

/** What the file says, checked: chains to add, tokens to add to any chain, chains and tokens turned off. */
export interface ChainsFile {
  path: string;
  chains: ChainDefinition[];
  tokens: { chainId: string; token: TokenInfo }[];
  disabledChains: string[];
  disabledTokens: { chainId: string; currency: string }[];
  /** The line that states a chain (`chainId`) or a token (`chainId|currency`), for later messages (start-up decimals check). */
  lines: Record<string, number>;
}

/** Reads and checks the chains file against the built-in definitions; a problem anywhere is a ConfigError listing every one. */
export function readChainsFile(filePath: string, builtIns: readonly ChainDefinition[]): ChainsFile {
  let text: string;
  try {
    text = fs.readFileSync(filePath, 'utf8');
  } catch (err) {
    throw new ConfigError([`CHAINS_FILE ${filePath} cannot be read: ${(err as Error).message}`]);
  }
  return parseChainsFile(filePath, text, builtIns);
}

/** The checks of readChainsFile on a file's text (`filePath` names it in messages). */
export function parseChainsFile(filePath: string, text: string, builtIns: readonly ChainDefinition[]): ChainsFile {
  const lineCounter = new LineCounter();
  // YAML 1.2 reads JSON too, so one parser gives lines for both forms.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const at = (line: number, field: string | null, what: string) => `CHAINS_FILE ${filePath} line ${line}${field ? ` (${field})` : ''}: ${what}`;
  if (doc.errors.length > 0) {
    throw new ConfigError(doc.errors.map((e) => at(lineCounter.linePos(e.pos[0]).line, null, `not valid YAML or JSON: ${e.message.split('\n')[0]}`)));
  }
  const content = doc.toJS() as unknown;
  if (content === null || content === undefined) return { path: filePath, chains: [], tokens: [], disabledChains: [], disabledTokens: [], lines: {} };
  const lineOf = (segments: (string | number)[]) => lineAt(doc, lineCounter, segments);

  const problems: string[] = [];
  const validate = fileValidator();
  if (!validate(content)) {
    for (const error of relevantErrors(validate.errors ?? [])) {
      const segments = pathSegments(error.instancePath);
      const { field, line, what } = describe(error, segments, lineOf);
      problems.push(at(line, field, what));
    }
    throw new ConfigError(problems);
  }
  const file = content as FileContent;

  const builtInIds = new Set(builtIns.map((d) => d.chainId));
  const chains: ChainDefinition[] = [];
  const lines: Record<string, number> = {};
  const known = new Map<string, ChainDefinition>(builtIns.map((d) => [d.chainId, d]));
  for (const [i, c] of (file.chains ?? []).entries()) {
    const field = (name: string) => `chains[${i}].${name}`;
    const line = (...rest: (string | number)[]) => lineOf(['chains', i, ...rest]);
    if (builtInIds.has(c.chainId)) {
      problems.push(at(line('chainId'), field('chainId'), `"${c.chainId}" is a built-in chain: add tokens to it under tokens:, or turn it off under disable:`));
      continue;
    }
    if (known.has(c.chainId)) {
      problems.push(at(line('chainId'), field('chainId'), `"${c.chainId}" is defined twice in the file`));
      continue;
    }
    const twin = [...known.values()].find((d) => d.network === c.network && d.evmChainId === c.evmChainId);
    if (twin) problems.push(at(line('evmChainId'), field('evmChainId'), `${c.evmChainId} is already the evmChainId of ${twin.chainId} on network ${c.network}`));
    let finality: FinalityRule = { kind: 'finalized-tag' };
    if (c.finality.kind === 'depth') {
      if (c.finality.blocks === undefined) problems.push(at(line('finality'), field('finality'), 'kind depth needs blocks: how many blocks on top make a block final'));
      finality = { kind: 'depth', blocks: c.finality.blocks ?? 1 };
    } else if (c.finality.blocks !== undefined) {
      problems.push(at(line('finality', 'blocks'), field('finality.blocks'), 'blocks belongs to kind depth only (finalized-tag asks the node for its finalized block)'));
    }
    const tokens: Record<string, TokenInfo> = {};
    for (const [symbol, t] of Object.entries(c.tokens)) {
      const checked = checkAddress('evm', t.address);
      if (!checked.ok) problems.push(at(line('tokens', symbol, 'address'), field(`tokens.${symbol}.address`), `${checked.error} (got "${t.address}")`));
      tokens[symbol] = { currency: symbol, address: checked.ok ? checked.address : t.address, decimals: t.decimals, ...(t.peg ? { peg: t.peg } : {}) };
      lines[`${c.chainId}|${symbol}`] = line('tokens', symbol);
    }
    const def: ChainDefinition = {
      chainId: c.chainId,
      protocol: 'evm',
      network: c.network,
      name: c.name,
      evmChainId: c.evmChainId,
      rpcUrls: c.rpcUrls,
      blockTimeMs: c.blockTimeMs,
      orderConfirmations: c.orderConfirmations,
      depositConfirmations: c.depositConfirmations ?? c.orderConfirmations,
      finality,
      tokens,
    };
    lines[c.chainId] = line();
    known.set(c.chainId, def);
    chains.push(def);
  }

  const tokens: ChainsFile['tokens'] = [];
  for (const [i, t] of (file.tokens ?? []).entries()) {
    const field = (name: string) => `tokens[${i}].${name}`;
    const line = (name?: string) => lineOf(name ? ['tokens', i, name] : ['tokens', i]);
    const chain = known.get(t.chainId);
    if (!chain) {
      problems.push(at(line('chainId'), field('chainId'), `no chain "${t.chainId}" (built-in or in this file)`));
      continue;
    }
    if (chain.tokens[t.currency] || tokens.some((o) => o.chainId === t.chainId && o.token.currency === t.currency)) {
      problems.push(at(line('currency'), field('currency'), `${t.chainId} already has a ${t.currency} token`));
      continue;
    }
    const checked = checkAddress(chain.protocol, t.address);
    if (!checked.ok) problems.push(at(line('address'), field('address'), `${checked.error} (got "${t.address}")`));
    tokens.push({ chainId: t.chainId, token: { currency: t.currency, address: checked.ok ? checked.address : t.address, decimals: t.decimals, ...(t.peg ? { peg: t.peg } : {}) } });
    lines[`${t.chainId}|${t.currency}`] = line();
  }

  const disabledChains: string[] = [];
  const disabledTokens: ChainsFile['disabledTokens'] = [];
  for (const [i, d] of (file.disable ?? []).entries()) {
    const chain = known.get(d.chainId);
    if (!chain) {
      problems.push(at(lineOf(['disable', i, 'chainId']), `disable[${i}].chainId`, `no chain "${d.chainId}" (built-in or in this file)`));
      continue;
    }
    if (d.currency === undefined) disabledChains.push(d.chainId);
    else if (chain.tokens[d.currency] || tokens.some((o) => o.chainId === d.chainId && o.token.currency === d.currency)) disabledTokens.push({ chainId: d.chainId, currency: d.currency });
    else problems.push(at(lineOf(['disable', i, 'currency']), `disable[${i}].currency`, `${d.chainId} has no ${d.currency} token`));
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return { path: filePath, chains, tokens, disabledChains, disabledTokens, lines };
}

/** The file's validator: compiled where it is used, once per start-up (no module-level instance). */
const fileValidator = () => new Ajv({ allErrors: true, strict: false, verbose: true }).compile(FILE_SCHEMA);

/** ajv's errors without the echoes a union or a record adds (one problem per mistake). */
function relevantErrors(errors: ErrorObject[]): ErrorObject[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    if (e.keyword === 'if' || e.keyword === 'anyOf') return false;
    const key = `${e.instancePath}|${e.keyword}|${JSON.stringify(e.params)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** `/chains/0/tokens/USDT` → ['chains', 0, 'tokens', 'USDT'] (JSON Pointer, unescaped). */
function pathSegments(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

/** `chains[0].tokens.USDT` from path segments. */
function fieldName(segments: (string | number)[]): string {
  return segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
}

/** The problem of one ajv error: the field it is about, its line and what is wrong, in words. */
function describe(error: ErrorObject, segments: (string | number)[], lineOf: (s: (string | number)[]) => number): { field: string | null; line: number; what: string } {
  const schema = error.parentSchema as (TSchema & FieldOptions) | undefined;
  const got = JSON.stringify(error.data);
  const self = { field: fieldName(segments) || null, line: lineOf(segments) };
  switch (error.keyword) {
    case 'required': {
      const missing = (error.params as { missingProperty: string }).missingProperty;
      return { ...self, what: `missing field "${missing}"` };
    }
    case 'additionalProperties': {
      const extra = (error.params as { additionalProperty: string }).additionalProperty;
      const inTokens = segments[segments.length - 1] === 'tokens' && segments[0] === 'chains';
      return {
        field: fieldName([...segments, extra]),
        line: lineOf([...segments, extra]),
        what: inTokens ? `"${extra}" is not a token symbol (2 to 12 uppercase letters or digits, not USD)` : `unknown field "${extra}"`,
      };
    }
    case 'type':
      return { ...self, what: `must be ${(error.params as { type: string }).type === 'integer' ? 'a whole number' : `of type ${(error.params as { type: string }).type}`} (got ${got})` };
    case 'enum':
      return { ...self, what: `must be one of ${(error.params as { allowedValues: string[] }).allowedValues.join(', ')} (got ${got})` };
    case 'minimum':
    case 'maximum':
      return { ...self, what: `must be from ${schema?.minimum} to ${schema?.maximum} (got ${got})` };
    case 'pattern':
      return { ...self, what: `must be ${schema?.mustBe ?? `of the form ${(error.params as { pattern: string }).pattern}`} (got ${got})` };
    case 'minItems':
      return { ...self, what: 'must list at least one entry' };
    case 'minLength':
      return { ...self, what: 'must not be empty' };
    default:
      return { ...self, what: error.message ?? 'is not valid' };
  }
}

/** The 1-based line of the node at `segments`, else of its nearest ancestor that exists (a missing field: its object's line). */
function lineAt(doc: Document, lineCounter: LineCounter, segments: (string | number)[]): number {
  for (let n = segments.length; n >= 0; n--) {
    const path = segments.slice(0, n);
    // A map's key: the key's own line (a value may start on the next line).
    const parent = n > 0 ? doc.getIn(path.slice(0, -1), true) : null;
    if (isMap(parent)) {
      const pair = parent.items.find((p) => isScalar(p.key) && String(p.key.value) === String(path[path.length - 1]));
      const key = pair?.key as { range?: [number, number, number] } | undefined;
      if (key?.range) return lineCounter.linePos(key.range[0]).line;
    }
    const node = (n === 0 ? doc.contents : doc.getIn(path, true)) as { range?: [number, number, number] } | null | undefined;
    if (node?.range) return lineCounter.linePos(node.range[0]).line;
  }
  return 1;
}
