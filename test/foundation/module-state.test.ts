import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(__dirname, '../..');

/**
 * No module-level mutable state in core/ (README "Per-process memory"): a cache, a pool, a limit
 * or something remembered lives on the service context (ServiceContext.memory, .detection), so
 * two contexts in one process share none of it. Only core/platform/ may keep process-wide state
 * (the metrics registry, the id and token generators' random buffers). The check reads each
 * file's top-level lines (column 0) and finds:
 * - a `let` or `var` binding;
 * - a `const` holding a new instance (`new Map(…)`, `new SomeClass(…)`), unless its declared type
 *   is read-only (ReadonlyMap, ReadonlySet, Readonly<…>);
 * - a `const` holding an empty `{}` or `[]` (to be filled later), unless declared read-only;
 * - a class field declared `static` without `readonly`.
 */
function moduleStateFindings(file: string, source: string): string[] {
  const findings: string[] = [];
  source.split('\n').forEach((line, i) => {
    const where = `${file}:${i + 1}: ${line.trim()}`;
    if (/^(export\s+)?(let|var)\s/.test(line)) findings.push(`${where} (a module-level let/var)`);
    const held = /^(export\s+)?const\s+\w+\s*(?::\s*([^=]+?))?\s*=\s*(new\s+[\w.]+|\[\]|\{\})/.exec(line);
    if (held && !/^Readonly/.test(held[2]?.trim() ?? '')) findings.push(`${where} (a module-level instance or collection not declared read-only)`);
    if (/^\s+(?:(?:private|protected|public)\s+)?static\s+(?!readonly\b)\w+\s*[:=]/.test(line)) findings.push(`${where} (a mutable static field)`);
  });
  return findings;
}

function coreFilesOutsidePlatform(): string[] {
  return readdirSync(path.join(ROOT, 'core'), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|mts|cts)$/.test(e.name))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'))
    .filter((f) => !f.startsWith('core/platform/'));
}

describe('module-level state in core/', () => {
  it('finds mutable module state however it is written (the check itself can fail)', () => {
    for (const line of [
      'let cache = null;',
      'export let counter = 0;',
      'var seen;',
      'const slots = new WeakMap<object, number>();',
      'export const byKey: Map<string, number> = new Map();',
      'const client = new SomeClient(url);',
      'const statements: Record<number, string> = {};',
      'const waiting = [];',
      '  static count = 0;',
      '  private static cache: Map<string, string> = new Map();',
    ]) {
      expect(moduleStateFindings('core/x.ts', line), line).to.have.length(1);
    }
    for (const line of [
      'const MAX = 10;',
      'const NAMES: ReadonlySet<string> = new Set(["a"]);',
      'const BY_KEY: ReadonlyMap<string, number> = new Map();',
      'const TABLE: Readonly<Record<number, string>> = {};',
      'export const PATTERN = /^[a-z]+$/;',
      '  static readonly LIFETIME_MS = 5_000;',
      '  let local = 0;',
      '  const map = new Map();',
      'export function f(): void {}',
    ]) {
      expect(moduleStateFindings('core/x.ts', line), line).to.deep.equal([]);
    }
  });

  it('core/ outside core/platform/ keeps none', () => {
    const found = coreFilesOutsidePlatform().flatMap((file) => moduleStateFindings(file, readFileSync(path.join(ROOT, file), 'utf8')));
    expect(found).to.deep.equal([]);
  });
});
