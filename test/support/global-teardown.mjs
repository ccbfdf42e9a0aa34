import { rmSync } from 'node:fs';
import pg from 'pg';

const base = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Drops this run's template database and removes its private PostgreSQL seed (test/support/services.ts). */
export default async function globalTeardown() {
  if (process.env.ONCELINE_TEST_PG_SEED) rmSync(process.env.ONCELINE_TEST_PG_SEED, { recursive: true, force: true });
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    if (process.env.ONCELINE_TEST_TEMPLATE) await admin.query(`DROP DATABASE IF EXISTS ${process.env.ONCELINE_TEST_TEMPLATE} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
