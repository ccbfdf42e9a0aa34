import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate, MIGRATIONS_DIR } from '../../src/platform/database/migrator.js';
import { databaseUrl, TEST_PG_BASE } from './env.js';

/** A database of its own, in the shape it had before migration `first`; a test fills it, then migrates the rest. */
export interface DatabaseBefore {
  url: string;
  pool: pg.Pool;
  /** Applies every migration (those from `first` on, now). */
  migrateRest(): Promise<void>;
  /** A count query's only value. */
  count(sql: string, params?: unknown[]): Promise<number>;
  drop(): Promise<void>;
}

/**
 * `<prefix>_<8 hex>` migrated with the migrations before `first` only (copied into a directory of
 * their own), for the tests of a migration on a database that already holds data.
 */
export async function databaseBefore(prefix: string, first: string): Promise<DatabaseBefore> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const url = databaseUrl(name);
  const before = mkdtempSync(join(tmpdir(), 'onceline-mig-'));
  try {
    for (const file of readdirSync(MIGRATIONS_DIR).filter((f) => f.endsWith('.sql') && f < first)) copyFileSync(join(MIGRATIONS_DIR, file), join(before, file));
    await migrate(url, before);
  } finally {
    rmSync(before, { recursive: true, force: true });
  }
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  return {
    url,
    pool,
    migrateRest: async () => void (await migrate(url)),
    count: async (sql, params = []) => Number(Object.values((await pool.query(sql, params)).rows[0])[0]),
    drop: async () => {
      await pool.end();
      const admin = new pg.Client({ connectionString: TEST_PG_BASE });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}
