// Shared helpers for the benchmarks: a fresh migrated database, the app as child processes, a
// keep-alive HTTP client, percentiles, peak RSS, an account with a number, Telnyx webhook
// signing. Loopback only; every loop is bounded in time.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { findPostgresBin } from '../scripts/services.mjs';

/** The package root: children run `dist/...` from here, whatever the caller's cwd. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/**
 * The checkout whose build (dist/) the roles, the CLI and the migrations come from: this one, or
 * BENCH_APP_ROOT (another commit's checkout, built: a bench's "before" run with today's bench).
 */
export const APP_ROOT = process.env.BENCH_APP_ROOT ?? ROOT;
const { migrate } = await import(join(APP_ROOT, 'dist/lib/platform/database/migrator.js'));
// BENCH_DATABASE_URL: the older name bench/relay.mjs read, still accepted.
export const PG_BASE = process.env.BENCH_PG_BASE ?? process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Creates (migrate() creates the database) and migrates `<prefix>_<8 hex>` (with the migrations of
 * `migrationsDir`, by default the app's); drop() removes it.
 */
export async function freshDatabase(prefix, base = PG_BASE, migrationsDir = undefined) {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const url = new URL(base);
  url.pathname = `/${name}`;
  const drop = async () => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  };
  try {
    await migrate(url.toString(), migrationsDir);
  } catch (err) {
    await drop().catch(() => undefined);
    throw err;
  }
  return { name, url: url.toString(), drop };
}

/**
 * `pgbench -n -f script` against `dbUrl` (loopback); `defines` become `-D name=value`. Resolves
 * { tps, latencyMs, command }, and with `latencies` also { p50Ms, p99Ms }: tps counts runs of the
 * whole script (pgbench's "transactions").
 */
export function pgbench({ dbUrl, script, clients, seconds, defines = {}, mode = 'simple', latencies = false, bin = findPostgresBin() }) {
  if (!bin) throw new Error('pgbench not found (PostgreSQL binaries)');
  const url = new URL(dbUrl);
  // latencies: every transaction's latency logged (-l), for percentiles as the HTTP loads report them.
  // Trustworthy for transactions of a millisecond or more (a 2-insert commit at 32 clients: the
  // log's mean 5.5 ms against pgbench's 6.1 ms average, 15 zeros in 25k); pgbench 15 reuses a
  // cached clock, so most sub-millisecond transactions (SELECT 1) are logged as 0 µs.
  const logDir = latencies ? mkdtempSync(join(tmpdir(), 'onceline-pgbench-log-')) : undefined;
  const args = [
    '-n', '-M', mode, '-f', script, '-c', String(clients), '-j', '2', '-T', String(seconds),
    ...(logDir ? ['-l', `--log-prefix=${join(logDir, 'tx')}`] : []),
    ...Object.entries(defines).flatMap(([k, v]) => ['-D', `${k}=${v}`]),
    '-h', url.hostname, '-p', url.port || '5432', '-U', decodeURIComponent(url.username || 'postgres'), url.pathname.slice(1),
  ];
  try {
    const run = spawnSync(join(bin, 'pgbench'), args, { encoding: 'utf8', cwd: logDir });
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(run.stdout)?.[1];
    if (!tps) throw new Error(`pgbench failed: ${run.stderr || run.stdout}`);
    const latency = /latency average = ([\d.]+) ms/.exec(run.stdout)?.[1];
    const result = { tps: Number(tps), latencyMs: Number(latency), command: `pgbench ${args.join(' ')}` };
    if (!logDir) return result;
    // Each line: client_id transaction_no latency_us script_no epoch_s epoch_us.
    const ms = readdirSync(logDir).flatMap((file) =>
      readFileSync(join(logDir, file), 'utf8').split('\n').filter(Boolean).map((line) => Number(line.split(' ')[2]) / 1000),
    );
    return { ...result, p50Ms: percentile(ms, 50), p99Ms: percentile(ms, 99) };
  } finally {
    // The per-transaction logs are gone whether pgbench succeeded or not.
    if (logDir) rmSync(logDir, { recursive: true, force: true });
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts `node dist/main.js <role>` with env (added to this process's environment, or alone with
 * `inheritEnv: false`). Resolves when `readyUrl` answers OK (api roles), when stderr matches
 * `readyLine` (a RegExp, e.g. /onceline relay started/), or at once.
 */
/**
 * Log lines no benchmark run may have (issue #27's "0 in the logs of all these runs"): a pool
 * connect that timed out (node-postgres: "timeout exceeded when trying to connect") and a
 * deadlock PostgreSQL broke ("deadlock detected"), whatever the log level lets through (warn and up).
 */
function countTroubles(line, troubles) {
  if (/timeout exceeded when trying to connect/i.test(line)) troubles.connectTimeouts++;
  if (/deadlock detected/i.test(line)) troubles.deadlocks++;
}

/**
 * The troubles of several roles (startRole's troubles()), added up, and the deadlocks PostgreSQL
 * counted in the bench's database (pg_stat_database, which sees a deadlock a retry hid from the
 * logs), as a table cell: connect timeouts / deadlocks logged / deadlocks PostgreSQL broke.
 */
export async function troublesCell(roles, pool) {
  const logged = roles.map((r) => r.troubles());
  const sum = { connectTimeouts: logged.reduce((n, t) => n + t.connectTimeouts, 0), deadlocks: logged.reduce((n, t) => n + t.deadlocks, 0) };
  const { rows } = await pool.query('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()');
  return `${sum.connectTimeouts} / ${sum.deadlocks} / ${rows[0]?.deadlocks ?? 'n/a'}`;
}

export async function startRole(role, env, { readyUrl, readyLine, inheritEnv = true, nodeArgs: extraNodeArgs = [] } = {}) {
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the roles.
  const nodeArgs = [...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean), ...extraNodeArgs];
  const child = spawn(process.execPath, [...nodeArgs, 'dist/main.js', role], {
    cwd: APP_ROOT,
    env: inheritEnv ? { ...process.env, ...env } : env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let stderrBytes = 0;
  let onStderr = () => undefined;
  const troubles = { connectTimeouts: 0, deadlocks: 0 };
  let partialLine = '';
  child.stderr.on('data', (d) => {
    stderrBytes += d.length;
    const lines = (partialLine + d).split('\n');
    partialLine = lines.pop() ?? '';
    for (const line of lines) countTroubles(line, troubles);
    const seen = stderr + d;
    stderr = seen.slice(-4000);
    onStderr(seen);
  });
  if (readyLine) {
    await new Promise((resolve, reject) => {
      const done = (err) => {
        clearTimeout(timer);
        child.off('exit', onExit);
        onStderr = () => undefined;
        if (err) reject(err);
        else resolve();
      };
      const onExit = (code) => done(new Error(`${role} exited (${code}) before starting:\n${stderr}`));
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        done(new Error(`${role} did not log ${readyLine} within 60 s:\n${stderr}`));
      }, 60_000);
      onStderr = (seen) => readyLine.test(seen) && done();
      child.once('exit', onExit);
    });
  }
  if (readyUrl) {
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      const ok = await fetch(readyUrl).then((r) => r.ok, () => false);
      if (ok) break;
      if (child.exitCode !== null) throw new Error(`${role} exited: ${stderr}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    child,
    logged: () => ({ bytes: stderrBytes, tail: stderr }),
    /** Log lines of the kinds no run may have (countTroubles), counted over the whole run. */
    troubles: () => ({ ...troubles }),
    stop: () => new Promise((resolve) => {
      // Already exited (a SIGTERM'd child has exitCode null but signalCode set): a second stop()
      // must not wait for an 'exit' that has come and gone.
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', resolve);
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
    }),
  };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One HTTP request over a keep-alive agent; resolves { status, headers, body }. */
export function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    if (body) req.end(body);
    else req.end();
  });
}

/** Runs `connections` loops calling `once()` until `seconds` pass; returns latencies (ms) and errors. */
export async function closedLoop({ connections, seconds, once }) {
  const latencies = [];
  let errors = 0;
  const deadline = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < deadline) {
        const t0 = performance.now();
        try {
          const ok = await once();
          if (ok === false) errors++;
          else latencies.push(performance.now() - t0);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { latencies, errors, seconds };
}

export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Peak resident set size (VmHWM) of a live process so far, in bytes; NaN when unreadable. */
export function peakRssBytes(pid) {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * `node dist/cli.js accounts:create --name bench --json` against the app's env, then the operator's
 * `numbers:assign` gives it the number. Returns { account, auth } (auth: the JSON request headers).
 */
export async function createAccountWithNumber(base, env, { phoneNumber = '+15550100000', carrier = 'telnyx' } = {}) {
  const out = execFileSync(process.execPath, ['dist/cli.js', 'accounts:create', '--name', 'bench', '--json'], { cwd: APP_ROOT, env: { ...process.env, ...env } });
  const account = JSON.parse(out.toString());
  const auth = { authorization: `Bearer ${account.api_key}`, 'content-type': 'application/json' };
  assignNumber(env, account.account.id, phoneNumber, carrier);
  return { account, auth };
}

/** Gives account `accountId` one more number (the CLI's numbers:assign). */
export function assignNumber(env, accountId, phoneNumber, carrier = 'telnyx') {
  execFileSync(process.execPath, ['dist/cli.js', 'numbers:assign', '--account', accountId, '--number', phoneNumber, '--carrier', carrier, '--json'], {
    cwd: APP_ROOT,
    env: { ...process.env, ...env },
  });
}

/** An Ed25519 key pair for signing Telnyx webhooks; publicKeyBase64 is the raw 32-byte key as base64 (TELNYX_PUBLIC_KEY). */
export function telnyxKeyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKeyBase64: Buffer.from(publicKey.export({ format: 'jwk' }).x, 'base64url').toString('base64') };
}

/** Request headers of a Telnyx webhook: `${timestamp}|${body}` signed with Ed25519. */
export function telnyxHeaders(privateKey, body, timestampSeconds = Math.floor(Date.now() / 1000)) {
  const timestamp = String(timestampSeconds);
  return {
    'content-type': 'application/json',
    'telnyx-timestamp': timestamp,
    'telnyx-signature-ed25519': sign(null, Buffer.from(`${timestamp}|${body}`), privateKey).toString('base64'),
  };
}

/** Clock ticks per second, the unit of /proc's CPU times (USER_HZ). */
export const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * A live process's CPU seconds so far (user + system) and its start time (clock ticks after
 * boot: with the pid, what tells a reused pid from the process before it), from /proc/<pid>/stat.
 */
export function procStat(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { cpuSeconds: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS, startTicks: fields[19] };
}

/** CPU seconds (user + system) a live process has used so far (Linux). */
export function cpuSecondsOf(pid) {
  return procStat(pid).cpuSeconds;
}

/** The whole machine's CPU time so far, in core-seconds, from /proc/stat: busy (every state but idle and iowait) and idle. */
export function machineCpuSeconds() {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
  const idle = fields[3] + fields[4];
  return { busy: (fields.reduce((a, b) => a + b, 0) - idle) / CLOCK_TICKS, idle: idle / CLOCK_TICKS };
}

export function machine() {
  return `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

export const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
