import { readdirSync, readFileSync } from 'node:fs';
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
  // design.md: chain adapters supply only what differs between families; they never import
  // orders, deposits or webhooks (detection/ makes those requests).
  'core/chains': ['core/orders', 'core/deposits', 'core/webhooks'],
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

/** The layering violations of one file (path relative to the repository). */
function violations(file: string, source: string): string[] {
  const posix = file.split(path.sep).join('/');
  const rules = Object.entries(FORBIDDEN).filter(([layer]) => posix.startsWith(`${layer}/`));
  return importSpecifiers(source)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => ({ spec, target: path.relative(ROOT, path.resolve(ROOT, path.dirname(file), spec)).split(path.sep).join('/') }))
    .flatMap(({ spec, target }) =>
      rules
        .flatMap(([layer, banned]) => banned.filter((b) => target === b || target.startsWith(`${b}/`)).map((b) => `${file} imports ${spec} (${layer}/ must not import ${b}/)`)),
    );
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
    expect(violations('core/chains/evm/x.ts', "import { a } from '../../orders/order-state';")).to.have.length(1);
    expect(violations('core/chains/tron/x.ts', "import type { B } from '../../webhooks/relay';")).to.have.length(1);
    expect(violations('core/chains/x.ts', "import { c } from '../deposits/lifecycle';")).to.have.length(1);
    expect(violations('core/chains/evm/x.ts', "import { d } from '../../detection/adapter';")).to.deep.equal([]);
    expect(violations('core/detection/x.ts', "import { e } from '../orders/order-state';")).to.deep.equal([]);
  });

  it('the API never imports workers/, core/ imports neither tier, and chain adapters import no orders, deposits or webhooks', () => {
    const found = Object.keys(FORBIDDEN)
      .flatMap(sourceFiles)
      .flatMap((file) => violations(file, readFileSync(path.join(ROOT, file), 'utf8')));
    expect(found).to.deep.equal([]);
  });
});
