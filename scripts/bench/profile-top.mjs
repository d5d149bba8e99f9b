// Self time of a V8 CPU profile (BENCH_CPU_PROFILE of bench:pages / bench:orders, or node --cpu-prof),
// by function and by file or npm package, largest first:
//   node scripts/bench/profile-top.mjs /tmp/pages.cpuprofile [rows, default 40]
import { readFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const n = Number(process.argv[3] ?? 40);
const byId = new Map(p.nodes.map((x) => [x.id, x]));
const self = new Map();
const dt = p.timeDeltas; let total = 0;
const counts = new Map();
for (let i = 0; i < p.samples.length; i++) { counts.set(p.samples[i], (counts.get(p.samples[i]) ?? 0) + (dt[i] ?? 0)); total += dt[i] ?? 0; }
const fn = new Map(), file = new Map();
for (const [id, us] of counts) {
  const cf = byId.get(id).callFrame;
  const url = cf.url.replace(/^file:\/\//, '').replace(process.cwd() + '/', '');
  const k = `${cf.functionName || '(anon)'} ${url.split('/').slice(-2).join('/')}:${cf.lineNumber + 1}`;
  fn.set(k, (fn.get(k) ?? 0) + us);
  let f = url.includes('node_modules/') ? 'npm:' + url.split('node_modules/').pop().split('/').slice(0, url.split('node_modules/').pop().startsWith('@') ? 2 : 1).join('/') : url || cf.functionName;
  if (url.startsWith('node:')) f = url;
  file.set(f, (file.get(f) ?? 0) + us);
}
const pr = (m, k) => { console.log(`--- ${k}`); for (const [x, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${(us / 1000).toFixed(0).padStart(7)} ms ${(100 * us / total).toFixed(1).padStart(5)}%  ${x}`); };
console.log(`total ${(total / 1000).toFixed(0)} ms`);
pr(fn, 'self by function'); pr(file, 'self by file/package');
