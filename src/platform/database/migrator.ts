import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { PACKAGE_ROOT } from '../package-root.js';

/** migrations/ at the package root, whether running from src/ (tests), dist/lib/ or the bundle. */
export const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'migrations');

// Any constant works; it only has to be the same for every process migrating this database.
const MIGRATION_LOCK_KEY = 7_271_001;

export interface MigrationResult {
  applied: string[];
  alreadyApplied: string[];
}

/**
 * Applies migrations/*.sql in name order, each in its own transaction, recording each name in
 * schema_migrations. Serialized by an advisory lock, so concurrent starts are safe; idempotent.
 */
export async function migrate(databaseUrl: string, dir = MIGRATIONS_DIR): Promise<MigrationResult> {
  await ensureDatabase(databaseUrl);
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    const result: MigrationResult = { applied: [], alreadyApplied: [] };
    for (const file of files) {
      if (done.has(file)) {
        result.alreadyApplied.push(file);
        continue;
      }
      const sql = await readFile(join(dir, file), 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${file} failed: ${(err as Error).message}`);
      }
      result.applied.push(file);
    }
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

/** Creates the database named in the URL when it does not exist yet (connecting to `postgres`). */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) return false;
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return false;
    await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === '42P04') return false; // created by a concurrent start
    throw err;
  } finally {
    await client.end();
  }
}
