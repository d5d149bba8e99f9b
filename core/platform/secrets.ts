import { createCipheriv, createDecipheriv, createHash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

/** SHA-256 hex: how API keys are stored. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Random bytes for the next 256 tokens of randomToken128, from the operating system's CSPRNG in
 * one call; each token takes its own 16 bytes once and they are never handed out again.
 * Process-wide, like the id generator's buffer (./ids.ts).
 */
const upcomingTokenBytes = Buffer.alloc(16 * 256);
let nextTokenByte = upcomingTokenBytes.length;

/** 128 random bits, base64url without padding (22 characters), the CSPRNG asked once per 256 of them (hot paths). */
export function randomToken128(): string {
  if (nextTokenByte === upcomingTokenBytes.length) {
    randomFillSync(upcomingTokenBytes);
    nextTokenByte = 0;
  }
  const token = upcomingTokenBytes.toString('base64url', nextTokenByte, nextTokenByte + 16);
  nextTokenByte += 16;
  return token;
}

/** AES-256-GCM; output is `v1.<iv>.<tag>.<ciphertext>` in base64url. */
export function encryptSecret(plaintext: string, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
}

export function decryptSecret(payload: string, key: Buffer): string {
  const [version, iv, tag, ct] = payload.split('.');
  if (version !== 'v1' || !iv || !tag || ct === undefined) throw new Error('Unrecognised secret ciphertext');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}
