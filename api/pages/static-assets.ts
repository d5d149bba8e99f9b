import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import express, { type RequestHandler } from 'express';

/** Our own CSS and scripts for the public pages (no third-party assets, design.md §6a). */
export const ASSETS_DIR = path.join(__dirname, 'assets');
export const ASSETS_PATH = '/static';

/** Each asset's URL carries a digest of its content, so it can be cached for long and still change with a release. */
const versions = new Map<string, string>(
  readdirSync(ASSETS_DIR).map((name) => [name, createHash('sha256').update(readFileSync(path.join(ASSETS_DIR, name))).digest('hex').slice(0, 12)]),
);

export function assetUrl(name: string): string {
  const version = versions.get(name);
  if (!version) throw new Error(`No public asset named ${name}`);
  return `${ASSETS_PATH}/${name}?v=${version}`;
}

export function staticAssets(): RequestHandler {
  return express.static(ASSETS_DIR, { index: false, redirect: false, maxAge: '7d', fallthrough: true, dotfiles: 'ignore' });
}
