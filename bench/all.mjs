// `npm run bench`: runs every benchmark once, one after the other, on this machine (loopback
// only, each bounded in time), and writes docs/benchmarks.md with the machine, the commands and
// the figures of that one run. Method and reading of each benchmark: docs/benchmarks-method.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';

const BENCHES = [
  { title: 'Relay: commit → job in Redis at 1,000 jobs/s for 60 s, and the maximum drain rate', script: 'bench/relay.mjs', args: [] },
  { title: 'Ingest vs pgbench of the same SQL (32 connections, 30 s)', script: 'bench/ingest/run.mjs', args: [] },
  { title: 'Ingest vs pgbench of the same SQL while the worker path runs at 500 inbound SMS/s beside it', script: 'bench/ingest/run.mjs', args: [], env: { BENCH_BESIDE_RATE: '500' } },
  { title: 'Messaging: POST /v2/messages with Idempotency-Key, receipt → status visible', script: 'bench/messaging.mjs', args: [] },
  { title: 'Sender pacing: a burst of 300 to one number at 20/s beside ten numbers under their rate', script: 'bench/messaging-pacing.mjs', args: [] },
  { title: 'Customer webhooks: commit → delivered at 500 events/s, burst deliveries/s', script: 'bench/webhooks/run.mjs', args: [] },
  { title: 'End to end: carrier webhook → customer webhook at 500 events/s for 60 s, and the highest rate whose p99 stays under 1 s', script: 'bench/e2e.mjs', args: ['--rate', '500', '--seconds', '60', '--find-max'] },
  { title: 'Calls: 5 concurrent inbound calls, ten rounds, three-target ring plans, duplicated webhooks', script: 'bench/calls.mjs', args: ['--calls', '5', '--rounds', '10'] },
  { title: 'Calls: 200 concurrent inbound calls through three-target ring plans, duplicated webhooks', script: 'bench/calls.mjs', args: ['--calls', '200'] },
  { title: 'Calls: 200 concurrent inbound calls whose unanswered targets ring 5 s (the least timeout_secs a carrier takes), duplicated webhooks', script: 'bench/calls.mjs', args: ['--calls', '200', '--ring-ms', '5000'] },
  { title: 'Calls: 200 concurrent inbound calls beside a burst of 2,000 inbound SMS to an endpoint answering in 300 ms', script: 'bench/calls.mjs', args: ['--calls', '200', '--sms-burst', '2000'] },
  { title: 'SIGKILL of a worker holding customer webhook deliveries: resumed by the other worker, once', script: 'bench/sigkill-resume.mjs', args: [] },
  { title: 'SIGKILL of the process handling 200 ringing calls: its call work resumed by a second process, every call dialed and bridged once', script: 'bench/calls.mjs', args: ['--calls', '200', '--sigkill-after-ms', '1000'] },
];
const only = process.argv.slice(2);

const sh = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
};
const started = new Date();
const sections = [];
for (const bench of BENCHES.filter((b) => only.length === 0 || only.some((o) => b.script.includes(o)))) {
  const envPrefix = Object.entries(bench.env ?? {}).map(([k, v]) => `${k}=${v} `).join('');
  const command = `${envPrefix}node ${bench.script} ${bench.args.join(' ')}`.trim();
  process.stderr.write(`bench: ${command}\n`);
  const load = os.loadavg()[0].toFixed(2);
  const t0 = Date.now();
  const run = spawnSync(process.execPath, [bench.script, ...bench.args], { env: { ...process.env, ...bench.env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 15 * 60_000, maxBuffer: 64 * 2 ** 20, killSignal: 'SIGINT' });
  const seconds = ((Date.now() - t0) / 1000).toFixed(0);
  // Only the report: Nest's console logger (in-process benchmarks) also writes to stdout.
  const output = (run.stdout ?? '').split('\n').filter((line) => !line.includes('[Nest]')).join('\n').trim();
  const status = run.status === 0 ? 'ok' : `exit ${run.status ?? run.signal}`;
  // A JSON report is fenced as such; what follows it (a summary line, the e2e tables of the
  // ingest-beside run) stays Markdown.
  const close = { '{': '\n}', '[': '\n]' }[output[0]];
  const end = close && output.includes(close) ? output.indexOf(close) + 2 : 0;
  const body = end ? `\`\`\`json\n${output.slice(0, end)}\n\`\`\`\n${output.slice(end).trim()}`.trim() : output;
  sections.push(`## ${bench.title}\n\nCommand: \`${command}\` (${status}, ${seconds} s, load average ${load} when it started)\n\n${body}\n`);
}

const doc = `# Benchmarks (one run)

Written by \`npm run bench\` (\`bench/all.mjs\`) on ${started.toISOString()}, commit ${sh('git', ['rev-parse', '--short', 'HEAD'])}.
What each benchmark does and how to read it: [benchmarks-method.md](benchmarks-method.md).
All traffic is on loopback; every figure below comes from this one run on this machine.

Machine: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB RAM,
Node ${process.version}, ${sh('psql', ['--version'])}, ${sh('redis-server', ['--version']).split(' ').slice(0, 3).join(' ')},
PostgreSQL and Redis on the same host with default settings (fsync on).

${sections.join('\n')}`;
writeFileSync(new URL('../docs/benchmarks.md', import.meta.url), doc);
process.stderr.write('bench: wrote docs/benchmarks.md\n');
