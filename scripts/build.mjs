// `npm run build`: compiles the service to dist/ for production: one bundle per entry (the API, the
// worker, the all-in-one, the migration, the admin CLI), each with its source map, so production
// runs `node dist/…` with no TypeScript loader. esbuild only transpiles and bundles (a few seconds);
// type-checking stays in `npm run typecheck`, which `npm test` runs first.
//
// Why bundles and not one .js per .ts: a process loaded about 1,400 modules one file at a time, and
// resolving and reading them was most of its start-up. One file per entry, with the dependencies
// inside, starts in a fraction of that (docs/production.md → Start-up).
//
// Kept outside the bundles (required from node_modules at run time, all production dependencies):
// packages that find their own files on disk: bull-board's UI, Swagger UI's assets.
//
// Files read at run time (db/migrations, api/pages/assets) are copied to the same paths under dist/
// as in the sources, and a source file's `__dirname` is rewritten to that file's own folder under
// dist/, so `path.join(__dirname, 'migrations')` means the same thing bundled or not.
// Usage: node scripts/build.mjs [outDir]   (default dist/)
import { decode, encode } from '@jridgewell/sourcemap-codec';
import { build } from 'esbuild';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.resolve(root, process.argv[2] ?? 'dist');

/** What production runs (the local chain's tooling, benches and tests stay out). */
const ENTRIES = ['api/main.ts', 'workers/main.ts', 'scripts/start.ts', 'scripts/admin.ts', 'scripts/migrate.ts'];
/** Files read at run time next to the compiled code. */
const COPIED = ['db/migrations', 'api/pages/assets', 'package.json'];
/**
 * Required at run time from node_modules: bull-board and Swagger UI read their own package's files;
 * anvil (a dev dependency) is only looked up, by the check that refuses NETWORK=local without it.
 */
const EXTERNAL = ['@bull-board/*', 'swagger-ui-dist', '@foundry-rs/anvil'];

/**
 * The local chain's tooling (scripts/local-chain/: anvil, litesvm, test tokens) is development-only
 * and required on use (scripts/start.ts): left as a run-time require that dist/ cannot satisfy, so a
 * compiled process refuses NETWORK=local with its clear message instead of carrying the tooling.
 */
const localChainToolingPlugin = {
  name: 'local-chain-tooling',
  setup(b) {
    b.onResolve({ filter: /^\.\/local-chain\// }, (args) => ({ path: args.path, external: true }));
  },
};

/**
 * `__dirname` in our sources means the source file's folder; in a bundle it would mean the bundle's.
 * Rewritten, relative to the bundle (which sits in outDir/<entry folder>), to the source's folder
 * under outDir.
 */
function sourceDirnamePlugin(entry) {
  const bundleDir = path.dirname(path.join(outDir, entry));
  return {
    name: 'source-dirname',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes('__dirname')) return undefined;
        const fromBundle = path.relative(bundleDir, path.join(outDir, path.relative(root, path.dirname(args.path))));
        const dirname = `require('node:path').join(__dirname, ${JSON.stringify(fromBundle.split(path.sep).join('/'))})`;
        return { contents: source.replace(/\b__dirname\b/g, dirname), loader: 'ts' };
      });
    },
  };
}

/**
 * Trims a bundle's source map to what a stack trace needs. Node decodes the whole map into the heap
 * at the first stack trace it formats: mapping every dependency, token by token, held about 50 MB
 * more in an idle worker. Kept: our own sources only (a dependency's code is marked unmapped, so
 * its frames name the bundle, never one of our files), one mapping per source line (a frame names
 * the line, and the column where that line's code begins), and no names (the bundle keeps them).
 */
function trimSourceMap(mapFile) {
  const map = JSON.parse(readFileSync(mapFile, 'utf8'));
  const ownIndex = new Map();
  const sources = [];
  map.sources.forEach((source, i) => {
    if (source.split('/').includes('node_modules')) return;
    ownIndex.set(i, sources.length);
    sources.push(source);
  });
  const mappings = decode(map.mappings).map((generatedLine) => {
    const kept = [];
    let previous = null;
    for (const [column, sourceIndex, line, sourceColumn] of generatedLine) {
      const source = sourceIndex === undefined ? undefined : ownIndex.get(sourceIndex);
      const at = source === undefined ? 'unmapped' : `${source}:${line}`;
      if (at === previous) continue;
      previous = at;
      kept.push(source === undefined ? [column] : [column, source, line, sourceColumn]);
    }
    return kept;
  });
  writeFileSync(mapFile, JSON.stringify({ ...map, sources, names: [], mappings: encode(mappings) }));
}

/**
 * The bundles carry postgres.js from node_modules, which the install patches (patches/,
 * docs/outages.md). An install that skipped it (`--ignore-scripts`, a Docker stage without
 * patches/) would bundle the driver that ends a process on a dropped connection: refuse.
 */
const driverSource = readFileSync(path.join(root, 'node_modules/postgres/src/connection.js'), 'utf8');
if (!driverSource.includes('Stablegate patch')) {
  console.error('node_modules/postgres is not patched (patches/postgres+3.4.9.patch): run `npx patch-package` or reinstall with scripts');
  process.exit(1);
}

const started = Date.now();
rmSync(outDir, { recursive: true, force: true });
const results = await Promise.all(
  ENTRIES.map((entry) =>
    build({
      absWorkingDir: root,
      entryPoints: [entry],
      outfile: path.join(outDir, entry.replace(/\.ts$/, '.js')),
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: EXTERNAL,
      // Bundling renames clashing names; kept so that error and class names read as in the sources.
      keepNames: true,
      // A smaller source to read, parse and hold (about a third less); the map keeps the lines.
      minifyWhitespace: true,
      minifySyntax: true,
      sourcemap: 'linked',
      // Stack traces name the TypeScript files relative to the map (dist/api/main.js.map → ../../core/…).
      sourcesContent: false,
      metafile: true,
      plugins: [sourceDirnamePlugin(entry), localChainToolingPlugin],
      logLevel: 'warning',
    }),
  ),
);
for (const entry of ENTRIES) trimSourceMap(path.join(outDir, entry.replace(/\.ts$/, '.js.map')));
for (const item of COPIED) cpSync(path.join(root, item), path.join(outDir, item), { recursive: true });
const sources = new Set(results.flatMap((r) => Object.keys(r.metafile.inputs)));
console.log(`built ${ENTRIES.length} bundles of ${sources.size} files into ${path.relative(root, outDir) || '.'} in ${Date.now() - started} ms`);
