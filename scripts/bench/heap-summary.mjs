// Summarizes a V8 .heapsnapshot (node --heapsnapshot-signal, BENCH_HEAP_SNAPSHOTS of bench:memory):
// total size, size per node type, and the constructors/names holding the most bytes (self size).
//   node scripts/bench/heap-summary.mjs <file.heapsnapshot> [top=25]
import { readFileSync } from 'node:fs';

const [file, topText] = process.argv.slice(2);
if (!file) throw new Error('usage: node scripts/bench/heap-summary.mjs <file.heapsnapshot> [top]');
const top = Number(topText ?? 25);
const snap = JSON.parse(readFileSync(file, 'utf8'));
const { node_fields: fields, node_types: [types] } = snap.snapshot.meta;
const width = fields.length;
const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
const byType = new Map();
const byName = new Map();
let total = 0;
for (let i = 0; i < snap.nodes.length; i += width) {
  const type = types[snap.nodes[i + typeAt]];
  const size = snap.nodes[i + sizeAt];
  total += size;
  byType.set(type, (byType.get(type) ?? 0) + size);
  // Strings and code grouped by kind; objects by constructor name.
  const name = type === 'object' || type === 'closure' || type === 'native' ? `${type} ${snap.strings[snap.nodes[i + nameAt]]}` : type;
  const entry = byName.get(name) ?? { size: 0, count: 0 };
  entry.size += size;
  entry.count++;
  byName.set(name, entry);
}
const mb = (b) => `${(b / 1048576).toFixed(1)} MB`;
console.log(`${file}: ${mb(total)} in ${snap.nodes.length / width} nodes`);
console.log('by type:', [...byType].sort((a, b) => b[1] - a[1]).map(([t, s]) => `${t} ${mb(s)}`).join(', '));
for (const [name, { size, count }] of [...byName].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
  console.log(`${mb(size).padStart(9)}  ${String(count).padStart(8)}  ${name.slice(0, 100)}`);
}
