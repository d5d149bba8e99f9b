// `npm run build`: compiles the service's TypeScript to dist/ (CommonJS, one .js per .ts, with
// source maps), so production runs `node dist/…` with no TypeScript loader. esbuild only transpiles
// (about a second); type-checking stays in `npm run typecheck`, which `npm test` runs first.
// The layout under dist/ mirrors the sources, so paths found from __dirname (db/migrations,
// api/pages/assets) hold once their files are copied next to the compiled code.
// Usage: node scripts/build.mjs [outDir]   (default dist/)
import { build } from 'esbuild';
import { cpSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.resolve(root, process.argv[2] ?? 'dist');

/** What production runs: the service's folders and the entries in scripts/ (not local-chain, benches, tests). */
const SOURCE_DIRS = ['api', 'core', 'db', 'workers'];
const SCRIPT_ENTRIES = ['scripts/start.ts', 'scripts/admin.ts'];
/** Files read at run time next to the compiled code. */
const COPIED = ['db/migrations', 'api/pages/assets', 'package.json'];

function typeScriptFiles(dir) {
  return readdirSync(path.join(root, dir), { recursive: true })
    .map((name) => path.join(dir, String(name)))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && statSync(path.join(root, file)).isFile());
}

const started = Date.now();
rmSync(outDir, { recursive: true, force: true });
const entryPoints = [...SOURCE_DIRS.flatMap(typeScriptFiles), ...SCRIPT_ENTRIES];
await build({
  absWorkingDir: root,
  entryPoints,
  outdir: outDir,
  outbase: '.',
  bundle: false,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  sourcemap: 'linked',
  // Stack traces name the TypeScript files relative to the map (dist/x.js.map → ../x.ts).
  sourcesContent: false,
  logLevel: 'warning',
});
for (const item of COPIED) cpSync(path.join(root, item), path.join(outDir, item), { recursive: true });
console.log(`built ${entryPoints.length} files into ${path.relative(root, outDir) || '.'} in ${Date.now() - started} ms`);
