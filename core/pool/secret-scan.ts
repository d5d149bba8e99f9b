import { LangEn, Mnemonic } from 'ethers';
import { base58Bytes, base58CheckPayload } from '../chains/base58';
import { validationError } from '../platform/errors';

/**
 * Finds input that looks like private key material (design.md §7: private keys are never accepted,
 * stored or logged). A finding names only the line and a kind — never any of the text: four letters
 * are enough to identify a BIP-39 word.
 */
export type SecretKind = 'possible private key' | 'possible seed phrase';

export interface SecretFinding {
  kind: SecretKind;
  /** 1-based line of the text it was found in. */
  line: number;
}

/** 63–66 hex characters, with or without a 0x/0X prefix: a private key (or one missing or gaining a digit). */
const HEX_KEY_RE = /^(0x)?[0-9a-f]{63,66}$/i;
/** BIP32 extended private keys: xprv, tprv and the SLIP-132 variants (yprv, zprv, Yprv, …). */
const EXTENDED_PRIVATE_RE = /^[a-zA-Z]prv[1-9A-HJ-NP-Za-km-z]{100,}$/;
const WIF_RE = /^[5KL9c][1-9A-HJ-NP-Za-km-z]{50,51}$/;
const SOLANA_SECRET_RE = /^[1-9A-HJ-NP-Za-km-z]{80,90}$/;
/** A Solana keypair file: a JSON array of 64 byte values. */
const BYTE_ARRAY_RE = /\[\s*(?:\d{1,3}\s*,\s*){31,}\d{1,3}\s*\]/;
/** Token separators: whitespace, CSV and JSON punctuation. */
const SEPARATORS = /[\s,;"'|[\]{}()=:]+/;
/**
 * Word separators for seed phrases: everything that is not a letter or a digit (hyphens, dots,
 * underscores, slashes …). Numbering ("1.", "2)", "#3", "1.word") is dropped by skipping pure numbers.
 */
const WORD_SEPARATORS = /[^A-Za-z0-9]+/;

/** The English BIP-39 word list. */
const BIP39_WORDS: ReadonlySet<string> = new Set(Array.from({ length: 2048 }, (_, i) => LangEn.wordlist().getWord(i)));

const MNEMONIC_MIN_WORDS = 12;

function isPrivateKeyToken(token: string): boolean {
  if (HEX_KEY_RE.test(token)) return true;
  if (EXTENDED_PRIVATE_RE.test(token)) return true;
  if (WIF_RE.test(token)) {
    const payload = base58CheckPayload(token);
    if (payload && (payload[0] === 0x80 || payload[0] === 0xef) && (payload.length === 33 || payload.length === 34)) return true;
  }
  return SOLANA_SECRET_RE.test(token) && base58Bytes(token)?.length === 64;
}

/**
 * Scans a text (CSV or a single value) for private keys and seed phrases. Returns the first
 * finding (its kind and 1-based line) or null. Seed phrases are caught however they are written:
 * any case, one word per line or several, numbered ("1. word", "1.word 2.word"), or joined by
 * hyphens or other punctuation: 12 or more BIP-39 words in a row, numbers between them ignored.
 */
export function findSecretLikeInput(text: string): SecretFinding | null {
  const words = BIP39_WORDS;
  const lines = text.split(/\r\n|\n|\r/);
  let run = 0;
  let runStartLine = 1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const lineNo = i + 1;
    if (line.includes('[') && BYTE_ARRAY_RE.test(line)) return { kind: 'possible private key', line: lineNo };
    for (const token of line.split(SEPARATORS)) {
      if (token !== '' && isPrivateKeyToken(token)) return { kind: 'possible private key', line: lineNo };
    }
    for (const word of line.split(WORD_SEPARATORS)) {
      if (word === '' || /^\d+$/.test(word)) continue;
      if (words.has(word.toLowerCase())) {
        if (run === 0) runStartLine = lineNo;
        run++;
        if (run >= MNEMONIC_MIN_WORDS) return { kind: 'possible seed phrase', line: runStartLine };
      } else {
        run = 0;
      }
    }
  }
  return null;
}

/** Scans several independent values (each its own "line 1"); the finding names the value. */
export function findSecretInValues(values: Record<string, string | undefined>): (SecretFinding & { field: string }) | null {
  for (const [field, value] of Object.entries(values)) {
    if (!value) continue;
    const found = findSecretLikeInput(value);
    if (found) return { ...found, field };
  }
  return null;
}

const MNEMONIC_LENGTHS: ReadonlySet<number> = new Set([12, 15, 18, 21, 24]);

/**
 * True when the text is a BIP-39 seed phrase with a valid checksum, however it is cased, numbered
 * or separated. Used on free-text fields (references, metadata) where a long run of ordinary words
 * may be legitimate but a checksummed phrase (1 in 16 or fewer by chance) is a wallet's secret.
 * A 64-hex value is not refused there: it may be a transaction hash.
 */
export function isChecksummedSeedPhrase(text: string): boolean {
  if (text.length < 12 * 3 + 11 || text.length > 24 * 9 + 24 * 4) return false;
  const words = text.split(WORD_SEPARATORS).filter((w) => w !== '' && !/^\d+$/.test(w)).map((w) => w.toLowerCase());
  if (!MNEMONIC_LENGTHS.has(words.length)) return false;
  const list = BIP39_WORDS;
  if (!words.every((w) => list.has(w))) return false;
  return Mnemonic.isValidMnemonic(words.join(' '));
}

/**
 * Refuses a merchant's free-text values that hold a checksummed seed phrase (orderReference,
 * depositReference, metadata values at any depth). The error names the field and the kind only.
 */
export function assertNoSeedPhrase(fields: Record<string, unknown>): void {
  for (const [field, value] of Object.entries(fields)) {
    const path = seedPhrasePath(value, field, 0);
    if (path) {
      throw validationError(`${path} looks like a seed phrase: wallet secrets are never accepted. Nothing was stored.`, [
        { field: path, kind: 'possible seed phrase', message: 'possible seed phrase' },
      ]);
    }
  }
}

function seedPhrasePath(value: unknown, path: string, depth: number): string | null {
  if (typeof value === 'string') return isChecksummedSeedPhrase(value) ? path : null;
  if (depth > 8 || value === null || typeof value !== 'object') return null;
  for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
    const found = seedPhrasePath(inner, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`, depth + 1);
    if (found) return found;
  }
  return null;
}
