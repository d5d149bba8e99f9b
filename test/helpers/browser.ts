import { mkdirSync } from 'node:fs';
import path from 'node:path';
import chromium from '@sparticuz/chromium';
import jsQR from 'jsqr';
import { chromium as playwright, type Browser, type Locator } from 'playwright-core';
import { PNG } from 'pngjs';
import { ROOT } from './processes';

/** Screenshots of page states, for people to look at (ignored by git). */
export const ARTIFACTS_DIR = path.join(ROOT, 'test', 'artifacts');

/**
 * The package's arguments are tuned for serverless functions. Dropped here: --single-process
 * (closing one browser context then takes the whole browser down) and the relaxed web security
 * (the pages must work under the browser's normal same-origin and mixed-content rules).
 */
const DROPPED_ARGS = new Set(['--single-process', '--disable-web-security', '--allow-running-insecure-content', '--disable-site-isolation-trials']);

/**
 * Headless Chromium from the npm package @sparticuz/chromium (the binary ships inside the
 * package: nothing is downloaded), driven by playwright-core.
 */
export async function launchBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  return playwright.launch({
    executablePath: await chromium.executablePath(),
    args: [...chromium.args.filter((a) => !DROPPED_ARGS.has(a)), '--no-sandbox', '--disable-dev-shm-usage'],
    headless: true,
  });
}

export function artifactPath(name: string): string {
  return path.join(ARTIFACTS_DIR, `${name}.png`);
}

/** Decodes the QR code shown in an element from a screenshot of it, as a phone camera would. */
export async function decodeQr(element: Locator): Promise<string | null> {
  const png = PNG.sync.read(await element.screenshot());
  const code = jsQR(new Uint8ClampedArray(png.data.buffer, png.data.byteOffset, png.data.byteLength), png.width, png.height);
  return code?.data ?? null;
}
