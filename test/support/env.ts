/** Where the test suite finds the shared services (override with TEST_DATABASE_URL / TEST_REDIS_URL). */
export const TEST_PG_BASE = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * Half the default pool (20) for the processes of a test's cluster (cluster.ts) and the apps the
 * tests run in-process (app.ts), the lanes in the same proportions: four files run at once against one PostgreSQL (100
 * connections here), a cluster is four processes or more, and at the default two clusters in a
 * burst opened more than it allows ("sorry, too many clients already": an API answered 503 and a
 * verify printed no report in one run). A test may set its own.
 */
export const TEST_POOL_ENV = { DATABASE_POOL_SIZE: '10', DATABASE_REALTIME_CONNECTIONS: '5', DATABASE_BULK_CONNECTIONS: '3' };

/** Set by global-setup for this run. */
export const TEMPLATE_DB = process.env.ONCELINE_TEST_TEMPLATE ?? 'onceline_tpl_missing';

export function databaseUrl(name: string, base = TEST_PG_BASE): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}
