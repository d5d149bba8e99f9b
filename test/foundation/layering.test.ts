import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');

/**
 * Which folders the files under a folder may not import from. The API reaches the job tier only
 * through the JobQueue port of core/jobs; core/ is shared by both tiers and knows neither.
 */
const FORBIDDEN: Record<string, string[]> = {
  api: ['workers'],
  core: ['api', 'workers'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts|cts|js|mjs|cjs)$/.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

/** Every import, export-from, require() and import() of a source text, as written. */
function importSpecifiers(source: string): string[] {
  const info = ts.preProcessFile(source, true, true);
  return info.importedFiles.map((f) => f.fileName);
}

/** The repository-relative path an import specifier of `file` points at. */
function targetOf(file: string, spec: string): string {
  return path.relative(ROOT, path.resolve(ROOT, path.dirname(file), spec)).split(path.sep).join('/');
}

/** The layering violations of one file (path relative to the repository). */
function violations(file: string, source: string): string[] {
  const posix = file.split(path.sep).join('/');
  const rules = Object.entries(FORBIDDEN).filter(([layer]) => posix.startsWith(`${layer}/`));
  return importSpecifiers(source)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => ({ spec, target: targetOf(file, spec) }))
    .flatMap(({ spec, target }) =>
      rules
        .flatMap(([layer, banned]) => banned.filter((b) => target === b || target.startsWith(`${b}/`)).map((b) => `${file} imports ${spec} (${layer}/ must not import ${b}/)`)),
    );
}

/**
 * Chain families (issue 14, design.md §4b, issue 26): a family's folder core/chains/<family>/
 * supplies chain facts only. Its arrows go to the registry's room (files of core/chains/ itself,
 * among them the adapter contract core/chains/adapter-contract.ts, but not the scan checkpoints,
 * which are stored), its own folder and the platform (core/platform/); nothing else: not the
 * detection core, orders, deposits, webhooks, the pool, the service context or the database. The API and workers see chains only through the registry and
 * core/detection, never a family's folder. Families are the folders of core/chains/, so a new one
 * (solana) is covered without editing this test.
 */
const FAMILY_DIR = /^core\/chains\/([^/]+)\//;
const TIERS_WITHOUT_FAMILIES = ['api', 'workers'];

/** What a family's file may import besides its own folder. */
function familyMayImport(target: string): boolean {
  if (target.startsWith('core/platform/')) return true;
  if (target.replace(/\.ts$/, '') === 'core/chains/checkpoints') return false;
  const parts = target.split('/');
  return parts[0] === 'core' && parts[1] === 'chains' && parts.length === 3 && familyOf(target) === undefined;
}

function familyViolations(file: string, source: string): string[] {
  const normalised = file.split(path.sep).join('/');
  const fromFamily = FAMILY_DIR.exec(normalised)?.[1];
  const fromTier = TIERS_WITHOUT_FAMILIES.includes(normalised.split('/')[0]);
  if (!fromFamily && !fromTier) return [];
  return importSpecifiers(source)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => ({ spec, target: targetOf(file, spec) }))
    .flatMap(({ spec, target }) => {
      if (fromFamily) {
        const own = target.startsWith(`core/chains/${fromFamily}/`);
        if (!own && !familyMayImport(target)) {
          return [`${file} imports ${spec} (the ${fromFamily} family imports only core/chains/ (not its checkpoints), core/platform/ and its own folder)`];
        }
        return [];
      }
      const family = familyOf(target);
      if (fromTier && family) return [`${file} imports ${spec} (api/ and workers/ must not import core/chains/${family}/)`];
      return [];
    });
}

/**
 * The family an import target lies in: core/chains/<family>/… , or core/chains/<family> itself
 * when that is a folder (an index import), not a file of core/chains/ such as the registry.
 */
function familyOf(target: string): string | undefined {
  const parts = target.split('/');
  if (parts[0] !== 'core' || parts[1] !== 'chains' || parts.length < 3) return undefined;
  if (parts.length > 3) return parts[2];
  return existsSync(path.join(ROOT, target)) && statSync(path.join(ROOT, target)).isDirectory() ? parts[2] : undefined;
}

/**
 * core/platform/ is what every domain stands on (config, logging, Redis, errors, ids, process
 * memory's own part…): none of its files imports a domain folder of core/ (anything of core/
 * outside core/platform/), so a reader finds the platform first and the domain second.
 */
function platformViolations(file: string, source: string): string[] {
  if (!file.split(path.sep).join('/').startsWith('core/platform/')) return [];
  return importSpecifiers(source)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => ({ spec, target: targetOf(file, spec) }))
    .filter(({ target }) => target.startsWith('core/') && !target.startsWith('core/platform/'))
    .map(({ spec }) => `${file} imports ${spec} (core/platform/ must not import a domain folder)`);
}

/**
 * Import circles among the project's own files (as /work/shared/tools/import-circles.mjs finds
 * them): strongly connected components of the relative-import graph, `import type` counting as an
 * arrow, as it does for a reader. Returns each circle's files, sorted.
 */
function importCircles(files: Map<string, string>): string[][] {
  const known = new Set(files.keys());
  const resolveTarget = (from: string, spec: string): string | undefined => {
    const base = targetOf(from, spec);
    return [base, `${base}.ts`, `${base}/index.ts`].find((candidate) => known.has(candidate));
  };
  const edges = new Map<string, string[]>();
  for (const [file, source] of files) {
    const targets = importSpecifiers(source)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => resolveTarget(file, spec))
      .filter((t): t is string => t !== undefined && t !== file);
    edges.set(file, [...new Set(targets)]);
  }
  // Tarjan's algorithm.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) circles.push(component.sort());
    }
  };
  for (const file of files.keys()) if (!index.has(file)) visit(file);
  return circles;
}

const CIRCLE_ROOTS = ['api', 'core', 'db', 'workers', 'scripts'];

/**
 * The folder a file counts in for folder pairs: core/<folder> for a file under core/<folder>/,
 * db for db/; undefined elsewhere (a file at core/'s root is refused by its own test).
 */
function roomOf(file: string): string | undefined {
  const parts = file.split('/');
  if (parts[0] === 'db') return 'db';
  return parts[0] === 'core' && parts.length >= 3 ? `core/${parts[1]}` : undefined;
}

/**
 * Folder knots (issue 38): two folders of core/ (or one of them and db/) whose files import each
 * other, in either direction, type-only imports included. Such a pair is one room split in two:
 * a reader cannot learn either without the other, and a circle is one import away. The way out is
 * to move the shared fact to the folder that owns it, or to the lower of the two, or to pass a
 * value in. Returns each pair as `a <-> b: one import each way`.
 */
function folderPairs(files: Map<string, string>): string[] {
  const arrows = new Map<string, string>();
  for (const [file, source] of files) {
    const from = roomOf(file);
    if (!from) continue;
    for (const spec of importSpecifiers(source).filter((s) => s.startsWith('.'))) {
      const to = roomOf(targetOf(file, spec));
      if (to && to !== from && !arrows.has(`${from} -> ${to}`)) arrows.set(`${from} -> ${to}`, `${file} imports ${spec}`);
    }
  }
  const pairs: string[] = [];
  for (const [arrow, example] of arrows) {
    const [from, to] = arrow.split(' -> ');
    const back = arrows.get(`${to} -> ${from}`);
    if (back && from < to) pairs.push(`${from} <-> ${to}: ${example}; ${back}`);
  }
  return pairs.sort();
}

describe('layering', () => {
  it('finds a forbidden import however it is written (the check itself can fail)', () => {
    const bad = [
      "import { x } from '../../workers/catalog';",
      "import type { Y } from '../../workers/processors/types';",
      "export { z } from '../../workers/runtime';",
      "const w = require('../../workers/main');",
      "async function f() { await import('../../workers/runtime'); }",
    ];
    for (const line of bad) expect(violations('api/routes/x.routes.ts', line), line).to.have.length(1);
    expect(violations('core/webhooks/x.ts', "import { a } from '../../api/app';")).to.have.length(1);
    expect(violations('api/routes/x.routes.ts', "import { a } from '../../core/jobs/job-queue';")).to.deep.equal([]);
    expect(violations('workers/x.ts', "import { a } from '../api/app';")).to.deep.equal([]);
  });

  it('the API never imports workers/, and core/ imports neither tier', () => {
    const found = Object.keys(FORBIDDEN)
      .flatMap(sourceFiles)
      .flatMap((file) => violations(file, readFileSync(path.join(ROOT, file), 'utf8')));
    expect(found).to.deep.equal([]);
  });

  it("finds a family importing outside its allowed rooms, and api/ or workers/ importing a family (the check itself can fail)", () => {
    for (const [file, line] of [
      ['core/chains/evm/evm-adapter.ts', "import { a } from '../../orders/order-state';"],
      ['core/chains/evm/evm-adapter.ts', "import type { B } from '../../deposits/lifecycle';"],
      ['core/chains/tron/tron-adapter.ts', "export { c } from '../../webhooks/emit';"],
      ['core/chains/solana/solana-adapter.ts', "const d = require('../../deposits');"],
      ['core/chains/evm/deep/x.ts', "async function f() { await import('../../../orders/orders'); }"],
      ['core/chains/evm/evm-adapter.ts', "import { normalizeAddress } from '../../pool/address-formats';"],
      ['core/chains/evm/local-chain-state.ts', "import type { ServiceContext } from '../../service/context';"],
      ['core/chains/evm/evm-rpc.ts', "import type { Database } from '../../../db/client';"],
      ['core/chains/tron/tron-adapter.ts', "import { recordTransfers } from '../../detection/record-transfer';"],
      ['core/chains/tron/tron-adapter.ts', "import { x } from '../evm/evm-rpc';"],
      ['core/chains/evm/evm-adapter.ts', "import type { ChainAdapter } from '../../detection/monitor';"],
      ['core/chains/solana/solana-adapter.ts', "import { getCheckpoint } from '../checkpoints';"],
      ['api/routes/x.routes.ts', "import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';"],
      ['api/main.ts', "import type { T } from '../core/chains/tron/tron-http';"],
      ['workers/main.ts', "import { e } from '../core/chains/solana/anything';"],
      ['workers/processors/x.ts', "const f = require('../../core/chains/evm');"],
    ]) {
      expect(familyViolations(file, line), `${file}: ${line}`).to.have.length(1);
    }
    // Allowed: the registry and the detection core from anywhere; a family's own files, the
    // registry's room (the adapter contract among them) and the platform from a family.
    for (const [file, line] of [
      ['api/routes/x.routes.ts', "import { ChainRegistry } from '../../core/chains/registry';"],
      ['workers/main.ts', "import { ADAPTER_FACTORIES } from '../core/chains/adapters';"],
      ['workers/main.ts', "import { runChainScan } from '../core/detection/monitor';"],
      ['core/chains/evm/evm-adapter.ts', "import type { ChainAdapter } from '../adapter-contract';"],
      ['core/chains/evm/evm-adapter.ts', "import { x } from './evm-rpc';"],
      ['core/chains/evm/evm-adapter.ts', "import type { Chain } from '../chain';"],
      ['core/chains/tron/tron-address.ts', "import { base58Bytes } from '../base58';"],
      ['core/chains/evm/evm-rpc.ts', "import { countRpcCall } from '../../platform/metrics';"],
      ['core/detection/confirmations.ts', "import { a } from '../orders/order-state';"],
      ['core/chains/registry.ts', "import { a } from '../orders/orders';"],
    ]) {
      expect(familyViolations(file, line), `${file}: ${line}`).to.deep.equal([]);
    }
  });

  it('each family imports only core/chains/ (not its checkpoints), core/platform/ and its own folder; api/ and workers/ import no family folder', () => {
    const found = ['core/chains', 'api', 'workers']
      .flatMap(sourceFiles)
      .flatMap((file) => familyViolations(file, readFileSync(path.join(ROOT, file), 'utf8')));
    expect(found).to.deep.equal([]);
  });

  it('finds a platform file importing a domain folder (the check itself can fail)', () => {
    expect(platformViolations('core/platform/process-memory.ts', "import type { X } from '../orders/orders';")).to.have.length(1);
    expect(platformViolations('core/platform/money-log.ts', "import type { ChainRegistry } from '../chains/registry';")).to.have.length(1);
    expect(platformViolations('core/platform/logger.ts', "import type { LogLevel } from './config';")).to.deep.equal([]);
    expect(platformViolations('core/platform/service-state.ts', "import type { DbOrTx } from '../../db/client';")).to.deep.equal([]);
    expect(platformViolations('core/orders/orders.ts', "import { a } from '../pool/allocation';")).to.deep.equal([]);
  });

  it('no file under core/platform/ imports a domain folder', () => {
    const found = sourceFiles('core/platform').flatMap((file) => platformViolations(file, readFileSync(path.join(ROOT, file), 'utf8')));
    expect(found).to.deep.equal([]);
  });

  it('finds an import circle, type-only arrows included (the check itself can fail)', () => {
    const circles = importCircles(
      new Map([
        ['core/a.ts', "import { b } from './b';"],
        ['core/b.ts', "import type { C } from './c/index';"],
        ['core/c/index.ts', "export { a } from '../a';"],
        ['core/d.ts', "import { a } from './a';"],
      ]),
    );
    expect(circles).to.deep.equal([['core/a.ts', 'core/b.ts', 'core/c/index.ts']]);
    expect(importCircles(new Map([['core/a.ts', "import { b } from './b';"], ['core/b.ts', "import { c } from 'drizzle-orm';"]]))).to.deep.equal([]);
  });

  it('finds two folders of core/, or one and db/, importing each other (the check itself can fail)', () => {
    const pairs = folderPairs(
      new Map([
        ['core/views/payment-page.ts', "import { decideOrderStatus } from '../orders/order-state';"],
        ['core/orders/order-state.ts', "import type { OrderView } from '../views/order';"],
        ['core/chains/evm/evm-adapter.ts', "import type { ChainAdapter } from '../../detection/adapter';"],
        ['core/detection/monitor.ts', "export { x } from '../chains/registry';"],
        ['db/migrate.cli.ts', "const c = require('../core/platform/config');"],
        ['core/platform/process.ts', "import type { Database } from '../../db/client';"],
        ['core/orders/orders.ts', "import { a } from '../pool/allocation';"],
        ['core/orders/redirect.ts', "import { b } from './order-state';"],
      ]),
    );
    expect(pairs.map((p) => p.split(':')[0])).to.deep.equal(['core/chains <-> core/detection', 'core/orders <-> core/views', 'core/platform <-> db']);
    expect(folderPairs(new Map([['core/orders/orders.ts', "import { a } from '../pool/allocation';"], ['core/pool/allocation.ts', "import { b } from './cooldown';"]]))).to.deep.equal([]);
  });

  it('no two folders of core/ (nor one of them and db/) import each other', () => {
    const files = new Map(
      ['core', 'db']
        .flatMap(sourceFiles)
        .filter((file) => /\.(ts|mts|cts)$/.test(file) && !file.endsWith('.d.ts'))
        .map((file) => [file.split(path.sep).join('/'), readFileSync(path.join(ROOT, file), 'utf8')] as const),
    );
    expect(folderPairs(files)).to.deep.equal([]);
  });

  it('has no import circles among api/, core/, db/, workers/ and scripts/', () => {
    const files = new Map(
      CIRCLE_ROOTS.flatMap(sourceFiles)
        .filter((file) => /\.(ts|mts|cts)$/.test(file) && !file.endsWith('.d.ts'))
        .map((file) => [file.split(path.sep).join('/'), readFileSync(path.join(ROOT, file), 'utf8')] as const),
    );
    expect(importCircles(files)).to.deep.equal([]);
  });
});
