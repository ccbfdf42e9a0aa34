// Summarizes a V8 .cpuprofile (from `node --cpu-prof`, e.g. BENCH_NODE_ARGS="--cpu-prof
// --cpu-prof-dir=DIR"): self time by function and by package, so a note can say where time goes.
//   node bench/profile-summary.mjs DIR/CPU.*.cpuprofile [--top 25]
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs PROFILE.cpuprofile [--top N]\n');
  process.exit(2);
}
const top = Number(process.argv[process.argv.indexOf('--top') + 1]) || 25;
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] ?? 0;
  selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + dt);
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

/** Where a frame's code lives: a package under node_modules, our dist, node internals, or V8. */
function place(url) {
  if (!url) return '(native/V8)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return 'node:' + url.slice(5).split('/')[0];
  const dist = /\/dist\/([^/]+)/.exec(url);
  if (dist) return `onceline:${dist[1].replace(/\.js$/, '')}`;
  return url;
}

const fns = new Map();
const places = new Map();
for (const [id, us] of selfUs) {
  const { callFrame } = byId.get(id);
  const fnKey = `${callFrame.functionName || '(anonymous)'} ${place(callFrame.url)}${callFrame.url ? `:${callFrame.lineNumber + 1}` : ''}`;
  fns.set(fnKey, (fns.get(fnKey) ?? 0) + us);
  const p = callFrame.url ? place(callFrame.url) : ['(idle)', '(program)', '(garbage collector)'].includes(callFrame.functionName) ? callFrame.functionName : `(native) ${callFrame.functionName}`;
  places.set(p, (places.get(p) ?? 0) + us);
}
const pct = (us) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const print = (title, map) => {
  process.stdout.write(`\n${title}\n`);
  for (const [k, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${pct(us)}  ${k}\n`);
};
process.stdout.write(`${file}: ${(total / 1e6).toFixed(1)} s sampled\n`);
print('self time by place', places);
print('self time by function', fns);
