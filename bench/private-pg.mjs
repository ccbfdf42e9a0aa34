// A PostgreSQL cluster of the benchmark's own (initdb into a temp dir, a free port on 127.0.0.1)
// with pg_stat_statements loaded, so a benchmark can count the statements the app sends without
// seeing anyone else's. Settings that change speed are copied from the shared server, so figures
// stay comparable with the benchmarks that use it. Each app role connects as its own database
// user: pg_stat_statements keys its counters by user, which is how statements are attributed.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { findPostgresBin, startPostgresCluster, stopPostgresCluster } from '../scripts/services.mjs';
import { freePort, PG_BASE } from './lib.mjs';

// What decides how fast a commit is, read from the shared server with SHOW and set here.
const COPIED_SETTINGS = [
  'fsync', 'synchronous_commit', 'full_page_writes', 'wal_level', 'wal_buffers', 'wal_sync_method', 'commit_delay',
  'shared_buffers', 'work_mem', 'max_connections', 'max_wal_size', 'min_wal_size', 'checkpoint_timeout', 'autovacuum', 'jit',
];

async function withClient(connectionString, fn) {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * BENCH_PG_EXPLAIN=FILE: auto_explain logs every statement's plan with actual times (slow: for a
 * short, low-rate run), and the cluster's log is copied to FILE when the cluster is removed.
 */
const EXPLAIN_LOG = process.env.BENCH_PG_EXPLAIN;

/**
 * Starts the cluster; resolves { baseUrl, port, bin, settings, urlFor(db, user), stop() }. stop()
 * is idempotent and synchronous enough for an exit handler: immediate shutdown, then the data
 * directory is removed.
 */
export async function startPrivatePostgres({ settingsFrom = PG_BASE } = {}) {
  const bin = findPostgresBin();
  if (!bin) throw new Error('PostgreSQL binaries not found (initdb, pg_ctl, pgbench)');
  const settings = await withClient(settingsFrom, async (c) => {
    const out = {};
    for (const name of COPIED_SETTINGS) out[name] = (await c.query(`SHOW ${name}`)).rows[0][name];
    return out;
  });
  const port = await freePort();
  const parent = mkdtempSync(join(tmpdir(), 'onceline-bench-pg-'));
  const dataDir = join(parent, 'data');
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    stopPostgresCluster(dataDir, 'immediate');
    if (EXPLAIN_LOG) copyFileSync(join(parent, 'pg.log'), EXPLAIN_LOG);
    rmSync(parent, { recursive: true, force: true });
  };
  try {
    await startPostgresCluster(dataDir, port, join(parent, 'pg.log'));
    const baseUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
    // ALTER SYSTEM writes postgresql.auto.conf; the restart loads pg_stat_statements and the rest.
    await withClient(baseUrl, async (c) => {
      for (const [name, value] of Object.entries(settings)) await c.query(`ALTER SYSTEM SET ${name} = '${value}'`);
      await c.query(`ALTER SYSTEM SET shared_preload_libraries = ${EXPLAIN_LOG ? `'pg_stat_statements', 'auto_explain'` : `'pg_stat_statements'`}`);
    });
    stopPostgresCluster(dataDir, 'fast');
    await startPostgresCluster(dataDir, port, join(parent, 'pg.log'));
    // The module's settings exist only once it is loaded; both take a reload.
    await withClient(baseUrl, async (c) => {
      await c.query(`ALTER SYSTEM SET pg_stat_statements.track = 'all'`);
      // BEGIN, COMMIT, SAVEPOINT, LISTEN... are statements too, and round trips.
      await c.query(`ALTER SYSTEM SET pg_stat_statements.track_utility = 'on'`);
      // Every statement's plan with its actual rows and times, in the cluster's log.
      if (EXPLAIN_LOG) {
        for (const [name, value] of [['log_min_duration', process.env.BENCH_PG_EXPLAIN_MIN_MS ?? '0'], ['log_analyze', 'on'], ['log_timing', 'on'], ['log_nested_statements', 'on']]) {
          await c.query(`ALTER SYSTEM SET auto_explain.${name} = '${value}'`);
        }
      }
      await c.query('SELECT pg_reload_conf()');
    });
    const urlFor = (db, user = 'postgres') => `postgres://${user}@127.0.0.1:${port}/${db}`;
    return { baseUrl, port, bin, settings, urlFor, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/**
 * In a migrated database: the pg_stat_statements view, and one login role per name with what the
 * app needs (the app does not migrate at boot; `onceline migrate` ran as the superuser).
 */
export async function prepareStatementCounting(superUrl, users) {
  await withClient(superUrl, async (c) => {
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    for (const user of users) {
      await c.query(`CREATE ROLE ${user} LOGIN`);
      await c.query(`GRANT USAGE, CREATE ON SCHEMA public TO ${user}`);
      await c.query(`GRANT ALL ON ALL TABLES IN SCHEMA public TO ${user}`);
      await c.query(`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${user}`);
    }
  });
}

export const resetStatements = (superUrl) => withClient(superUrl, (c) => c.query('SELECT pg_stat_statements_reset()'));

// Transaction control counts as statements (each is a round trip); reported apart as well.
// (A PostgreSQL regular expression: \y is its word boundary.)
const TX_CONTROL = String.raw`^\s*(BEGIN|START\s+TRANSACTION|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE)\y`;

/** Statements executed in this database per user since the last reset: { user: { calls, tx } }. */
export async function statementsByUser(superUrl) {
  return withClient(superUrl, async (c) => {
    const { rows } = await c.query(
      `SELECT r.rolname AS user, sum(s.calls)::bigint AS calls,
              coalesce(sum(s.calls) FILTER (WHERE s.query ~* $1), 0)::bigint AS tx
         FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
        WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        GROUP BY r.rolname`,
      [TX_CONTROL],
    );
    return Object.fromEntries(rows.map((r) => [r.user, { calls: Number(r.calls), tx: Number(r.tx) }]));
  });
}

/** Every statement of one user since the last reset: Map queryid → { calls, query (first 110 characters) }. */
export async function statementList(superUrl, user) {
  return withClient(superUrl, async (c) => new Map((await c.query(
    `SELECT s.queryid::text AS id, s.calls::bigint AS calls, s.total_exec_time::float8 AS ms, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 110) AS query
       FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
      WHERE r.rolname = $1 AND s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [user])).rows.map((r) => [r.id, { calls: Number(r.calls), ms: r.ms, query: r.query }])));
}

/** `later` minus `earlier` (two statementList snapshots), most called first, statements with calls left. */
export function statementsBetween(later, earlier = new Map()) {
  return [...later].map(([id, s]) => ({ ...s, calls: s.calls - (earlier.get(id)?.calls ?? 0), ms: s.ms - (earlier.get(id)?.ms ?? 0) }))
    .filter((s) => s.calls > 0).sort((a, b) => b.calls - a.calls);
}
