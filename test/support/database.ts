import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { databaseUrl, TEMPLATE_DB, TEST_PG_BASE } from './env.js';

export interface TestDatabase {
  name: string;
  url: string;
  /** A plain pg pool for assertions (counting rows) independent of the app's pool. */
  pool: pg.Pool;
  count(sql: string, params?: unknown[]): Promise<number>;
  drop(): Promise<void>;
}

/** A fresh database for one test file, cloned from the migrated template in milliseconds. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `onceline_t_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_PG_BASE });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DB}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  // pool.end() resolves before its clients' sockets have closed, so drop()'s DROP ... WITH
  // (FORCE) can terminate one mid-close: pg-pool then emits that 57P01 on the pool, which without
  // a listener fails whichever test is running (seen once in ingest-batching). Nothing to handle.
  pool.on('error', () => undefined);
  return {
    name,
    url,
    pool,
    async count(sql, params = []) {
      const { rows } = await pool.query(sql, params);
      return Number(Object.values(rows[0])[0]);
    },
    async drop() {
      await pool.end();
      const c = new pg.Client({ connectionString: TEST_PG_BASE });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await c.end();
    },
  };
}
