// What PgBouncer in transaction mode does to the session features Onceline uses
// (`npm run bench:pgbouncer`; needs `pgbouncer` installed, Debian: apt-get install pgbouncer,
// else it says so and exits 0). Loopback only, bounded in time. Figures for docs/scaling.md.
//
// A private pgbouncer (pool_mode = transaction, one server connection per pool, so every client
// shares it as clients of a busy pool do) in front of a scratch database on BENCH_PG_BASE
// (default 127.0.0.1:5432). Each row counts what a client saw:
//  1. LISTEN onceline_outbox through it (as OutboxRelay.listen does) while NOTIFYs are sent, vs
//     the same LISTEN on a direct connection; then pg_notify (RelayWakeup) sent through it.
//  2. The migrator's session advisory lock: held by one client, then tried by a second.
//  3. Named prepared statements (pg's `name:`) from two clients, vs the unnamed ones pg and
//     TypeORM send for every parameterised query (what Onceline uses), and SET LOCAL.
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { OUTBOX_CHANNEL } from '../dist/lib/platform/outbox/relay-wakeup.js';
import { freePort } from './lib.mjs';

const PG_BASE = process.env.BENCH_PG_BASE ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const NOTIFIES = Number(process.env.BENCH_NOTIFIES ?? 50);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 200);
const bin = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find(existsSync) ?? spawnSync('sh', ['-c', 'command -v pgbouncer'], { encoding: 'utf8' }).stdout.trim();
if (!bin) {
  process.stdout.write('pgbouncer-modes: skipped, pgbouncer is not installed (Debian: apt-get install pgbouncer)\n');
  process.exit(0);
}
const pgUrl = new URL(PG_BASE);
if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(pgUrl.hostname)) throw new Error('BENCH_PG_BASE must point at this machine (loopback only)');
setTimeout(() => {
  process.stderr.write('pgbouncer-modes: over 120 s, giving up\n');
  process.exit(1);
}, 120_000).unref();

const dbName = `onceline_bench_pgb_${process.pid}`;
const admin = async (sql) => {
  const c = new pg.Client({ connectionString: PG_BASE });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
};
const dir = mkdtempSync(join(tmpdir(), 'onceline-pgbouncer-'));
const port = await freePort();
writeFileSync(join(dir, 'users.txt'), `"${pgUrl.username || 'postgres'}" ""\n`);
writeFileSync(
  join(dir, 'pgbouncer.ini'),
  `[databases]
${dbName} = host=${pgUrl.hostname} port=${pgUrl.port || 5432} dbname=${dbName}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${join(dir, 'users.txt')}
pool_mode = transaction
default_pool_size = 1
max_client_conn = 20
ignore_startup_parameters = extra_float_digits,options
logfile = ${join(dir, 'pgbouncer.log')}
`,
);
// pgbouncer refuses to run as root.
const root = process.getuid?.() === 0;
if (root) for (const f of ['', 'users.txt', 'pgbouncer.ini']) chownSync(join(dir, f), ...['-u', '-g'].map((o) => Number(spawnSync('id', [o, 'postgres'], { encoding: 'utf8' }).stdout)));
const child = root ? spawn('runuser', ['-u', 'postgres', '--', bin, join(dir, 'pgbouncer.ini')], { stdio: 'ignore' }) : spawn(bin, [join(dir, 'pgbouncer.ini')], { stdio: 'ignore' });

const bouncerUrl = `postgres://${pgUrl.username || 'postgres'}@127.0.0.1:${port}/${dbName}`;
const directUrl = Object.assign(new URL(PG_BASE), { pathname: `/${dbName}` }).toString();
const clients = [];
async function connect(url) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const c = new pg.Client({ connectionString: url });
    c.on('error', () => undefined);
    try {
      await c.connect();
      clients.push(c);
      return c;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
const settle = () => new Promise((r) => setTimeout(r, 500)); // notifications are asynchronous: give them time to arrive

try {
  await admin(`CREATE DATABASE ${dbName}`);
  const lines = [`pgbouncer-modes: ${readFileSync(join(dir, 'pgbouncer.ini'), 'utf8').match(/pool_mode = \w+/)[0]}, default_pool_size = 1, ${spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0]}`];

  // 1. LISTEN through the pooler vs direct; another pooled client keeps using the server connection.
  const direct = await connect(directUrl);
  const pooled = await connect(bouncerUrl);
  const other = await connect(bouncerUrl);
  const seen = { direct: 0, pooled: 0, other: 0 };
  for (const [name, c] of [['direct', direct], ['pooled', pooled], ['other', other]]) c.on('notification', () => seen[name]++);
  await direct.query(`LISTEN ${OUTBOX_CHANNEL}`);
  await pooled.query(`LISTEN ${OUTBOX_CHANNEL}`);
  const notifier = await connect(directUrl);
  for (let i = 0; i < NOTIFIES; i++) {
    await notifier.query(`SELECT pg_notify($1, '')`, [OUTBOX_CHANNEL]);
    await other.query('SELECT 1'); // the pooled server connection serves someone else meanwhile
  }
  await settle();
  await pooled.query('SELECT 1');
  await settle();
  lines.push(`  LISTEN ${OUTBOX_CHANNEL}, ${NOTIFIES} NOTIFYs: direct listener got ${seen.direct}, listener through pgbouncer got ${seen.pooled}, a pooled client that never listened got ${seen.other}`);
  // The sending side (RelayWakeup's after-commit pg_notify) through the pooler.
  const sentBefore = seen.direct;
  for (let i = 0; i < NOTIFIES; i++) await other.query(`SELECT pg_notify($1, '')`, [OUTBOX_CHANNEL]);
  await settle();
  lines.push(`  pg_notify sent through pgbouncer ${NOTIFIES} times: the direct listener got ${seen.direct - sentBefore}`);

  // 2. Session advisory lock (the migrator's pg_advisory_lock) held by one pooled client, tried by another.
  const a = await connect(bouncerUrl);
  const b = await connect(bouncerUrl);
  const KEY = 4242;
  await a.query('SELECT pg_advisory_lock($1)', [KEY]);
  const bGot = (await b.query('SELECT pg_try_advisory_lock($1) AS got', [KEY])).rows[0].got;
  const checker = await connect(directUrl);
  const holders = (await checker.query(`SELECT count(DISTINCT pid)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND granted`, [KEY])).rows[0].n;
  lines.push(`  pg_advisory_lock held by pooled client A: pooled client B's pg_try_advisory_lock returned ${bGot} (server sessions holding it: ${holders})`);
  await a.query('SELECT pg_advisory_unlock_all()');

  // 3. Named vs unnamed prepared statements, two pooled clients taking turns.
  const errors = { named: 0, unnamed: 0, setLocal: 0 };
  const c1 = await connect(bouncerUrl);
  const c2 = await connect(bouncerUrl);
  const first = {};
  for (let i = 0; i < QUERIES; i++) {
    const c = i % 2 === 0 ? c1 : c2;
    await c.query({ name: 'onceline_probe', text: 'SELECT $1::int AS n', values: [i] }).catch((err) => {
      errors.named++;
      first.named ??= err.message;
    });
    await c.query('SELECT $1::int AS n', [i]).catch(() => errors.unnamed++);
    // SET LOCAL lasts one transaction: it travels with the transaction the pooler pins.
    await c
      .query('BEGIN')
      .then(() => c.query(`SET LOCAL lock_timeout = '2s'`))
      .then(() => c.query('SHOW lock_timeout'))
      .then((r) => r.rows[0].lock_timeout === '2s' || errors.setLocal++)
      .catch(() => errors.setLocal++)
      .finally(() => c.query('COMMIT').catch(() => undefined));
  }
  lines.push(`  ${QUERIES} queries from two pooled clients in turn: named prepared statement failed ${errors.named} times${first.named ? ` ("${first.named}")` : ''}, unnamed parameterised query ${errors.unnamed}, SET LOCAL inside a transaction ${errors.setLocal}`);
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  for (const c of clients) await c.end().catch(() => undefined);
  child.kill('SIGTERM');
  await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r()));
  await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
