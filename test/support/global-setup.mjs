// Builds the migrated template database every test file clones its own database from.
// Plain ESM importing the built migrator: jest loads globalSetup outside its ESM transform,
// and scripts/test.mjs builds dist/ before jest starts. The template's name is unique to this
// run (passed to the test workers through the environment), so concurrent runs never collide.
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrate } from '../../dist/lib/platform/database/migrator.js';

const base = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export default async function globalSetup() {
  const template = `onceline_tpl_${randomBytes(4).toString('hex')}`;
  process.env.ONCELINE_TEST_TEMPLATE = template;
  // Where the first private PostgreSQL of the run keeps its initdb for the others to copy (test/support/services.ts).
  process.env.ONCELINE_TEST_PG_SEED = join(tmpdir(), `onceline-pgseed-${template}`);
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${template}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${template}`;
  await migrate(url.toString());
}
