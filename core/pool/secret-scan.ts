import { LangEn } from 'ethers';
import { base58Bytes, base58CheckPayload } from './address-formats';

/**
 * Finds input that looks like private key material (design.md §7: private keys are never accepted,
 * stored or logged). The finding names the kind and the line, never the text itself.
 */
export interface SecretFinding {
  kind: string;
  /** 1-based line of the text it was found in. */
  line: number;
}

const HEX_KEY_RE = /^(0x)?[0-9a-fA-F]{64}$/;
/** BIP32 extended private keys: xprv, tprv and the SLIP-132 variants (yprv, zprv, Yprv, …). */
const EXTENDED_PRIVATE_RE = /^[a-zA-Z]prv[1-9A-HJ-NP-Za-km-z]{100,}$/;
const WIF_RE = /^[5KL9c][1-9A-HJ-NP-Za-km-z]{50,51}$/;
const SOLANA_SECRET_RE = /^[1-9A-HJ-NP-Za-km-z]{80,90}$/;
/** A Solana keypair file: a JSON array of 64 byte values. */
const BYTE_ARRAY_RE = /\[\s*(?:\d{1,3}\s*,\s*){31,}\d{1,3}\s*\]/;
/** Token separators: whitespace, CSV and JSON punctuation. */
const SEPARATORS = /[\s,;"'|[\]{}()=:]+/;

let bip39: Set<string> | null = null;
function bip39Words(): Set<string> {
  if (!bip39) {
    const list = LangEn.wordlist();
    bip39 = new Set(Array.from({ length: 2048 }, (_, i) => list.getWord(i)));
  }
  return bip39;
}

const MNEMONIC_MIN_WORDS = 12;

function tokenKind(token: string): string | null {
  if (HEX_KEY_RE.test(token)) return 'a 64-hex-character private key';
  if (EXTENDED_PRIVATE_RE.test(token)) return 'an extended private key (xprv/tprv)';
  if (WIF_RE.test(token)) {
    const payload = base58CheckPayload(token);
    if (payload && (payload[0] === 0x80 || payload[0] === 0xef) && (payload.length === 33 || payload.length === 34)) {
      return 'a WIF private key';
    }
  }
  if (SOLANA_SECRET_RE.test(token) && base58Bytes(token)?.length === 64) return 'a Solana secret key (64 bytes)';
  return null;
}

/**
 * Scans a text (CSV or a single value) for private keys and mnemonics. Returns the first finding
 * (its kind and 1-based line) or null.
 */
export function findSecretLikeInput(text: string): SecretFinding | null {
  const words = bip39Words();
  const lines = text.split(/\r\n|\n|\r/);
  let run = 0;
  let runStartLine = 1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const lineNo = i + 1;
    if (line.includes('[') && BYTE_ARRAY_RE.test(line)) return { kind: 'a secret key as a byte array', line: lineNo };
    for (const token of line.split(SEPARATORS)) {
      if (token === '') continue;
      const kind = tokenKind(token);
      if (kind) return { kind, line: lineNo };
      // Mnemonics: 12 or more consecutive BIP39 words, on one line or across lines.
      if (words.has(token.toLowerCase())) {
        if (run === 0) runStartLine = lineNo;
        run++;
        if (run >= MNEMONIC_MIN_WORDS) return { kind: 'a mnemonic (BIP39 seed phrase)', line: runStartLine };
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
