// The registry this project installs from lacks some other-platform builds of optional
// packages (anvil, msgpackr-extract, litesvm). npm then leaves them out of package-lock.json and
// `npm ci` refuses the lock as out of sync. This adds them back as optional, platform-bound
// entries: npm skips them on other platforms, and nothing is downloaded for them here.
// Run after any `npm install` that rewrites the lock: `npm run lockfile:patch`.
import { readFileSync, writeFileSync } from 'node:fs';

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const pk = lock.packages;
const platformPackages = {
  'node_modules/@foundry-rs/anvil': {
    '@foundry-rs/anvil-darwin-amd64': ['darwin', 'x64'],
    '@foundry-rs/anvil-darwin-arm64': ['darwin', 'arm64'],
    '@foundry-rs/anvil-linux-arm64': ['linux', 'arm64'],
    '@foundry-rs/anvil-win32-amd64': ['win32', 'x64'],
  },
  'node_modules/msgpackr-extract': {
    '@msgpackr-extract/msgpackr-extract-darwin-arm64': ['darwin', 'arm64'],
    '@msgpackr-extract/msgpackr-extract-darwin-x64': ['darwin', 'x64'],
    '@msgpackr-extract/msgpackr-extract-linux-arm': ['linux', 'arm'],
    '@msgpackr-extract/msgpackr-extract-win32-x64': ['win32', 'x64'],
  },
  'node_modules/litesvm': {
    'litesvm-darwin-arm64': ['darwin', 'arm64'],
    'litesvm-darwin-x64': ['darwin', 'x64'],
    'litesvm-linux-arm64-gnu': ['linux', 'arm64', 'glibc'],
    'litesvm-linux-arm64-musl': ['linux', 'arm64', 'musl'],
    'litesvm-linux-x64-gnu': ['linux', 'x64', 'glibc'],
    'litesvm-linux-x64-musl': ['linux', 'x64', 'musl'],
  },
};
const added = [];
for (const [parent, children] of Object.entries(platformPackages)) {
  const version = pk[parent]?.version;
  if (!version) continue;
  for (const [name, [os, cpu, libc]] of Object.entries(children)) {
    const key = `node_modules/${name}`;
    if (pk[key]) continue;
    // A dev dependency's platform builds are dev too (`npm ci --omit=dev` leaves them out).
    pk[key] = { version, cpu: [cpu], ...(pk[parent].dev ? { dev: true } : {}), ...(libc ? { libc: [libc] } : {}), license: 'MIT', optional: true, os: [os] };
    added.push(name);
  }
}
const sorted = Object.fromEntries(Object.entries(pk).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
lock.packages = sorted;
writeFileSync(path, JSON.stringify(lock, null, 2) + '\n');
console.log(added.length ? `added ${added.join(', ')}` : 'lockfile already complete');
