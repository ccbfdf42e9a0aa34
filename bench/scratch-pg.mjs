// A migrated scratch database for the benchmarks that measure PostgreSQL itself
// (partition-drop.mjs, partition-period.mjs, and, migrated only up to the migrations they time,
// partition-migration.mjs and messaging-partition-migration.mjs), and their time bound.
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { APP_ROOT, freshDatabase } from './lib.mjs';

const { MIGRATIONS_DIR } = await import(join(APP_ROOT, 'dist/lib/platform/database/migrator.js'));
import { startPrivatePostgres } from './private-pg.mjs';

/** Ends the process with a message when the benchmark `name` runs past `seconds`. */
export function giveUpAfter(name, seconds) {
  const deadline = setTimeout(() => {
    process.stderr.write(`${name}: over ${seconds} s, giving up\n`);
    process.exit(1);
  }, seconds * 1000);
  deadline.unref();
}

/**
 * `<prefix>_<8 hex>`, migrated (lib.mjs freshDatabase), with a connected client. By default on a private PostgreSQL cluster
 * (bench/private-pg.mjs: initdb in a temp dir, a free port on 127.0.0.1, the shared server's speed
 * settings), so WAL figures are the benchmark's alone; BENCH_PRIVATE_PG=0 uses a scratch database
 * of BENCH_PG_BASE (127.0.0.1:5432) instead. `where` says which, for the report; close() drops it
 * and stops the private cluster. `before`: only the migrations whose names sort before it (a
 * database as it was, for a bench that then applies the next ones: applyMigration).
 */
export async function scratchDatabase(prefix, { before } = {}) {
  const onShared = process.env.BENCH_PRIVATE_PG === '0';
  const sharedBase = process.env.BENCH_PG_BASE ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(new URL(sharedBase).hostname)) throw new Error('BENCH_PG_BASE must point at this machine (loopback only)');
  const privatePg = onShared ? undefined : await startPrivatePostgres();
  const base = privatePg?.baseUrl ?? sharedBase;
  let db;
  let client;
  try {
    const dir = before === undefined ? undefined : migrationsBefore(before);
    try {
      db = await freshDatabase(prefix, base, dir);
    } finally {
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  } catch (err) {
    await db?.drop().catch(() => undefined);
    privatePg?.stop();
    throw err;
  }
  const where = privatePg ? 'private PostgreSQL cluster (settings of the shared one)' : base.replace(/\/\/[^@]*@/, '//');
  return {
    client,
    where,
    async close() {
      await client.end().catch(() => undefined);
      await db.drop().catch(() => undefined);
      privatePg?.stop();
    },
  };
}

/** A temp folder of the app's migrations that sort before `first` (the caller removes it). */
function migrationsBefore(first) {
  const dir = mkdtempSync(join(tmpdir(), 'onceline-bench-migrations-'));
  for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql') && f < first)) copyFileSync(join(MIGRATIONS_DIR, file), join(dir, file));
  return dir;
}

/** The app's migration files whose names start with one of `prefixes`, in order. */
export function migrationFiles(prefixes) {
  return readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql') && prefixes.some((p) => f.startsWith(p))).sort();
}

/**
 * Applies migration `file` on `client` in its own transaction, recorded as applied, as `onceline
 * migrate` does; resolves its wall time in ms (the time its locks are held).
 */
export async function applyMigration(client, file) {
  const sql = readFileSync(join(MIGRATIONS_DIR, file), 'utf8');
  const started = performance.now();
  await client.query('BEGIN');
  await client.query(sql);
  await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
  await client.query('COMMIT');
  return performance.now() - started;
}
