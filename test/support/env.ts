/** Where the test suite finds the shared services (override with TEST_DATABASE_URL / TEST_REDIS_URL). */
export const TEST_PG_BASE = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** Set by global-setup for this run. */
export const TEMPLATE_DB = process.env.ONCELINE_TEST_TEMPLATE ?? 'onceline_tpl_missing';

export function databaseUrl(name: string, base = TEST_PG_BASE): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}
