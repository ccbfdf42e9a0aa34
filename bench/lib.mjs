// Shared helpers for the benchmarks: a fresh migrated database, the app as child processes, a
// keep-alive HTTP client, percentiles. Loopback only; every loop is bounded in time.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import pg from 'pg';
import { migrate } from '../dist/database/migrator.js';

export const PG_BASE = process.env.BENCH_PG_BASE ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

export async function freshDatabase(prefix) {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const url = new URL(PG_BASE);
  url.pathname = `/${name}`;
  await migrate(url.toString());
  return {
    name,
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: PG_BASE });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
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

/** Starts `node dist/main.js <role>` with env; resolves when /health/ready answers (api roles) or at once. */
export async function startRole(role, env, { readyUrl } = {}) {
  // BENCH_NODE_ARGS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the roles.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, 'dist/main.js', role], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  let stderrBytes = 0;
  child.stderr.on('data', (d) => {
    stderrBytes += d.length;
    stderr = (stderr + d).slice(-4000);
  });
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
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
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

export function machine() {
  return `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'unknown'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

export const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
