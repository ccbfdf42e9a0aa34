import pg from 'pg';

const base = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Drops this run's template and any test database a crashed file left behind over an hour ago. */
export default async function globalTeardown() {
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    if (process.env.ONCELINE_TEST_TEMPLATE) await admin.query(`DROP DATABASE IF EXISTS ${process.env.ONCELINE_TEST_TEMPLATE} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
