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
 * Chain families (issue 14, design.md §4b): a family's adapter under core/chains/<family>/ supplies
 * chain facts only and never reaches up into orders, deposits or webhooks; the API and workers see
 * chains only through the registry and core/detection, never a family's folder. Families are the
 * folders of core/chains/, so a new one (solana) is covered without editing this test.
 */
const FAMILY_DIR = /^core\/chains\/([^/]+)\//;
const DOMAIN_ABOVE_ADAPTERS = ['core/orders', 'core/deposits', 'core/webhooks'];
const TIERS_WITHOUT_FAMILIES = ['api', 'workers'];

function familyViolations(file: string, source: string): string[] {
  const normalised = file.split(path.sep).join('/');
  const fromFamily = FAMILY_DIR.exec(normalised)?.[1];
  const fromTier = TIERS_WITHOUT_FAMILIES.includes(normalised.split('/')[0]);
  if (!fromFamily && !fromTier) return [];
  const under = (target: string, dir: string) => target === dir || target.startsWith(`${dir}/`);
  return importSpecifiers(source)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => ({ spec, target: targetOf(file, spec) }))
    .flatMap(({ spec, target }) => {
      if (fromFamily) {
        const domain = DOMAIN_ABOVE_ADAPTERS.find((d) => under(target, d));
        if (domain) return [`${file} imports ${spec} (the ${fromFamily} adapter must not import ${domain}/)`];
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

  it('finds a family adapter importing orders, deposits or webhooks, and api/ or workers/ importing a family (the check itself can fail)', () => {
    for (const [file, line] of [
      ['core/chains/evm/evm-adapter.ts', "import { a } from '../../orders/order-state';"],
      ['core/chains/evm/evm-adapter.ts', "import type { B } from '../../deposits/lifecycle';"],
      ['core/chains/tron/tron-adapter.ts', "export { c } from '../../webhooks/emit';"],
      ['core/chains/solana/solana-adapter.ts', "const d = require('../../deposits');"],
      ['core/chains/evm/deep/x.ts', "async function f() { await import('../../../orders/orders'); }"],
      ['api/routes/x.routes.ts', "import { LOCAL_CHAIN_ID } from '../../core/chains/evm/local-chain-state';"],
      ['api/main.ts', "import type { T } from '../core/chains/tron/tron-http';"],
      ['workers/main.ts', "import { e } from '../core/chains/solana/anything';"],
      ['workers/processors/x.ts', "const f = require('../../core/chains/evm');"],
    ]) {
      expect(familyViolations(file, line), `${file}: ${line}`).to.have.length(1);
    }
    // Allowed: the registry and the detection core from anywhere; a family's own files, core/ below it.
    for (const [file, line] of [
      ['api/routes/x.routes.ts', "import { ChainRegistry } from '../../core/chains/registry';"],
      ['workers/main.ts', "import { ADAPTER_FACTORIES } from '../core/chains/adapters';"],
      ['workers/main.ts', "import { runChainScan } from '../core/detection/monitor';"],
      ['core/chains/evm/evm-adapter.ts', "import { normalizeAddress } from '../../pool/address-formats';"],
      ['core/chains/evm/evm-adapter.ts', "import type { ChainAdapter } from '../../detection/adapter';"],
      ['core/chains/evm/evm-adapter.ts', "import { x } from './evm-rpc';"],
      ['core/detection/confirmations.ts', "import { a } from '../orders/order-state';"],
      ['core/chains/registry.ts', "import { a } from '../orders/orders';"],
    ]) {
      expect(familyViolations(file, line), `${file}: ${line}`).to.deep.equal([]);
    }
  });

  it('no family adapter imports orders, deposits or webhooks, and api/ and workers/ import no family folder', () => {
    const found = ['core/chains', 'api', 'workers']
      .flatMap(sourceFiles)
      .flatMap((file) => familyViolations(file, readFileSync(path.join(ROOT, file), 'utf8')));
    expect(found).to.deep.equal([]);
  });
});
