// `npm run bench`: runs every benchmark once, one after the other, on this machine (loopback
// only, each bounded in time), and rewrites the section of docs/benchmarks.md of each benchmark
// it ran with that run's command, date, machine and figures (bench/bench-doc.mjs). The sections
// of benchmarks it did not run (`node bench/all.mjs relay` runs one) keep their figures; the
// history of every figure is in git. How to rerun and read each: docs/benchmarks-method.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { mergeBenchSections, renderBenchSection } from './bench-doc.mjs';

const BENCHES = [
  { id: 'relay', title: 'Relay: commit → job in Redis at 1,000 jobs/s for 60 s, and the maximum drain rate', script: 'bench/relay.mjs', args: [] },
  { id: 'ingest', title: 'Ingest vs pgbench of the same SQL (32 connections, 30 s)', script: 'bench/ingest/run.mjs', args: [] },
  { id: 'ingest-beside', title: 'Ingest vs pgbench of the same SQL while the worker path runs at 500 inbound SMS/s beside it', script: 'bench/ingest/run.mjs', args: [], env: { BENCH_BESIDE_RATE: '500' } },
  { id: 'messaging', title: 'Messaging: POST /v2/messages with Idempotency-Key, receipt → status visible', script: 'bench/messaging.mjs', args: [] },
  { id: 'pacing', title: 'Sender pacing: a burst of 300 to one number at 20/s beside ten numbers under their rate', script: 'bench/messaging-pacing.mjs', args: [] },
  { id: 'webhooks', title: 'Customer webhooks: commit → delivered at 500 events/s, burst deliveries/s', script: 'bench/webhooks/run.mjs', args: [] },
  { id: 'e2e', title: 'End to end: carrier webhook → customer webhook at 500 events/s for 60 s, and the highest rate whose p99 stays under 1 s', script: 'bench/e2e.mjs', args: ['--rate', '500', '--seconds', '60', '--find-max'] },
  { id: 'calls-5', title: 'Calls: 5 concurrent inbound calls, ten rounds, three-target ring plans, duplicated webhooks', script: 'bench/calls.mjs', args: ['--calls', '5', '--rounds', '10'] },
  { id: 'calls-200', title: 'Calls: 200 concurrent inbound calls through three-target ring plans, duplicated webhooks', script: 'bench/calls.mjs', args: ['--calls', '200'] },
  { id: 'calls-200-ring-5s', title: 'Calls: 200 concurrent inbound calls whose unanswered targets ring 5 s (the least timeout_secs a carrier takes), duplicated webhooks', script: 'bench/calls.mjs', args: ['--calls', '200', '--ring-ms', '5000'] },
  { id: 'calls-200-sms-burst', title: 'Calls: 200 concurrent inbound calls beside a burst of 2,000 inbound SMS to an endpoint answering in 300 ms', script: 'bench/calls.mjs', args: ['--calls', '200', '--sms-burst', '2000'] },
  { id: 'sigkill-webhooks', title: 'SIGKILL of a worker holding customer webhook deliveries: resumed by the other worker, once', script: 'bench/sigkill-resume.mjs', args: [] },
  { id: 'sigkill-calls', title: 'SIGKILL of the process handling 200 ringing calls: its call work resumed by a second process, every call dialed and bridged once', script: 'bench/calls.mjs', args: ['--calls', '200', '--sigkill-after-ms', '1000'] },
];
const only = process.argv.slice(2);
const DOC = new URL('../docs/benchmarks.md', import.meta.url);

const sh = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
};
const machine =
  `${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ` +
  `Node ${process.version}, ${sh('psql', ['--version'])}, ${sh('redis-server', ['--version']).split(' ').slice(0, 3).join(' ')}, ` +
  `commit ${sh('git', ['rev-parse', '--short', 'HEAD'])}; PostgreSQL and Redis on the same host, default settings (fsync on)`;

const fresh = {};
for (const bench of BENCHES.filter((b) => only.length === 0 || only.some((o) => b.id === o || b.script.includes(o)))) {
  const envPrefix = Object.entries(bench.env ?? {}).map(([k, v]) => `${k}=${v} `).join('');
  const command = `${envPrefix}node ${bench.script} ${bench.args.join(' ')}`.trim();
  process.stderr.write(`bench: ${command}\n`);
  const load = os.loadavg()[0].toFixed(2);
  const date = new Date().toISOString();
  const t0 = Date.now();
  const run = spawnSync(process.execPath, [bench.script, ...bench.args], { env: { ...process.env, ...bench.env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 15 * 60_000, maxBuffer: 64 * 2 ** 20, killSignal: 'SIGINT' });
  const seconds = ((Date.now() - t0) / 1000).toFixed(0);
  if (run.status !== 0) {
    // A failed run keeps the figures the section had: they are still the latest measured.
    process.stderr.write(`bench: ${bench.id} exited ${run.status ?? run.signal}; its section keeps its previous figures\n`);
    continue;
  }
  // Only the report: Nest's console logger (in-process benchmarks) also writes to stdout.
  const output = (run.stdout ?? '').split('\n').filter((line) => !line.includes('[Nest]')).join('\n');
  fresh[bench.id] = renderBenchSection({ title: bench.title, command, date, machine, status: 'ok', seconds, load, output });
}

const doc = existsSync(DOC) ? readFileSync(DOC, 'utf8') : '';
const head = '# Benchmarks: the current figures\n\nOne section per benchmark, rewritten by `npm run bench` (`bench/all.mjs`); earlier figures are in git.';
writeFileSync(DOC, mergeBenchSections({ doc, fresh, order: BENCHES.map((b) => b.id), head }));
process.stderr.write(`bench: rewrote ${Object.keys(fresh).length} section(s) of docs/benchmarks.md\n`);
